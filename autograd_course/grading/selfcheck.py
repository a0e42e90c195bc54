"""A learner's self-check: grade notebooks exactly as the instructor's autograde would.

``autograd-course check NOTEBOOK`` grades the notebook with nbgrader's own Autograde and the
course's config (the judge, the sandbox) in a private course that holds only its assignment.
That course is prepared once per version of the assignment (``nbgrader generate_assignment``
in a cached folder, keyed by a hash of the source and the config) and copied for each check,
so a check costs about what ``nbgrader validate`` costs. The hidden inputs are seeded by the
course's secret and the student's id, as in grading: the same notebook gets the same verdict
from ``check`` and from ``grade``.
"""

from __future__ import annotations

import getpass
import hashlib
import os
import shutil
import stat
import tempfile
import warnings
from pathlib import Path

from autograd_course import __version__
from autograd_course.grading import record
from autograd_course.grading.course import CONFIG_FILE, Course
from autograd_course.grading.release import prepare
from autograd_course.grading.tasks import sqlite_url

CACHE = ".autograd-course-cache"


def _fingerprint(course: Course, assignment: str) -> str:
    digest = hashlib.sha256(__version__.encode())
    digest.update((course.root / CONFIG_FILE).read_bytes())
    folder = course.directory("source", ".", assignment)
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(folder)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def prepared_course(course: Course, assignment: str) -> Path:
    """A course with ``assignment`` released and in its gradebook, built once per version of
    the assignment and cached (the versions before it are removed)."""
    cache = course.root / CACHE
    folder = cache / f"{assignment}-{_fingerprint(course, assignment)}"
    if (folder / "gradebook.db").is_file():
        return folder
    cache.mkdir(exist_ok=True)
    building = Path(tempfile.mkdtemp(prefix=f".building-{assignment}-", dir=cache))
    try:
        prepare(building, course, [assignment], db_url=sqlite_url(building))
    except BaseException:
        shutil.rmtree(building, ignore_errors=True)
        raise
    try:
        building.rename(folder)
    except OSError:  # another check built it meanwhile
        shutil.rmtree(building, ignore_errors=True)
    for old in cache.glob(f"{assignment}-*"):
        if old != folder and len(old.name) == len(folder.name):  # an older version
            shutil.rmtree(old, ignore_errors=True)
    return folder


def student_of(notebook: Path, student: str | None) -> str:
    """The student a notebook is checked as: given, or read from submitted/STUDENT/..., or
    the user's name (as nbgrader takes it: JUPYTERHUB_USER, else the OS account)."""
    if student:
        return student
    parts = notebook.resolve().parts
    if "submitted" in parts and len(parts) - parts.index("submitted") >= 4:
        return parts[parts.index("submitted") + 1]
    return os.environ.get("JUPYTERHUB_USER") or getpass.getuser()


def check(root: Path, notebook: Path, student: str | None = None) -> list[record.GradeRecord]:
    """Grade ``notebook`` (an assignment's notebook, named as in source/) alone."""
    from nbgrader.apps import NbGraderAPI

    warnings.filterwarnings("ignore", module="nbgrader")  # SQLAlchemy's notes on nbgrader's API

    from nbgrader.coursedir import CourseDirectory

    course = Course.load(root)
    notebook = Path(notebook).resolve()
    assignment, student = notebook.stem, student_of(notebook, student)
    if not record.NAME.match(student):
        raise RuntimeError(f"{student!r} is not a student id (letters, digits and . _ @ + -): "
                           "give one with --student")
    cached = prepared_course(course, assignment)
    with tempfile.TemporaryDirectory(prefix="autograd-course-check-") as tmp:
        work = Path(tmp) / "course"
        shutil.copytree(cached, work)
        folder = work / "submitted" / student / assignment
        folder.mkdir(parents=True)
        limit = int(CourseDirectory(config=course.config).max_file_size) * 1000
        for path in notebook.parent.iterdir():  # the notebook, and the files beside it
            if path == notebook or (path.suffix != ".ipynb" and stat.S_ISREG(
                    path.lstat().st_mode) and path.lstat().st_size <= limit):
                shutil.copyfile(path, folder / path.name)
        # A private SQLite gradebook: never the class's own, whatever the config names.
        private = {"db_url": sqlite_url(work)}
        checking = Course.load(work, CourseDirectory=private,
                               JudgedExecute={"secret": course.secret(),
                                              "hide_paths": [str(course.root)]})
        cwd = os.getcwd()
        os.chdir(work)
        try:
            result = NbGraderAPI(config=checking.config).autograde(assignment, student,
                                                                   force=True, create=True)
        finally:
            os.chdir(cwd)
        found, _ = record.store(work).read(assignment, student)
        if not result.get("success") or not found:
            lines = (result.get("error") or result.get("log") or "").strip().splitlines()
            raise RuntimeError(lines[-1] if lines else "nbgrader could not grade it")
        return found
