"""RecordResults: the grade record of a graded notebook, and its diagnostics in the gradebook.

The rules are the class's docstring in ``preprocessors/results.py``: a record of every test
cell (points, score, message, diagnosis) with the grader's notes, flags and the student's
own errors, bounded; each failed test's message as its answer cell's auto-comment; a flagged
question needs a manual grade and says why, first. On the tiny course of :mod:`.course`.
"""

from __future__ import annotations

import warnings

import pytest
from nbformat.v4 import new_code_cell, new_output
from nbgrader.api import Gradebook
from traitlets.config import Config

from autograd_course.grading import record
from autograd_course.grading.preprocessors import RecordResults
from autograd_course.grading.preprocessors.cells import META, notes, start_notes
from autograd_course.grading.preprocessors.results import MANUAL_LOOK

from .course import ASSIGNMENT, NOTEBOOK, STUDENT, gradebook, index_of, release, resources

WRONG = new_output("error", ename="CheckError", evalue="x.grad is \x1b[31mtwice\x1b[0m right",
                   traceback=["CheckError: x.grad is twice right"])


@pytest.fixture
def db_url(tmp_path, blank_gradebook) -> str:
    """The gradebook as nbgrader's SaveAutoGrades leaves it: every test cell scored."""
    url = gradebook(tmp_path, blank_gradebook)
    with warnings.catch_warnings(), Gradebook(url) as gb:
        warnings.simplefilter("ignore")
        for grade in gb.find_submission_notebook(NOTEBOOK, ASSIGNMENT, STUDENT).grades:
            grade.auto_score, grade.needs_manual_grade = 0, False
        gb.db.commit()
    return url


def graded(q1_outputs=(WRONG,), q2_outputs=()):
    """The student version as the judge leaves it: each test cell's outputs."""
    nb = release()
    nb.cells[index_of(nb, "q1_answer_test")].outputs = list(q1_outputs)
    nb.cells[index_of(nb, "q2_more_test")].outputs = list(q2_outputs)
    return nb


def recorded(root, db_url, nb, state=None, said=()):
    """``nb`` after RecordResults with the grading process's ``state`` and notes; the record."""
    config = Config()
    config.CourseDirectory.root = str(root)
    found = resources(db_url=db_url)
    found[META] = {"sandboxed": True, **(state or {})}
    start_notes(found)
    notes(found).extend(said)
    nb, _ = RecordResults(config=config).preprocess(nb, found)
    (kept,), skipped = record.store(root).read(ASSIGNMENT, STUDENT)
    assert skipped == [] and notes(resources()) == []  # the notes went into the record
    return nb, kept


def comments_and_manual(db_url):
    """The answer cells' auto-comments, and the test cells that need a manual grade."""
    with warnings.catch_warnings(), Gradebook(db_url) as gb:
        warnings.simplefilter("ignore")
        found = gb.find_submission_notebook(NOTEBOOK, ASSIGNMENT, STUDENT)
        return ({c.name: c.auto_comment for c in found.comments},
                sorted(g.name for g in found.grades if g.needs_manual_grade))


def test_every_test_cell_is_recorded_with_its_score_message_and_diagnosis(tmp_path, db_url):
    _, kept = recorded(tmp_path, db_url, graded(), state={"seconds": 1.5})
    assert (kept.student, kept.assignment, kept.notebook) == (STUDENT, ASSIGNMENT, NOTEBOOK)
    assert kept.questions == [
        dict(question="q1_answer_test", points=2.0, score=0, passed=False,
             message="CheckError: x.grad is twice right", diagnosis="error"),
        dict(question="q2_more_test", points=1.0, score=1.0, passed=True, message="",
             diagnosis=""),
    ]
    assert kept.sandboxed and kept.seconds == 1.5 and kept.failure is None


def test_the_judges_diagnosis_is_recorded(tmp_path, db_url):
    _, kept = recorded(tmp_path, db_url, graded(), state={"diagnoses": {
        "q1_answer_test": "factor"}})
    assert [q["diagnosis"] for q in kept.questions] == ["factor", ""]


def test_a_failed_tests_message_is_its_answer_cells_auto_comment(tmp_path, db_url):
    recorded(tmp_path, db_url, graded())
    comments, manual = comments_and_manual(db_url)
    assert comments == {"q1_answer": "CheckError: x.grad is twice right", "q2_more": None}
    assert manual == []


def test_a_flagged_question_needs_a_manual_grade_and_says_why_first(tmp_path, db_url):
    flagged = {"q1_answer_test": ["q1, line 2: calls sys._getframe"],
               "q2_more_test": ["q2, line 1: opens a file"]}
    judged = graded(q2_outputs=[new_output("stream", name="stdout", text="q2: passed\n")])
    nb, kept = recorded(tmp_path, db_url, judged, state={"flagged": flagged,
                                                         "flags": ["q1: calls sys._getframe"]})
    why = MANUAL_LOOK + "the code scan flagged q2, line 1: opens a file"
    test = nb.cells[index_of(nb, "q2_more_test")]
    assert [o.text for o in test.outputs] == [why + "\n", "q2: passed\n"]  # first
    comments, manual = comments_and_manual(db_url)
    assert manual == ["q1_answer_test", "q2_more_test"]
    assert comments["q2_more"] == why
    assert comments["q1_answer"].split("\n") == [
        MANUAL_LOOK + "the code scan flagged q1, line 2: calls sys._getframe",
        "CheckError: x.grad is twice right"]
    assert kept.questions[1]["score"] == 1.0  # the judge's score stays
    assert kept.flags == ["q1: calls sys._getframe"]


def test_the_grader_notes_go_into_the_record_bounded(tmp_path, db_url):
    said = [f"note {i} " + "x" * 600 for i in range(40)]
    _, kept = recorded(tmp_path, db_url, graded(), said=said)
    assert len(kept.notes) == 30 and kept.notes[-1] == "and 11 more notes"
    assert kept.notes[0].startswith("note 0 x") and len(kept.notes[0]) == 500


def test_the_students_own_errors_are_named_as_a_learner_finds_the_cell(tmp_path, db_url):
    nb = graded()
    nb.cells[index_of(nb, "q1_answer")].outputs = [
        new_output("error", ename="NameError", evalue="name 'w' is not defined", traceback=[])]
    scratch = new_code_cell("\n\nprint(t)\nmore()")
    scratch.outputs = [new_output("error", ename="KeyboardInterrupt", evalue="", traceback=[])]
    nb.cells.insert(index_of(nb, "q1_answer_test") + 1, scratch)
    _, kept = recorded(tmp_path, db_url, nb)
    assert kept.errors == [
        "your answer to question 1 (q1_answer): NameError: name 'w' is not defined",
        "your cell `print(t)` under question 1: KeyboardInterrupt",
    ]  # not the test cell's CheckError: that is the record's message
