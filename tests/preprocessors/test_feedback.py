"""The feedback pipeline's steps: HideHiddenTests, ShowCommentsAsText, ListOtherFiles.

Each class's docstring in ``preprocessors/feedback.py`` states its rules; one test per rule,
on the tiny course of :mod:`.course`. The pages themselves are test_feedback_pages.py's.
"""

from __future__ import annotations

import warnings

from nbformat.v4 import new_code_cell, new_output
from nbgrader.api import Gradebook
from traitlets.config import Config

from autograd_course.grading.feedback import made_secret
from autograd_course.grading.preprocessors import (
    HideHiddenTests,
    ListOtherFiles,
    ShowCommentsAsText,
)
from autograd_course.grading.preprocessors.feedback import FILES_HEADING

from .course import (
    ASSIGNMENT,
    NOTEBOOK,
    STUDENT,
    answer_cell,
    gradebook,
    index_of,
    release,
    resources,
)

VISIBLE = "check(answer)\n### BEGIN HIDDEN TESTS\nsecret_check(answer, 42)\n### END HIDDEN TESTS"


# --- HideHiddenTests ----------------------------------------------------------------------------


def hidden(nb):
    nb, _ = HideHiddenTests().preprocess(nb, resources())
    return nb


def test_a_test_cell_keeps_its_visible_part_and_a_note_for_the_hidden_one():
    nb = release()
    nb.cells[4].source = VISIBLE + "\nprint('after')"
    nb = hidden(nb)
    assert nb.cells[4].source == ("check(answer)\n# (hidden tests run here: their results are "
                                  "shown below)\nprint('after')")


def test_a_test_cells_error_keeps_its_diagnostic_and_loses_its_traceback():
    nb = release()
    nb.cells[4].outputs = [new_output("error", ename="CheckError", evalue="x.grad is wrong",
                                      traceback=["File <q1_answer_test>", "secret_check(...)"])]
    error = hidden(nb).cells[4].outputs[0]
    assert (error.ename, error.evalue) == ("CheckError", "x.grad is wrong")
    assert error.traceback == ["CheckError: x.grad is wrong"]


def test_cells_that_are_not_test_cells_are_left_as_they_are():
    nb = release()
    answer = nb.cells[index_of(nb, "q1_answer")]
    answer.source = VISIBLE  # a student's own text, whatever it says
    answer.outputs = [new_output("error", ename="NameError", evalue="x",
                                 traceback=["line 1", "line 2"])]
    graded_answer = answer_cell("q3_both", VISIBLE)
    graded_answer.metadata["nbgrader"].update(grade=True, points=1)
    nb.cells += [graded_answer, new_code_cell(VISIBLE)]
    expected = [c.source for c in nb.cells]
    nb = hidden(nb)
    assert [c.source for c in nb.cells] == expected
    assert nb.cells[index_of(nb, "q1_answer")].outputs[0].traceback == ["line 1", "line 2"]


# --- ShowCommentsAsText -------------------------------------------------------------------------


def shown(nb, **nbgrader):
    nb, _ = ShowCommentsAsText().preprocess(nb, resources(**nbgrader))
    return nb


def commented(comment: str = "**auto**"):
    """The student version with the comment GetGrades puts in on each answer cell."""
    nb = release()
    for grade_id in ("q1_answer", "q2_more"):
        nb.cells[index_of(nb, grade_id)].metadata["nbgrader"]["comment"] = comment
    return nb


def test_without_a_gradebook_the_comment_getgrades_put_in_is_shown_as_text():
    nb = shown(commented("see <a href='x'>this</a> and `__name__`"))
    assert nb.cells[index_of(nb, "q1_answer")].metadata["nbgrader"]["comment"] == (
        "```text\nsee <a href='x'>this</a> and `__name__`\n```")
    assert "comment" not in nb.cells[index_of(nb, "q1_answer_test")].metadata["nbgrader"]


def set_comments(db_url: str, **comments: tuple[str | None, str | None]) -> None:
    """Give ``ada``'s answer cells (by grade id) their (automatic, instructor's) comments."""
    with warnings.catch_warnings(), Gradebook(db_url) as gb:
        warnings.simplefilter("ignore")
        for name, (auto, manual) in comments.items():
            comment = gb.find_comment(name, NOTEBOOK, ASSIGNMENT, STUDENT)
            comment.auto_comment, comment.manual_comment = auto, manual
        gb.db.commit()


def test_with_a_gradebook_both_comments_are_shown_each_labelled(tmp_path, blank_gradebook):
    db_url = gradebook(tmp_path, blank_gradebook)
    set_comments(db_url, q1_answer=("x.grad is wrong", "Look at <b>step 2</b>"),
                 q2_more=("the same", "the same "))
    nb = shown(commented(), db_url=db_url)
    assert nb.cells[index_of(nb, "q1_answer")].metadata["nbgrader"]["comment"] == (
        "**Instructor's comment:**\n\n```text\nLook at <b>step 2</b>\n```\n\n"
        "**Automatic diagnostic:**\n\n```text\nx.grad is wrong\n```")
    assert nb.cells[index_of(nb, "q2_more")].metadata["nbgrader"]["comment"] == (
        "```text\nthe same \n```")  # the same twice: once


