"""Writing graded work into the course: the gradebook (any SQLAlchemy URL), files, markers.

Why, and the details: docs/design.md#autograd_coursegradinggradebookpy. Rules:

- **One writer.** Only the process that runs ``autograd-course grade`` writes here; workers
  return data (:class:`~.tasks.Outcome`).
- **Merging** (:meth:`Writer.merge`), per submission: its files first, then one transaction
  with its grades, its comments and a **marker** (a row of ``autograd_course_graded``, in the
  gradebook's database, with the digest of the files it graded).
- **Resuming.** A run skips every submission whose files have not changed since its marker
  (:func:`graded`), unless ``--force``.
- **One run at a time** (:func:`exclusive`): a run holds the gradebook's grading lock from start
  to end (PostgreSQL's advisory lock, or a file lock beside a SQLite database); a run that
  finds nothing changed holds it while it looks (:func:`free`, :mod:`.idle`), and SQLAlchemy
  and nbgrader are imported only when the gradebook itself is read or written.
- **Manual grading survives a regrade**: merging sets only ``auto_score`` and ``auto_comment``.
- **Late work**: merging writes the timestamp and each notebook's ``late_submission_penalty``
  as the worker computed them (:func:`.tasks.set_dates`); a submission that could not be
  graded has no penalty.
"""

from __future__ import annotations

import contextlib
import hashlib
import shutil
import sys
import tempfile
import warnings
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

from autograd_course.grading import feedback, record
from autograd_course.grading.course import Course, CourseError
from autograd_course.grading.digests import DigestTable
from autograd_course.grading.intake import write_files
from autograd_course.grading.tasks import Outcome

#: What each merged grade was computed from (:func:`.tasks.digest_of`): a marker per submission.
MARKERS = DigestTable("autograd_course_graded", "digest", "graded_at")


def graded(course: Course, assignment: str) -> dict[str, str]:
    """The students of ``assignment`` whose grades are merged, with the digest of what was
    graded (an empty dict when nothing is)."""
    return MARKERS.read(course.db_url, assignment)


def cells(db_url: str, assignment: str, course_id: str = "default_course"
          ) -> dict[str, dict[str, float]] | None:
    """The graded cells of ``assignment`` in the gradebook at ``db_url``: notebook -> cell ->
    points (None when the gradebook does not know the assignment)."""
    from nbgrader.api import Gradebook, MissingEntry

    with warnings.catch_warnings(), Gradebook(db_url, course_id=course_id) as gb:
        warnings.simplefilter("ignore")
        try:
            found = gb.find_assignment(assignment)
        except MissingEntry:
            return None
        return {nb.name: {cell.name: cell.max_score for cell in nb.grade_cells}
                for nb in found.notebooks}


def register(course: Course, assignment: str, expected: dict[str, dict[str, float]]) -> None:
    """Make sure the course's gradebook knows ``assignment`` with the graded cells
    ``expected`` (what grading source/ now gives). A gradebook that does not know it yet gets
    it, as ``autograd-course release`` would do (also one that knows it only by name and due
    date, from ``nbgrader db assignment add``: its due date is kept); one that knows other
    cells or points is an error: source/ changed after the release, and grades would not fit."""
    from autograd_course.grading.release import prepare

    known = cells(course.db_url, assignment, course.course_id)
    if not known:
        with tempfile.TemporaryDirectory(prefix="autograd-course-register-") as tmp:
            prepare(Path(tmp), course, [assignment], db_url=course.db_url)
    elif known != expected:
        raise CourseError(
            f"the gradebook's {assignment} has other graded cells than "
            f"source/{assignment} now (source/ changed after the release?): run "
            f"`autograd-course release {assignment} --force` to update it, then grade again")


def _replace_folder(folder: Path, files: dict[str, bytes]) -> None:
    if folder.exists():
        shutil.rmtree(folder)
    write_files(folder, files)


