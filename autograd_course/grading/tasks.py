"""Grading one submission, as a task that needs nothing but what travels with it.

A task runs in a worker process, on this machine or on a Dask worker elsewhere, with no
shared file system. What it needs travels with it:

- the run's :class:`Bundle`: a prepared course (config, source, release and a gradebook that
  knows the run's assignments, made by :func:`.release.prepare`) as one archive, with the
  grading settings (the course's secret, limits). A worker unpacks it once and grades every
  submission of the run in it;
- the :class:`Task`: the submission's files, as bytes.

:func:`grade` runs nbgrader's own Autograde and GenerateFeedback on the submission in the
worker's copy of the course (the course's config: the judge and the sandbox), and returns an
:class:`Outcome` with everything the course needs back, as data: the grades and comments from
the worker's gradebook, the autograded folder, the feedback and the grade records, as bytes.
Only the main process writes the course's gradebook and files (:mod:`.gradebook`).
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import hashlib
import io
import json
import multiprocessing.util
import os
import shutil
import sys
import tarfile
import tempfile
import threading
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

from autograd_course.grading import engines, intake, record
from autograd_course.grading import feedback as pages
from autograd_course.grading.course import Course, Submission, tools_on_path


@dataclass(frozen=True)
class Bundle:
    """The prepared course of one grading run (every assignment it grades), as it travels
    to workers."""

    assignments: tuple[str, ...]
    archive: bytes  # a tar.gz of the prepared course
    settings: dict  # JudgedExecute settings: secret, limits, folders to hide
    notebooks: dict[str, int] = field(default_factory=dict)  # assignment -> its notebooks

    @property
    def key(self) -> str:
        """The bundle's identity on a worker: its course and its settings (a long-lived Dask
        worker keeps the course it unpacked for the next run of the same bundle)."""
        settings = json.dumps(self.settings, sort_keys=True, default=str).encode()
        return hashlib.sha256(self.archive + b"\0" + settings).hexdigest()[:16]


@dataclass(frozen=True)
class Task:
    """One submission to grade: who, which assignment, its files (relative path -> bytes)
    within the intake's limits (:mod:`.intake`), and the sizes of those too large to read.

    It also carries what nbgrader's ``AssignLatePenalties`` needs from the course's gradebook
    (the worker grades in a gradebook of its own, :func:`set_dates`): the assignment's due
    date and the student's extension (nbgrader's ``Submission.extension``), and the
    submission's timestamp there (nbgrader keeps it when the folder has no timestamp.txt).
    Dates are ISO text, naive UTC as nbgrader stores them; the extension is in seconds."""

    submission: Submission
    files: dict[str, bytes]
    digest: str  # of the files and the due date: a regrade is needed when it changes
    oversized: dict[str, int] = field(default_factory=dict)
    duedate: str | None = None
    extension: float | None = None
    timestamp: str | None = None
    renamed: tuple[str, str] | None = None  # (as submitted, as graded): --rename-notebook
    misnamed: str = ""  # "rosa submitted Untitled.ipynb; the assignment's notebook is ..."


@dataclass
class Outcome:
    """What grading one submission gave: the grades and files to merge, or why it could not."""

    submission: Submission
    ok: bool
    digest: str = ""
    timestamp: str | None = None
    grades: list[dict] = field(default_factory=list)
    comments: list[dict] = field(default_factory=list)
    autograded: dict[str, bytes] = field(default_factory=dict)
    feedback: dict[str, bytes] = field(default_factory=dict)
    records: dict[str, str] = field(default_factory=dict)  # notebook -> its grade record (JSON)
    error: str = ""
    feedback_state: str = ""  # what the feedback page shows of the gradebook (feedback.state)
    seconds_late: float = 0.0  # nbgrader's total_seconds_late (due date and extension)
    penalties: dict[str, float | None] = field(default_factory=dict)  # notebook -> late penalty


def pack(folder: Path) -> bytes:
    """A folder as a tar.gz archive (relative names, no links)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for path in sorted(folder.rglob("*")):
            if path.is_file() and not path.is_symlink():
                tar.add(path, arcname=str(path.relative_to(folder)))
    return buffer.getvalue()


