"""Synthetic classes for the tests, the dry run and the benchmarks: courses, submissions.

:func:`make_course` prepares a course from this one's source/ (or a config of its own);
:func:`reference_answers` and :func:`fill` build submissions from the student version (they
live in :mod:`.notebooks`, which :mod:`.synthetic` uses too, and are offered here);
:func:`submit` writes one where nbgrader collects it, :func:`submit_class` a synthetic class
of them; :func:`copy_course` copies a course and its class, ungraded; :func:`snapshot` proves
nothing changed; :func:`gradebook_scores` reads totals from a course's gradebook (any db_url);
:func:`nbgrader` runs the plain nbgrader command in a course, as an instructor would;
:func:`grade_record` reads a notebook's grade record.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import nbformat

from autograd_course.grading.course import read_secret
from autograd_course.testkit.notebooks import fill as fill  # offered to this module's callers
from autograd_course.testkit.notebooks import reference_answers as reference_answers
from autograd_course.testkit.synthetic import synthetic_class


def nbgrader(
    course: Path, *args: str, check: bool = False, timeout: float | None = None
) -> subprocess.CompletedProcess:
    """Run ``nbgrader ARGS`` in ``course`` with this Python; return the finished process."""
    # nbgrader runs `alembic` from PATH when it creates a gradebook: use this environment's.
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    env = dict(os.environ, PATH=path, PYTHONWARNINGS="ignore::DeprecationWarning")
    return subprocess.run(
        [sys.executable, "-m", "nbgrader", *args],
        cwd=course,
        env=env,
        capture_output=True,
        text=True,
        check=check,
        timeout=timeout,
    )


def make_course(
    dest: Path, source_root: Path, assignments: list[str], config: str | None = None
) -> Path:
    """Create a course in ``dest`` with ``assignments`` released from ``source_root``'s
    source/, with its nbgrader_config.py or ``config`` (the text of another one)."""
    from autograd_course.grading.course import CONFIG_FILE, Course
    from autograd_course.grading.release import prepare

    if config is not None:  # the source course may be dest itself, with no config yet
        Path(dest).mkdir(parents=True, exist_ok=True)
        (Path(dest) / CONFIG_FILE).write_text(config)
    prepare(Path(dest), Course.load(source_root), assignments, config_text=config)
    read_secret(dest)  # made now, so that a copy of this course draws the same hidden inputs
    return Path(dest)


def full_marks(source_notebook: Path) -> float:
    """The points of all graded cells of an instructor notebook (what a right answer gets)."""
    nb = nbformat.read(source_notebook, as_version=4)
    return float(sum(cell.metadata.get("nbgrader", {}).get("points", 0) for cell in nb.cells
                     if cell.metadata.get("nbgrader", {}).get("grade")))


def submit(
    course: Path,
    student: str,
    assignment: str,
    notebook_name: str,
    content: nbformat.NotebookNode | bytes | str,
) -> Path:
    """Write a submission under ``submitted/STUDENT/ASSIGNMENT/`` (a notebook or raw bytes)."""
    folder = Path(course) / "submitted" / student / assignment
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{notebook_name}.ipynb"
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif isinstance(content, str):
        path.write_text(content)
    else:
        nbformat.write(content, path)
    (folder / "timestamp.txt").write_text("2026-11-30 12:00:00.000000 UTC")
    return path


def submit_class(course: Path, assignment: str, students: list[tuple[str, str]],
                 seed: int = 0) -> None:
    """Submit a synthetic class of ``assignment``: ``students`` are (id, profile) pairs (see
    :mod:`.synthetic`), drawn from ``seed``."""
    course = Path(course)
    notebooks = synthetic_class(course / "source" / assignment / f"{assignment}.ipynb",
                                course / "release" / assignment / f"{assignment}.ipynb",
                                assignment, students, seed=seed)
    for student, nb in notebooks.items():
        submit(course, student, assignment, assignment, nb)


def copy_course(source: Path, dest: Path, config_extra: str = "") -> Path:
    """A copy of the course ``source`` and its submissions, with nothing graded and the same
    secret (so the same hidden inputs); ``config_extra`` is added to its nbgrader_config.py."""
    shutil.copytree(source, dest, ignore=shutil.ignore_patterns(
        "gradebook.db*", "autograded", "feedback", "reports", "grades.csv"))
    with open(Path(dest) / "nbgrader_config.py", "a") as f:
        f.write(config_extra)
    return Path(dest)


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` with its bytes, to prove that nothing changed."""
    folder = Path(folder)
    return {
        str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
    }


def gradebook_scores(course: Path, assignment: str) -> dict[str, float]:
    """Each student's total score for ``assignment``, read from the course's gradebook."""
    from autograd_course.grading.course import Course

    with warnings.catch_warnings(), Course.load(course).gradebook() as gb:
        warnings.simplefilter("ignore")
        found = gb.find_assignment(assignment)
        return {s.student.id: s.score for s in found.submissions}


def grade_record(course: Path, student: str, assignment: str, notebook: str | None = None):
    """The grade record of one notebook (the assignment's own by default), from the course's
    store."""
    from autograd_course.grading import record

    path = record.store(course).path(assignment, student, notebook or assignment)
    return record.GradeRecord.from_json(path.read_text())