class Writer:
    """The main process's connection to the course's gradebook for one grading run (opened
    once: a PostgreSQL connection and SQLAlchemy's compiled queries are reused)."""

    def __init__(self, course: Course):
        self.course = course
        self.gb = None

    def __enter__(self) -> Writer:
        self.gb = self.course.gradebook()
        return self

    def __exit__(self, *exc) -> None:
        self.gb.close()

    def _submission(self, student: str, assignment: str, timestamp: str | None = None):
        self.gb.update_or_create_student(student)
        extra = {"timestamp": datetime.fromisoformat(timestamp)} if timestamp else {}
        return self.gb.update_or_create_submission(assignment, student, **extra)

    def merge(self, outcome: Outcome) -> None:
        """Put one graded submission into the course: its files, then its grades, comments
        and marker in one transaction."""
        student, assignment = outcome.submission.student, outcome.submission.assignment
        course = self.course
        _replace_folder(course.directory("autograded", student, assignment), outcome.autograded)
        _replace_folder(course.directory("feedback", student, assignment), outcome.feedback)
        store = record.store(course.root)
        store.clear(assignment, student)
        for notebook, data in outcome.records.items():
            found = record.GradeRecord.from_json(data)
            if (found.student, found.assignment, found.notebook) != (student, assignment,
                                                                      notebook):
                raise record.RecordError(f"a worker sent {student}/{assignment}'s results "
                                         f"with the record of {found.student}/{found.assignment}")
            store.write(found)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # SQLAlchemy's notes on nbgrader's own queries
            submission = self._submission(student, assignment, outcome.timestamp)
            grades = {(nb.name, g.name): g for nb in submission.notebooks for g in nb.grades}
            comments = {(nb.name, c.name): c for nb in submission.notebooks for c in nb.comments}
            for item in outcome.grades:
                grade = grades[item["notebook"], item["cell"]]
                grade.auto_score = item["auto_score"]
                grade.needs_manual_grade = bool(item["needs_manual_grade"]
                                                or grade.manual_score is not None)
            for item in outcome.comments:
                comment = comments.get((item["notebook"], item["cell"]))
                if comment is not None:
                    comment.auto_comment = item["auto_comment"]
            for notebook in submission.notebooks:  # nbgrader's AssignLatePenalties, as computed
                notebook.late_submission_penalty = outcome.penalties.get(notebook.name)
            feedback.mark(self.gb, assignment, student, outcome.feedback_state)  # the page's
            MARKERS.write(self.gb, assignment, student, outcome.digest)
            self.gb.db.commit()

    def record_failure(self, outcome: Outcome, reason: str) -> None:
        """Give a submission that could not be graded 0 points and a grade record saying why.

        It is marked as graded: a submission that keeps killing its workers is not retried
        by the next run unless its files change, or ``--force``.
        """
        student, assignment = outcome.submission.student, outcome.submission.assignment
        store = record.store(self.course.root)
        store.clear(assignment, student)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            submission = self._submission(student, assignment)
            for notebook in submission.notebooks:
                notebook.late_submission_penalty = None  # no score, no penalty
                questions = []
                for grade in notebook.grades:
                    grade.auto_score = 0
                    grade.needs_manual_grade = grade.manual_score is not None
                    questions.append(dict(question=grade.name, points=grade.max_score, score=0,
                                          passed=False, message=f"NotGraded: {reason}",
                                          diagnosis="not_graded"))
                store.write(record.GradeRecord(student=student, assignment=assignment,
                                               notebook=notebook.name, questions=questions,
                                               failure=reason))
            MARKERS.write(self.gb, assignment, student, outcome.digest)
            self.gb.db.commit()


def export_grades(course: Course, dest: Path) -> None:
    """Write the gradebook's grades to ``dest`` as ``nbgrader export`` does under the course's
    config: nbgrader's columns, proper CSV (:mod:`.export`)."""
    from autograd_course.grading.export import export

    export(course, dest)


def _lock_key(course: Course) -> int:
    digest = hashlib.sha256(f"autograd-course grading {course.course_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


def lock_path(course: Course) -> Path:
    """The file a run locks (:func:`exclusive`) where the gradebook is no server's: beside a
    SQLite database, else at the course root."""
    sqlite = course.sqlite_path()
    return (sqlite.parent / f"{sqlite.name}.lock") if sqlite else course.root / ".grading.lock"


@contextlib.contextmanager
def exclusive(course: Course, wait_message=None) -> Iterator[None]:
    """Hold the gradebook's grading lock: a second run waits here until the first ends.

    ``wait_message()`` is called once when the lock is held by another run.
    """
    if course.db_url.startswith("postgresql"):
        from sqlalchemy import create_engine, text  # a server's gradebook only

        engine = create_engine(course.db_url)
        try:
            with engine.connect() as connection:
                key = _lock_key(course)
                if not connection.execute(text("SELECT pg_try_advisory_lock(:k)"), {"k": key}
                                          ).scalar():
                    if wait_message:
                        wait_message()
                    connection.execute(text("SELECT pg_advisory_lock(:k)"), {"k": key})
                try:
                    yield
                finally:
                    connection.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": key})
        finally:
            engine.dispose()
        return
    with _locked(lock_path(course), wait=True, wait_message=wait_message):
        yield


@contextlib.contextmanager
def free(path: Path) -> Iterator[bool]:
    """Hold the grading lock file ``path`` (:func:`lock_path`) for the block when no run holds
    it; yield whether it was free (no wait: a run in progress means work, :mod:`.idle`)."""
    with _locked(path, wait=False) as held:
        yield held


@contextlib.contextmanager
def _locked(path: Path, wait: bool, wait_message=None) -> Iterator[bool]:
    """Hold an exclusive lock on the file ``path``, waiting for it (``wait_message()`` once)
    or not; yield whether it is held."""
    if sys.platform == "win32":  # no flock: a single grading run at a time is up to you
        yield True
        return
    import fcntl

    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if not wait:
                yield False
                return
            if wait_message:
                wait_message()
            fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield True
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