def read_files(folder: Path) -> dict[str, bytes]:
    """Every regular file under ``folder``, by relative path (links are left out)."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and not p.is_symlink()}


def digest_of(files: dict[str, bytes], oversized: dict[str, int] | None = None,
              deadline: str = "") -> str:
    """A fingerprint of a submission's files, and of its ``deadline`` (due date and extension,
    as text; none, the same fingerprint as before due dates counted): it changes when any
    file does, or the due date or the student's extension."""
    digest = hashlib.sha256()
    for name in sorted(files):  # a name that is not UTF-8 comes as surrogates (os.walk's)
        digest.update(os.fsencode(name) + b"\0" + hashlib.sha256(files[name]).digest())
    for name, size in sorted((oversized or {}).items()):
        digest.update(os.fsencode(name) + b"\0oversized\0" + str(size).encode())
    if deadline:
        digest.update(b"\0deadline\0" + deadline.encode())
    return digest.hexdigest()


def make_task(course: Course, submission: Submission, dates: dict | None = None,
              rename: bool = False) -> Task:
    """The task of one submission: its files as the intake lets them in, with its due date,
    extension and stored timestamp from the course's gradebook (``dates``: what
    :meth:`.Course.dates` gives for a run's submissions; read here when not given).

    With ``rename``, a folder whose only notebook is not named as the assignment's notebook
    (and that has no notebook of that name) has it graded under the expected name: only the
    task's file name changes, never the file on disk (:func:`.intake.misnamed`)."""
    from nbgrader.coursedir import CourseDirectory

    folder = course.directory("submitted", submission.student, submission.assignment)
    found = intake.scan(folder, int(CourseDirectory(config=course.config).max_file_size) * 1000)
    files = found.read()
    renamed, said = None, ""
    notebooks = course.notebooks_of(submission.assignment)
    wrong = intake.misnamed(list(files) + list(found.oversized), notebooks)
    if wrong:
        said = intake.misnamed_said(submission.student, wrong, notebooks)
    if rename and wrong and len(notebooks) == 1 and len(
            [n for n in [*files, *found.oversized] if n.endswith(".ipynb")]) == 1:
        renamed, said = (wrong[0], notebooks[0]), ""
        if wrong[0] in files:
            files[notebooks[0]] = files.pop(wrong[0])
        else:
            found.oversized[notebooks[0]] = found.oversized.pop(wrong[0])
    if dates is None:
        dates = course.dates([submission])
    duedate, extension, timestamp = dates.get(submission, (None, None, None))
    deadline = f"{duedate}|{extension}" if duedate is not None else ""
    return Task(submission, files, digest_of(files, found.oversized, deadline), found.oversized,
                duedate=duedate, extension=extension, timestamp=timestamp, renamed=renamed,
                misnamed=said)


def sqlite_url(folder: Path) -> str:
    """The URL of the SQLite gradebook in ``folder`` (a prepared course's own)."""
    return f"sqlite:///{Path(folder).resolve() / 'gradebook.db'}"


# -- the worker side -----------------------------------------------------------------------
_unpacked: dict[str, tuple[Path, object]] = {}  # bundle key -> (course folder, NbGraderAPI)
_last_used: dict[str, float] = {}  # bundle key -> time.monotonic() of its last submission
STALE_SECONDS = 3600  # a long-lived (Dask) worker removes courses no run has used for this long


