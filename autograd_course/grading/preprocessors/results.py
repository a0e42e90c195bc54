"""Recording a graded notebook: its grade record, and each diagnostic as a gradebook comment."""

from __future__ import annotations

import contextlib
import re

import nbformat
from nbformat.notebooknode import NotebookNode
from nbgrader import utils
from nbgrader.api import Gradebook, MissingEntry
from nbgrader.preprocessors import NbGraderPreprocessor

from autograd_course.grading import record
from autograd_course.grading.terminal import safe

from .cells import META, cell_role, course_paths, end_notes, grade_id, is_test_cell


class RecordResults(NbGraderPreprocessor):
    """Write the grade record of the notebook and put each diagnostic in the gradebook.

    The record (in the course's store, :mod:`..record`, never beside the notebook) lists
    every test cell with its points, score, message and diagnosis code, the notes on repaired
    cells and on the sandbox, and the flags of the code scan; the message also becomes the
    auto-comment of the question's solution cell, which nbgrader's feedback shows. A question
    whose code the scan flagged is marked as needing a manual grade, so formgrader shows it;
    its score stays what the judge gave. Why it needs a person (:func:`manual_look`: "Needs a
    manual look: " and the scan's findings, inert text, bounded) begins that solution cell's
    auto-comment and is the first output of its test cell, where formgrader shows it whole
    (its comment box shows the auto-comment as a placeholder two lines high). Everything here
    comes from what the grading process produced (``resources``, and the outputs the judge
    wrote), never from the notebook's metadata.
    """

    def preprocess(self, nb, resources):
        coursedir, assignment, notebook = course_paths(self.config, resources)
        student = resources["nbgrader"]["student"]
        state = resources.get(META, {})
        diagnoses = state.get("diagnoses", {})
        questions = []
        solution_of = {}
        last_solution = None
        for cell in nb.cells:
            if utils.is_solution(cell):
                last_solution = grade_id(cell)
            if is_test_cell(cell):
                score, points = utils.determine_grade(cell, self.log)
                cell_id = grade_id(cell)
                questions.append(dict(
                    question=cell_id, points=points, score=score, passed=score == points,
                    message=record.diagnostic(cell.outputs),
                    diagnosis=diagnoses.get(cell_id) or ("" if score == points else "error"),
                ))
                if last_solution:
                    solution_of[cell_id] = last_solution
        data = record.GradeRecord(
            student=student,
            assignment=assignment,
            notebook=notebook,
            questions=questions,
            flags=_bounded(state.get("flags", []), "flags"),
            notes=_bounded(end_notes(resources), "notes"),
            failure=state.get("failure"),
            sandboxed=state.get("sandboxed", False),
            errors=_bounded(_cell_errors(nb), "errors"),
            seconds=state.get("seconds"),
        )
        record.store(coursedir.root).write(data)
        for flag in data.flags:
            self.log.warning("FLAGGED %s/%s/%s: %s", student, assignment, notebook, safe(flag))
        if not data.sandboxed:
            self.log.warning("NOT SANDBOXED %s/%s/%s", student, assignment, notebook)
        flagged = {cell_id: manual_look(found)
                   for cell_id, found in dict(state.get("flagged", {})).items()}
        for cell in nb.cells:
            if is_test_cell(cell) and grade_id(cell) in flagged:
                cell.outputs.insert(0, nbformat.v4.new_output(
                    "stream", name="stdout", text=flagged[grade_id(cell)] + "\n"))
        self._write_gradebook(resources, notebook, assignment, student, questions, solution_of,
                              flagged)
        return nb, resources

    def _write_gradebook(self, resources, notebook, assignment, student, questions,
                         solution_of, flagged):
        messages: dict[str, list[str]] = {}  # a solution cell's flags, then its failed tests
        for question in questions:
            solution = solution_of.get(question["question"])
            if solution is not None and question["question"] in flagged:
                messages.setdefault(solution, []).insert(0, flagged[question["question"]])
        for question in questions:
            solution = solution_of.get(question["question"])
            if solution is not None and not question["passed"]:
                messages.setdefault(solution, []).append(question["message"])
        with Gradebook(resources["nbgrader"]["db_url"]) as gradebook:
            for question in questions:
                if question["question"] in flagged:
                    with contextlib.suppress(MissingEntry):
                        gradebook.find_grade(question["question"], notebook, assignment,
                                             student).needs_manual_grade = True
            for solution, texts in messages.items():
                with contextlib.suppress(MissingEntry):
                    gradebook.find_comment(solution, notebook, assignment,
                                           student).auto_comment = "\n".join(texts)
            gradebook.db.commit()


