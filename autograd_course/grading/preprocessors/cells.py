"""What the course's preprocessors need to know about a notebook's cells.

nbgrader marks cells in their metadata (``nbgrader.grade``, ``solution``, ``locked``,
``grade_id``); the grader reads them through these helpers, and finds the student version of a
notebook (the cells a submission should hold) in release/.
"""

from __future__ import annotations

import copy
import functools
from pathlib import Path

import nbformat
from nbformat.notebooknode import NotebookNode
from nbgrader import utils
from nbgrader.coursedir import CourseDirectory

#: The key of the course's own entries in nbgrader's ``resources``.
META = "autograd_course"


def grade_id(cell: NotebookNode) -> str | None:
    """The nbgrader id of a cell, or None (also where the metadata is damaged: an id that is
    not a string, nbgrader metadata that is not a dict)."""
    meta = cell.metadata.get("nbgrader") if isinstance(cell.metadata, dict) else None
    value = meta.get("grade_id") if isinstance(meta, dict) else None
    return value if isinstance(value, str) else None


def is_test_cell(cell: NotebookNode) -> bool:
    """Whether a cell is an autograded test cell (graded, not a solution)."""
    return cell.cell_type == "code" and utils.is_grade(cell) and not utils.is_solution(cell)


def cell_role(cell: NotebookNode) -> str:
    """What a cell is to the grader: "test", "locked" (trusted code), "answer" or "text"."""
    if cell.cell_type != "code":
        return "text"
    if is_test_cell(cell):
        return "test"
    meta = cell.metadata.get("nbgrader", {})
    if meta.get("locked") and not meta.get("solution"):
        return "locked"
    return "answer"


def error_output(ename: str, evalue: str) -> NotebookNode:
    """An error output whose traceback is its one line."""
    return nbformat.v4.new_output(
        "error", ename=ename, evalue=evalue, traceback=[f"{ename}: {evalue}"]
    )


def short(exc: BaseException, limit: int = 160) -> str:
    """An exception on one line: its type and the first line of its message, cut short."""
    text = f"{type(exc).__name__}: {exc}".splitlines()[0]
    return text if len(text) <= limit else text[: limit - 1] + "…"


def course_paths(config, resources) -> tuple[CourseDirectory, str, str]:
    """The course directory, the assignment and the notebook nbgrader is working on."""
    coursedir = CourseDirectory(config=config)
    info = resources.get("nbgrader", {})
    return coursedir, info.get("assignment", ""), info.get("notebook", "")


def release_notebook(coursedir: CourseDirectory, assignment: str, notebook: str
                     ) -> NotebookNode | None:
    """Return the student version of a notebook from release/, or None when it is missing.

    Repair, the scan and the inert step each ask for it while one submission is graded: it is
    read and validated once per version of the file, and each caller gets a copy of its own."""
    path = Path(coursedir.format_path(coursedir.release_directory, ".", assignment)) / (
        notebook + ".ipynb"
    )
    if not path.is_file():
        return None
    info = path.stat()
    return copy.deepcopy(_read_release(str(path), info.st_mtime_ns, info.st_size, info.st_ino))


@functools.lru_cache(maxsize=16)
def _read_release(path: str, mtime_ns: int, size: int, inode: int) -> NotebookNode:
    """The notebook at ``path`` as it was at that version (the arguments after it key it)."""
    return nbformat.read(path, as_version=4)


#: The grader's notes on each notebook being graded, by (student, assignment, notebook).
_NOTES: dict[tuple[str, str, str], list[str]] = {}


def _notebook_key(resources: dict) -> tuple[str, str, str]:
    info = resources.get("nbgrader", {})
    return info.get("student", ""), info.get("assignment", ""), info.get("notebook", "")


def notes(resources: dict) -> list[str]:
    """The grader's notes on the notebook being graded (what it repaired, why it stopped).

    Only the grading process writes them, never the notebook's metadata, which the student
    writes. nbgrader runs a notebook's sanitize stage and then its autograde stage in one
    process, with fresh ``resources`` for each, so the notes are kept here, by notebook, from
    the start of its sanitize stage (:func:`start_notes`) to the grade record.
    """
    return _NOTES.setdefault(_notebook_key(resources), [])


def start_notes(resources: dict) -> None:
    """A notebook's grading starts (its sanitize stage): forget notes of an earlier one."""
    _NOTES[_notebook_key(resources)] = []


def end_notes(resources: dict) -> list[str]:
    """A notebook's grading ends: its notes, forgotten here."""
    return _NOTES.pop(_notebook_key(resources), [])


def max_file_bytes(config) -> int:
    """The largest file a submission may bring, in bytes (``CourseDirectory.max_file_size``,
    in kB as nbgrader counts them)."""
    return int(CourseDirectory(config=config).max_file_size) * 1000