def _course_of(bundle: Bundle):
    """The worker's copy of the bundle's course, unpacked once per process."""
    if bundle.key not in _unpacked:
        from nbgrader.apps import NbGraderAPI

        now = time.monotonic()
        forget([key for key, used in _last_used.items() if now - used > STALE_SECONDS])
        tools_on_path()
        warnings.simplefilter("ignore")  # nbgrader's SQLAlchemy notes; kernels' own chatter
        folder = Path(tempfile.mkdtemp(prefix="autograd-course-grading-",
                                       dir=_scratch()))
        # removed when the process ends: a pool worker, a Dask worker or the main process
        multiprocessing.util.Finalize(None, shutil.rmtree, args=(folder,),
                                      kwargs={"ignore_errors": True}, exitpriority=1)
        with tarfile.open(fileobj=io.BytesIO(bundle.archive), mode="r:gz") as tar:
            tar.extractall(folder, filter="data")
        # the bundle's own gradebook, whatever the course's db_url: workers never write to it;
        # kernels see none of the courses this worker unpacked (a Dask worker's folder may
        # lie outside /tmp, which is hidden anyway), with other runs' students in them
        settings = dict(bundle.settings, hide_paths=[*bundle.settings.get("hide_paths", []),
                                                     str(folder.parent)])
        course = Course.load(folder, JudgedExecute=settings,
                             CourseDirectory={"db_url": sqlite_url(folder)})
        engines.share(sqlite_url(folder))
        _unpacked[bundle.key] = (folder, NbGraderAPI(config=course.config))
    _last_used[bundle.key] = time.monotonic()
    return _unpacked[bundle.key]


def _scratch() -> str | None:
    """Where a worker unpacks courses: a grading child's own folder (its parent removes it
    with the child, however the child ends: :class:`.bounded.Child`), a Dask worker's own
    folder (Dask removes it with the worker), else the system's temporary folder."""
    if _served:
        return _served[0]
    if "distributed" in sys.modules:  # imported in every Dask worker, never in a pool worker
        from distributed import get_worker

        try:
            return get_worker().local_directory
        except ValueError:  # not in a Dask worker
            pass
    return None


def forget(keys: list[str] | None = None) -> None:
    """Remove this process's unpacked courses (those of ``keys``; all by default: a worker
    that must exit at once)."""
    for key in list(_unpacked) if keys is None else keys:
        folder, _ = _unpacked.pop(key)
        _last_used.pop(key, None)
        engines.release(sqlite_url(folder))
        shutil.rmtree(folder, ignore_errors=True)


def the_bundle(bundle: Bundle) -> Bundle:
    """The bundle itself, as a Dask task's result: where a worker that held it dies, the
    cluster computes it again from the task (data scattered to workers dies with them, and
    the tasks that needed it would be cancelled instead of retried)."""
    return bundle


# -- in a grading child (bounded.Child): the parent holds each submission's budget ---------
_served: list = []  # in a grading child: its scratch folder, and the run's bundle

#: Preloaded by the forkserver that grading children fork from: torch, with the judge, and
#: what every child would import again otherwise (paid once, not once per child, and frozen
#: for the collector with the rest: :func:`settle_collector`): nbgrader's apps with the
#: course's preprocessors.
PRELOAD = ["autograd_course.grading.tasks", "autograd_course.grading.boundary.judge",
           "autograd_course.grading.preprocessors", "nbgrader.apps"]
#: Why a submission whose grading process died every time it was tried got 0.
KILLED = ("KilledWorker: the grading process was killed while grading this submission, every "
          "time it was tried (a signal, or out of memory)")


#: The young generation of a grading child's garbage collector (``gc.set_threshold``'s
#: first; Python's default is 700): a feedback page's and a notebook's objects die young
#: instead of being promoted while they are made, and full collections become rare.
YOUNG_OBJECTS = 20_000


def settle_collector() -> None:
    """Set a grading process's garbage collector for grading many submissions. What the
    process holds when it starts (torch, nbgrader and the grader, some 450,000 objects that a
    grading child inherits from its forkserver) is never garbage: the collector leaves it
    (``gc.freeze``), and those pages stay shared with the forkserver. Its young generation is
    :data:`YOUNG_OBJECTS`. Without this, collecting took a sixth of a grading child's
    CPU time (0.23 of 1.42 s per submission, measured with cProfile in one grading child)."""
    gc.freeze()
    gc.set_threshold(YOUNG_OBJECTS, *gc.get_threshold()[1:])


