"""Around each submission that nbgrader's own Autograde grades: the course's lock and roster.

Plain ``nbgrader autograde`` and formgrader's *Autograde* run nbgrader's own Autograde; its
exporter is the course's (:class:`.TolerantNotebookExporter`), which calls :func:`submission`
around every notebook it reads, so that they do what ``autograd-course grade`` does
(:func:`..gradebook.exclusive`, :mod:`..roster`):

- **the lock**: held while each notebook of a submission is read and graded (each of
  nbgrader's stages: sanitizing, then autograding), and released when that stage ends,
  whatever its outcome. A ``grade`` run and an Autograde on one gradebook never write at
  once: the second waits, and its log says so (an INFO line). It is the lock ``grade`` takes,
  keyed by the gradebook (PostgreSQL's advisory lock, or the file beside a SQLite gradebook);
  a thread that holds it does not take it again. ``grade``'s workers grade in a prepared
  course with a gradebook of its own, so they take that gradebook's lock, never the course's.
- **the roster**: when ``roster.csv`` at the course root is new or changed since this process
  last read it for this gradebook, it is read and put into the gradebook as ``grade`` does
  (:func:`..roster.apply`: every student of the roster, names updated). A roster that cannot
  be read is a WARNING naming the file, the line and the problem, and grading goes on.
- **not covered**: nbgrader's own writes outside a notebook's stages (it creates the
  student's and the submission's rows before the first one, as ``grade`` does too).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from pathlib import Path

from traitlets.config import Config

from autograd_course.grading import roster
from autograd_course.grading.course import Course, CourseError

from .cells import short

#: The locks this process holds, by (gradebook, thread).
_HELD: set[tuple[str, int]] = set()
#: The roster last put into each gradebook by this process: (file, mtime, size).
_APPLIED: dict[str, tuple[str, int, int]] = {}
#: What the log says while another run holds the lock.
WAITING = ("waiting for the gradebook's grading lock: another grading run (autograd-course "
           "grade, or another Autograde) is writing to this gradebook")


def course_of(converter) -> Course:
    """The course that nbgrader's ``converter`` grades: its root, gradebook and course id as
    the converter's CourseDirectory has them (formgrader's, or the command line's)."""
    coursedir = converter.coursedir
    config = Config(converter.config)
    config.CourseDirectory.root = str(coursedir.root)
    config.CourseDirectory.db_url = coursedir.db_url
    config.CourseDirectory.course_id = coursedir.course_id
    return Course(Path(coursedir.root).resolve(), config)


@contextlib.contextmanager
def submission(converter, filename: str, resources: dict | None, log) -> Iterator[None]:
    """Hold the course's grading lock while nbgrader's Autograde ``converter`` reads and
    grades the notebook ``filename`` of a submission (one stage of it), and put the roster
    into the gradebook first (see the module docstring). Anything else (no student: not an
    Autograde of a submission) runs as it is."""
    info = (resources or {}).get("nbgrader", {})
    if getattr(converter, "coursedir", None) is None or not info.get("student"):
        yield
        return
    course = course_of(converter)
    key = (course.db_url, threading.get_ident())
    if key in _HELD:  # a stage inside a stage of this thread: the lock is already held
        yield
        return
    from autograd_course.grading.gradebook import exclusive

    _HELD.add(key)
    try:
        with exclusive(course, lambda: log.info(WAITING)):
            use_roster(course, log)
            yield
    finally:
        _HELD.discard(key)


def use_roster(course: Course, log) -> None:
    """Put ``course``'s roster into its gradebook if this process has not done so since the
    file last changed; say what was done (INFO) or why it could not be (WARNING)."""
    path = roster.path_of(course)
    try:
        stat = path.stat()
    except OSError:
        return
    seen = (str(path), stat.st_mtime_ns, stat.st_size)
    if _APPLIED.get(course.db_url) == seen:
        return
    _APPLIED[course.db_url] = seen
    try:
        found = roster.load(course)
        if found is None:
            return
        added, changed = roster.apply(course, found)
    except CourseError as exc:
        log.warning("%s; the students' names were not updated", exc)
        return
    except Exception as exc:  # noqa: BLE001 - names are not grades: grading goes on
        log.warning("%s: the students' names were not updated (%s)", path, short(exc))
        return
    log.info("roster %s: %d students (%d new in the gradebook, %d with names updated)",
             path.name, len(found.students), added, changed)
    for line in found.warnings:
        log.warning("%s", line)