def test_a_blank_instructors_comment_does_not_hide_the_diagnostic(tmp_path, blank_gradebook):
    db_url = gradebook(tmp_path, blank_gradebook)
    set_comments(db_url, q1_answer=("x.grad is wrong", "  "), q2_more=(None, None))
    nb = shown(commented(), db_url=db_url)
    assert nb.cells[index_of(nb, "q1_answer")].metadata["nbgrader"]["comment"] == (
        "```text\nx.grad is wrong\n```")
    assert nb.cells[index_of(nb, "q2_more")].metadata["nbgrader"]["comment"] == ""


def test_a_cell_without_a_comment_gets_none(tmp_path, blank_gradebook):
    db_url = gradebook(tmp_path, blank_gradebook)
    set_comments(db_url, q1_answer=("x.grad is wrong", None))
    nb = shown(release(), db_url=db_url)
    assert all("comment" not in c.metadata.get("nbgrader", {}) for c in nb.cells)


# --- ListOtherFiles -----------------------------------------------------------------------------


def folders(root):
    """The student's autograded/ and feedback/ folders, made, with the notebook graded."""
    graded = root / "autograded" / STUDENT / ASSIGNMENT
    feedback = root / "feedback" / STUDENT / ASSIGNMENT
    for folder in (graded, feedback):
        folder.mkdir(parents=True)
    (graded / f"{NOTEBOOK}.ipynb").write_text("{}")
    return graded, feedback


def listed(root, graded, nb=None, **nbgrader):
    config = Config()
    config.CourseDirectory.root = str(root)
    config.JudgedExecute.secret = "the course's secret"
    found = resources(**nbgrader)
    found["metadata"] = {"path": str(graded)}
    nb, _ = ListOtherFiles(config=config).preprocess(nb or release(), found)
    return nb


def test_the_feedback_keeps_only_pages_and_nbgraders_files(tmp_path):
    graded, feedback = folders(tmp_path)
    (feedback / "sub" / "deeper").mkdir(parents=True)
    (feedback / "sub" / "deeper" / "evil.svg").write_text("<svg/>")
    (feedback / "sub" / f"{NOTEBOOK}.html").write_text("a page's name, not a page")
    (feedback / "evil.html").write_text("<script/>")
    (feedback / "link.html").symlink_to(graded / f"{NOTEBOOK}.ipynb")
    (feedback / "other.html").write_text("a page of no notebook graded here")
    (feedback / f"{NOTEBOOK}.html").write_text("the page")
    listed(tmp_path, graded)
    assert sorted(p.name for p in feedback.iterdir()) == [
        f"{NOTEBOOK}.html", "submission_secret.txt", "timestamp.txt"]


def test_nbgraders_files_are_made_where_missing_and_kept_where_present(tmp_path):
    graded, feedback = folders(tmp_path)
    listed(tmp_path, graded)
    assert (feedback / "submission_secret.txt").read_text() == made_secret(
        "the course's secret", STUDENT, ASSIGNMENT)
    assert (feedback / "timestamp.txt").read_text().startswith("20")
    (feedback / "timestamp.txt").write_text("2024-01-01 00:00:00.000000 UTC")
    (feedback / "submission_secret.txt").write_text("the exchange's")
    listed(tmp_path, graded)
    assert (feedback / "timestamp.txt").read_text() == "2024-01-01 00:00:00.000000 UTC"
    assert (feedback / "submission_secret.txt").read_text() == "the exchange's"


def test_the_submissions_other_files_are_listed_as_text(tmp_path):
    graded, _ = folders(tmp_path)
    (graded / "sub").mkdir()
    (graded / "sub" / "notes```.md").write_text("12345")
    (graded / "data\x1b[31m.csv").write_text("1,2")
    (graded / "timestamp.txt").write_text("2024")
    nb = listed(tmp_path, graded)
    assert nb.cells[-1].source == (f"{FILES_HEADING}\n\n````text\ndata.csv (3 bytes)\n"
                                   "sub/notes```.md (5 bytes)\n````")


def test_a_submission_with_no_other_file_gets_no_list(tmp_path):
    graded, _ = folders(tmp_path)
    assert listed(tmp_path, graded) == release()


def test_without_a_student_nothing_changes(tmp_path):
    graded, feedback = folders(tmp_path)
    (graded / "data.csv").write_text("1,2")
    (feedback / "evil.html").write_text("<script/>")
    nb = listed(tmp_path, graded, student=None)
    assert nb == release() and [p.name for p in feedback.iterdir()] == ["evil.html"]