def serve(scratch: str, bundle: Bundle) -> None:
    """A grading child's start (:class:`.bounded.Child`): it grades ``bundle``'s
    submissions and unpacks its course in ``scratch``, now, and starts its zygote of warm
    kernels, which its first notebook waits for rather than start a cold kernel beside it
    (:meth:`~.preprocessors.execute.JudgedExecute.start_zygote`); its collector is settled
    (:func:`settle_collector`). What fails here fails again, and is said, when the first
    submission is graded."""
    settle_collector()
    _served[:] = [scratch, bundle]
    from autograd_course.grading.preprocessors.execute import JudgedExecute

    with contextlib.suppress(Exception):
        _, api = _course_of(bundle)
        JudgedExecute(config=api.config).start_zygote()


def grade_served(task: Task) -> Outcome:
    """Grade ``task`` in this grading child, with the bundle it serves."""
    return grade(task, _served[1])


def graded_here(task: Task) -> Outcome:
    """:func:`grade_served`, in a grading child; raises
    :class:`~.boundary.provision.KernelNotStarted` if a kernel of the submission did not start
    (the grader's failure: its outcome is not the student's)."""
    from autograd_course.grading.boundary.provision import KernelNotStarted, not_started

    not_started()  # forget an earlier submission's
    outcome = grade_served(task)
    why = not_started()
    if why:
        raise KernelNotStarted(why[-1])
    return outcome


def failed(task: Task, reason: str) -> Outcome:
    """The outcome of a submission that could not be graded, and why (its last line is the
    reason its grade record gives)."""
    return Outcome(task.submission, False, task.digest, error=reason)


_idle: list = []  # on a Dask worker: its grading children waiting for the next submission
_idle_lock = threading.Lock()


def grade_within(task: Task, bundle: Bundle, seconds: float, tries: int = 2) -> Outcome:
    """:func:`grade` in a grading child of this (Dask worker) process, which holds the
    budget of ``seconds`` (:mod:`.bounded`): a submission that outruns it fails for time (it
    is not tried again), and the child, with its kernels, is killed. A child that dies is
    replaced and the submission tried again, ``tries`` times in all. Children are kept for
    the next submission of the same bundle (with their unpacked course and zygote); those of
    other bundles end. A kernel that does not start is the grader's failure: the submission is
    tried again, and the last time :class:`~.boundary.provision.KernelNotStarted` is raised to
    the caller (the run stops, with no score written for it)."""
    from autograd_course.grading import bounded
    from autograd_course.grading.boundary.provision import KernelNotStarted

    for attempt in range(tries):
        with _idle_lock:
            child = None
            while _idle and child is None:
                child = _idle.pop()
                if child.bundle_key != bundle.key or not child.alive:
                    child.close()
                    child = None
        if child is None:
            child = bounded.Child(bounded.context(PRELOAD), serve, (bundle,), on_orphan=forget)
            child.bundle_key = bundle.key
            atexit.register(child.close)  # ends with the worker (if killed: _serve watches)
        try:
            outcome = child.call(graded_here, task, seconds=seconds)
        except bounded.Overrun as exc:
            return failed(task, str(exc))
        except bounded.Died:
            continue
        except KernelNotStarted:
            with _idle_lock:
                _idle.append(child)
            if attempt == tries - 1:
                raise
            continue
        except Exception as exc:  # noqa: BLE001 - grading itself failed in the child
            outcome = failed(task, bounded.said(exc))
        with _idle_lock:
            _idle.append(child)
        return outcome
    return failed(task, KILLED)