#: How the reason a question needs a person begins (its comment, its test cell's output).
MANUAL_LOOK = "Needs a manual look: "
#: The scan's findings named in that reason (the rest are counted), each of at most
#: :data:`FINDING_CHARS` characters.
SHOWN_FINDINGS, FINDING_CHARS = 3, 160


def manual_look(findings: list[str]) -> str:
    """Why a question needs a person, on one line of inert text: :data:`MANUAL_LOOK`, then
    the scan's first findings in the answers it tests (what the code does, where).

    >>> manual_look(["q2, line 6: calls sys._getframe"] * 5)
    ... # doctest: +NORMALIZE_WHITESPACE
    'Needs a manual look: the code scan flagged q2, line 6: calls sys._getframe;
     q2, line 6: calls sys._getframe; q2, line 6: calls sys._getframe; and 2 more'
    """
    shown = [record.shorten(safe(f), FINDING_CHARS) for f in findings[:SHOWN_FINDINGS]]
    more = len(findings) - len(shown)
    return (MANUAL_LOOK + "the code scan flagged " + "; ".join(shown or ["this answer"])
            + (f"; and {more} more" if more > 0 else ""))


#: The most notes, flags or errors a record keeps (each of at most :data:`ITEM_CHARS`): a
#: submission cannot fill the record, the summary or the report with them.
MAX_ITEMS, ITEM_CHARS = 30, 500


def _bounded(items: list[str], kind: str) -> list[str]:
    """``items``, each cut to :data:`ITEM_CHARS`; past :data:`MAX_ITEMS`, the last says how
    many more there were."""
    kept = [record.shorten(str(item), ITEM_CHARS) for item in items[:MAX_ITEMS]]
    if len(items) > MAX_ITEMS:
        kept[-1] = f"and {len(items) - MAX_ITEMS + 1} more {kind}"
    return kept


def _cell_errors(nb: NotebookNode) -> list[str]:
    """The errors the student's own cells raised: "where: Type: message", cut short. A cell is
    named as a learner finds it in JupyterLab (which shows no cell numbers): an answer by its
    question ("your answer to question 2 (q2_...)"), another cell by its first line and the
    question it follows ("your cell `print(t)` under question 2")."""
    errors = []
    question = ""
    for cell in nb.cells:
        cell_id = grade_id(cell)
        number = re.search(r"(?:^|_)q(\d+)(?:_|$)", cell_id or "")
        if number:
            question = f"question {int(number.group(1))}"
        if cell_role(cell) != "answer":
            continue
        for output in cell.get("outputs", []):
            if output.output_type == "error":
                if cell_id:
                    where = (f"your answer to {question} ({cell_id})" if number
                             else f"your answer {cell_id}")
                else:
                    first = next((line for line in cell.source.splitlines() if line.strip()),
                                 "")
                    where = f"your cell `{record.shorten(first, 40)}`" + (
                        f" under {question}" if question else "")
                errors.append(f"{where}: {record.shorten(_error_text(output), 200)}")
    return errors


def _error_text(output) -> str:
    value = record.strip_ansi(str(output.get("evalue", ""))).strip()
    return f"{output.get('ename')}: {value}" if value else str(output.get("ename"))
