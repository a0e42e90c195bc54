"""A tiny course for the preprocessors' unit tests: assignment ``ps1``, notebook ``nb``.

The student version (:func:`release`) has an introduction, locked imports and two questions
(prompt, answer cell, test cell); :func:`course` writes it to ``release/`` under a test's
folder, :func:`gradebook` makes a gradebook with ``ada``'s submission of it. Cells carry
nbgrader metadata as ``nbgrader generate_assignment`` writes it (a test cell is graded and
locked). Never the course's own folders.
"""

from __future__ import annotations

import copy
import shutil
import warnings
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook
from nbgrader import utils
from nbgrader.api import Gradebook
from nbgrader.nbgraderformat import SCHEMA_VERSION
from traitlets.config import Config

ASSIGNMENT, NOTEBOOK, STUDENT = "ps1", "nb", "ada"
STUB = "# YOUR CODE HERE\nraise NotImplementedError()"
HIDDEN_PART = "### BEGIN HIDDEN TESTS\ncheck(answer, secret=2)\n### END HIDDEN TESTS"
KERNEL = {"kernelspec": {"name": "python3", "display_name": "Python 3 (course)",
                         "language": "python"},
          "language_info": {"name": "python", "version": "3.11.9"}}


def graded_cell(kind: str, source: str, grade_id: str, *, grade=False, solution=False,
                locked=False, points=None):
    """A cell with nbgrader metadata."""
    cell = new_code_cell(source) if kind == "code" else new_markdown_cell(source)
    cell.metadata["nbgrader"] = {"grade": grade, "grade_id": grade_id, "locked": locked,
                                 "schema_version": SCHEMA_VERSION, "solution": solution,
                                 "task": False}
    if points is not None:
        cell.metadata["nbgrader"]["points"] = points
    return cell


def answer_cell(grade_id: str, source: str = STUB):
    return graded_cell("code", source, grade_id, solution=True)


def check_cell(grade_id: str, source: str, points: int):
    return graded_cell("code", source, grade_id, grade=True, locked=True, points=points)


def release():
    """The student version of ``nb`` (what release/ holds)."""
    nb = new_notebook(metadata=copy.deepcopy(KERNEL), cells=[
        graded_cell("markdown", "# Problem set 1\nCall `hint('q1')` for a hint.", "intro",
                    locked=True),
        graded_cell("code", "import torch\nfrom checks import check", "imports", locked=True),
        new_markdown_cell("**Question 1.** Compute the answer."),
        answer_cell("q1_answer"),
        check_cell("q1_answer_test", "check(answer)", 2),
        new_markdown_cell("**Question 2.** Compute more."),
        answer_cell("q2_more"),
        check_cell("q2_more_test", "check(more)", 1),
    ])
    for index, cell in enumerate(nb.cells):
        cell.id = f"cell-{index}"
    return nb


def index_of(nb, grade_id: str) -> int:
    return next(i for i, c in enumerate(nb.cells)
                if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id)


def course(root: Path, student_version=None) -> Config:
    """A course at ``root`` whose release/ holds ``student_version`` (default :func:`release`;
    ``False``: nothing), and its config."""
    if student_version is not False:
        folder = root / "release" / ASSIGNMENT
        folder.mkdir(parents=True, exist_ok=True)
        nbformat.write(student_version or release(), folder / f"{NOTEBOOK}.ipynb")
    config = Config()
    config.CourseDirectory.root = str(root)
    return config


def resources(**nbgrader) -> dict:
    """nbgrader's resources for ``ada``'s ``nb`` (more ``nbgrader`` entries as keywords)."""
    return {"nbgrader": {"assignment": ASSIGNMENT, "notebook": NOTEBOOK, "student": STUDENT,
                         **nbgrader}}


def with_hidden_tests(cell):
    """The test cell as the gradebook keeps it: its hidden tests after the visible part."""
    full = copy.deepcopy(cell)
    full.source = f"{cell.source}\n{HIDDEN_PART}"
    return full


def gradebook(root: Path, blank: Path, checksum_of=utils.compute_checksum) -> str:
    """A SQLite gradebook at ``root`` (a copy of ``blank``, an empty one) with ``nb``'s cells
    (test cells with hidden tests, their checksum by ``checksum_of``) and ``ada``'s
    submission; its URL."""
    shutil.copyfile(blank, root / "gradebook.db")
    url = f"sqlite:///{root / 'gradebook.db'}"
    with warnings.catch_warnings(), Gradebook(url) as gb:
        warnings.simplefilter("ignore")  # SQLAlchemy's notes on nbgrader's own queries
        gb.add_assignment(ASSIGNMENT)
        gb.add_notebook(NOTEBOOK, ASSIGNMENT)
        for cell in release().cells:
            meta = cell.metadata.get("nbgrader")
            if not meta:
                continue
            name = meta["grade_id"]
            if meta["grade"]:
                cell = with_hidden_tests(cell)
                gb.add_grade_cell(name, NOTEBOOK, ASSIGNMENT, max_score=meta["points"],
                                  cell_type=cell.cell_type)
            if meta["solution"]:
                gb.add_solution_cell(name, NOTEBOOK, ASSIGNMENT)
            gb.add_source_cell(name, NOTEBOOK, ASSIGNMENT, cell_type=cell.cell_type,
                               locked=meta["locked"], source=cell.source,
                               checksum=checksum_of(cell))
        gb.add_student(STUDENT)
        gb.add_submission(ASSIGNMENT, STUDENT)
    return url