def grade(task: Task, bundle: Bundle) -> Outcome:
    """Autograde and give feedback on one submission in this worker's copy of the course."""
    student, assignment = task.submission.student, task.submission.assignment
    if assignment not in bundle.assignments:
        raise ValueError(f"the bundle prepares {', '.join(bundle.assignments)}, "
                         f"not {assignment}")
    folder, api = _course_of(bundle)
    for step in ("submitted", "autograded", "feedback"):
        shutil.rmtree(folder / step / student, ignore_errors=True)
    record.store(folder).clear(assignment, student)
    intake.write_files(folder / "submitted" / student / assignment, task.files)
    for name, size in task.oversized.items():  # graded as too large, as in the course itself
        intake.write_sparse(intake.inside(folder / "submitted" / student / assignment, name),
                            size)
    set_dates(api.coursedir, task)
    cwd = os.getcwd()
    os.chdir(folder)
    try:
        result = api.autograde(assignment, student, force=True, create=True)
        if result.get("success"):
            feedback = api.generate_feedback(assignment, student, force=True)
            if not feedback.get("success"):
                result = dict(feedback, success=False)
    except Exception as exc:  # nbgrader itself failed on this submission
        result = {"success": False, "error": repr(exc)}
    finally:
        os.chdir(cwd)
    outcome = Outcome(task.submission, bool(result.get("success")), task.digest)
    if not outcome.ok:
        outcome.error = (result.get("error") or result.get("log") or "")[-2000:]
        if task.misnamed:  # nbgrader skips an unknown notebook, then finds none to grade
            outcome.error += "\n" + task.misnamed
        return outcome
    _read_grades(api, outcome)
    outcome.autograded = read_files(folder / "autograded" / student / assignment)
    outcome.feedback = read_files(folder / "feedback" / student / assignment)
    for files in (outcome.autograded, outcome.feedback):  # what release_feedback reads
        for name in [k for k in files if k.split("/")[0] in intake.NBGRADER_FILES and "/" in k]:
            del files[name]  # a student's folder of nbgrader's file's name: never merged
        files.update(pages.nbgrader_files(files, bundle.settings.get("secret", ""), student,
                                          assignment, outcome.timestamp))
    outcome.records = {path.stem: path.read_text() for path in
                       sorted(record.store(folder).folder(assignment, student).glob("*.json"))}
    _late_records(outcome)
    return outcome


def set_dates(coursedir, task: Task) -> None:
    """Give the worker's gradebook (``coursedir``'s) the task's due date, extension and stored
    timestamp (before Autograde, which reads timestamp.txt over the timestamp): nbgrader's own
    ``AssignLatePenalties`` then computes the late penalty with the course's plugin, and the
    feedback shows it, as ``nbgrader autograde`` in the course would."""
    from datetime import timedelta

    from nbgrader.api import Gradebook

    student, assignment = task.submission.student, task.submission.assignment
    extension = None if task.extension is None else timedelta(seconds=task.extension)
    with warnings.catch_warnings(), Gradebook(coursedir.db_url, coursedir.course_id) as gb:
        warnings.simplefilter("ignore")
        gb.update_or_create_assignment(assignment, duedate=task.duedate)
        gb.update_or_create_student(student)
        gb.update_or_create_submission(assignment, student, extension=extension,
                                       timestamp=task.timestamp)


def _late_records(outcome: Outcome) -> None:
    """Put the submission's lateness into its grade records (nbgrader decides it after the
    record is written: ``AssignLatePenalties``)."""
    for notebook, text in outcome.records.items():
        found = record.GradeRecord.from_json(text)
        found.seconds_late = outcome.seconds_late
        found.late_penalty = outcome.penalties.get(notebook)
        outcome.records[notebook] = found.to_json()


def _read_grades(api, outcome: Outcome) -> None:
    student, assignment = outcome.submission.student, outcome.submission.assignment
    with api.gradebook as gb:
        submission = gb.find_submission(assignment, student)
        outcome.timestamp = submission.timestamp.isoformat() if submission.timestamp else None
        outcome.seconds_late = float(submission.total_seconds_late)
        outcome.feedback_state = pages.state(submission)
        for notebook in submission.notebooks:
            outcome.penalties[notebook.name] = notebook.late_submission_penalty
            for grade in notebook.grades:
                outcome.grades.append(dict(notebook=notebook.name, cell=grade.name,
                                           auto_score=grade.auto_score,
                                           needs_manual_grade=grade.needs_manual_grade))
            for comment in notebook.comments:
                outcome.comments.append(dict(notebook=notebook.name, cell=comment.name,
                                             auto_comment=comment.auto_comment))

