"""Grade a whole class in parallel with nbgrader, into one gradebook, with identical scores.

nbgrader grades one submission at a time, and several ``nbgrader autograde`` processes on one
SQLite gradebook fail with "database is locked" (nbgrader issue #174). Here each worker
process has a private course directory (the course's config, source/ and release/, and a
copy of the gradebook) and runs nbgrader's own Autograde and GenerateFeedback in-process on
one submission at a time. The main process alone writes the course's gradebook: it copies
each worker's grades and comments into it and moves the autograded notebook, its grade
record and its feedback into the course. The kernel work, which dominates, runs in parallel;
the scores are those nbgrader computes, so a serial ``nbgrader autograde`` gives the same.
"""

from __future__ import annotations

import multiprocessing
import os
import shutil
import tempfile
import time
import warnings
from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path

from nbgrader.api import Gradebook, MissingEntry

from autograd_course.grading import record
from autograd_course.grading.preprocessors import read_secret

GRADEBOOK = "gradebook.db"


@dataclass(frozen=True)
class Submission:
    """One student's submitted assignment: ``submitted/STUDENT/ASSIGNMENT/``."""

    student: str
    assignment: str


@dataclass
class Outcome:
    """What grading one submission gave: the grades to merge, or why it could not run."""

    submission: Submission
    ok: bool
    seconds: float
    timestamp: str | None = None
    grades: list[dict] = field(default_factory=list)
    comments: list[dict] = field(default_factory=list)
    error: str = ""
    workdir: str = ""


def find_submissions(root: Path, assignments: Iterable[str], students: Iterable[str] = ()
                     ) -> list[Submission]:
    """The submissions under ``root/submitted`` for ``assignments`` (and ``students``, if any)."""
    wanted = set(students)
    found = []
    for assignment in assignments:
        for folder in sorted((Path(root) / "submitted").glob(f"*/{assignment}")):
            student = folder.parent.name
            if folder.is_dir() and (not wanted or student in wanted):
                found.append(Submission(student, assignment))
    return found


# -- worker side ------------------------------------------------------------------------
_worker: dict = {}


def _start_worker(root: str, assignments: list[str], gradebook: str, tmp: str,
                  settings: dict) -> None:
    """Set up this worker's private course directory (runs once per worker process)."""
    from nbgrader.apps import NbGraderAPI
    from nbgrader.apps.baseapp import NbGrader

    work = Path(tempfile.mkdtemp(prefix="worker-", dir=tmp))
    # Kernels and nbgrader write warnings to stderr; keep them in the worker's log so that
    # the command's own output (progress, summary) stays readable.
    log = open(work / "worker.log", "w")  # noqa: SIM115 - open for the worker's lifetime
    os.dup2(log.fileno(), 2)
    warnings.simplefilter("ignore")
    shutil.copy2(Path(root) / "nbgrader_config.py", work / "nbgrader_config.py")
    for name in assignments:
        for kind in ("source", "release"):
            if (Path(root) / kind / name).is_dir():
                shutil.copytree(Path(root) / kind / name, work / kind / name)
    shutil.copy2(gradebook, work / GRADEBOOK)
    os.chdir(work)
    app = NbGrader()
    app.load_config_file()
    app.config.CourseDirectory.root = str(work)
    # Hidden inputs are seeded by the course's secret, not by this private copy's.
    app.config.JudgedExecute.secret = read_secret(root)
    app.config.JudgedExecute.hide_paths = [str(Path(root).resolve())]
    for name, value in settings.items():
        setattr(app.config.JudgedExecute, name, value)
    _worker.update(root=Path(root), work=work, api=NbGraderAPI(config=app.config))


def _grade_in_worker(submission: Submission) -> Outcome:
    """Autograde and generate feedback for one submission in this worker's course."""
    start = time.perf_counter()
    root, work, api = _worker["root"], _worker["work"], _worker["api"]
    student, assignment = submission.student, submission.assignment
    target = work / "submitted" / student / assignment
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(root / "submitted" / student / assignment, target)
    try:
        result = api.autograde(assignment, student, force=True, create=True)
    except Exception as exc:  # nbgrader itself failed on this submission
        result = {"success": False, "error": repr(exc)}
    if result.get("success"):
        feedback = api.generate_feedback(assignment, student, force=True)
        if not feedback.get("success"):
            result = dict(feedback, success=False)
    outcome = Outcome(submission, bool(result.get("success")), 0.0, workdir=str(work))
    if outcome.ok:
        _read_grades(work / GRADEBOOK, outcome)
    else:
        outcome.error = (result.get("error") or result.get("log") or "")[-2000:]
    outcome.seconds = time.perf_counter() - start
    return outcome


def _read_grades(gradebook: Path, outcome: Outcome) -> None:
    student, assignment = outcome.submission.student, outcome.submission.assignment
    with Gradebook(f"sqlite:///{gradebook}") as gb:
        submission = gb.find_submission(assignment, student)
        outcome.timestamp = submission.timestamp.isoformat() if submission.timestamp else None
        for notebook in submission.notebooks:
            for grade in notebook.grades:
                outcome.grades.append(dict(notebook=notebook.name, cell=grade.name,
                                           auto_score=grade.auto_score,
                                           needs_manual_grade=grade.needs_manual_grade))
            for comment in notebook.comments:
                outcome.comments.append(dict(notebook=notebook.name, cell=comment.name,
                                             auto_comment=comment.auto_comment))


# -- main side --------------------------------------------------------------------------
def merge(root: Path, outcome: Outcome) -> None:
    """Put one worker's result into the course: files, then grades and comments."""
    from datetime import datetime

    student, assignment = outcome.submission.student, outcome.submission.assignment
    work = Path(outcome.workdir)
    for kind in ("autograded", "feedback"):
        source = work / kind / student / assignment
        dest = Path(root) / kind / student / assignment
        if dest.exists():
            shutil.rmtree(dest)
        if source.exists():
            shutil.copytree(source, dest)
    with Gradebook(f"sqlite:///{Path(root) / GRADEBOOK}") as gb:
        gb.update_or_create_student(student)
        timestamp = datetime.fromisoformat(outcome.timestamp) if outcome.timestamp else None
        if timestamp is not None:
            gb.update_or_create_submission(assignment, student, timestamp=timestamp)
        else:
            gb.update_or_create_submission(assignment, student)
        for item in outcome.grades:
            grade = gb.find_grade(item["cell"], item["notebook"], assignment, student)
            grade.auto_score = item["auto_score"]
            grade.needs_manual_grade = item["needs_manual_grade"]
        for item in outcome.comments:
            try:
                comment = gb.find_comment(item["cell"], item["notebook"], assignment, student)
            except MissingEntry:
                continue
            comment.auto_comment = item["auto_comment"]
        gb.db.commit()


def grade_class(root: Path, submissions: list[Submission], jobs: int,
                on_done: Callable[[Outcome, int, int], None] | None = None,
                while_grading: Callable[[], object] | None = None,
                settings: dict | None = None) -> list[Outcome]:
    """Grade ``submissions`` with ``jobs`` worker processes; merge each result as it comes.

    The course's gradebook must already hold the assignments (``autograd-course release``).
    ``on_done(outcome, done, total)`` is called in the main process after each merge;
    ``while_grading()`` once every worker has been forked (so a thread it starts is safe);
    ``settings`` are JudgedExecute settings for this run (e.g. ``require_sandbox``).
    A submission that kills its worker process (a signal to the parent, the OOM killer)
    stops only that pool: the submissions it left unfinished are graded again, one pool
    each, and only one that kills its worker again is reported as not graded.
    """
    root = Path(root).resolve()
    warnings.filterwarnings("ignore", module="nbgrader")  # SQLAlchemy's notes on nbgrader's API
    outcomes: list[Outcome] = []
    if not submissions:
        return outcomes

    def finish(outcome: Outcome) -> None:
        if outcome.ok:
            merge(root, outcome)
        else:
            record_failure(root, outcome)
        outcomes.append(outcome)
        if on_done:
            on_done(outcome, len(outcomes), len(submissions))

    with tempfile.TemporaryDirectory(prefix="autograd-course-grade-") as tmp:
        shutil.copy2(root / GRADEBOOK, Path(tmp) / GRADEBOOK)
        read_secret(root)  # made once here, before the workers read it
        pool = _Pool(root, sorted({s.assignment for s in submissions}), Path(tmp), settings or {})
        unfinished = pool.run(submissions, jobs, finish, while_grading)
        for submission in unfinished:  # the pool broke: again, each alone
            for left in pool.run([submission], 1, finish):
                finish(Outcome(left, False, 0.0, error="the grading worker was killed while "
                               "grading this submission (a signal, or out of memory)"))
    order = {s: i for i, s in enumerate(submissions)}
    return sorted(outcomes, key=lambda o: order[o.submission])


def record_failure(root: Path, outcome: Outcome) -> None:
    """Give a submission that could not be graded 0 points, and a grade record saying why."""
    student, assignment = outcome.submission.student, outcome.submission.assignment
    reason = (outcome.error.strip().splitlines() or ["it could not be graded"])[-1]
    folder = Path(root) / "autograded" / student / assignment
    with Gradebook(f"sqlite:///{Path(root) / GRADEBOOK}") as gb:
        gb.update_or_create_student(student)
        submission = gb.update_or_create_submission(assignment, student)
        for notebook in submission.notebooks:
            questions = []
            for grade in notebook.grades:
                grade.auto_score, grade.needs_manual_grade = 0, False
                questions.append(dict(question=grade.name, points=grade.max_score, score=0,
                                      passed=False, message=f"NotGraded: {reason}"))
            record.GradeRecord(student=student, assignment=assignment, notebook=notebook.name,
                               questions=questions, failure=reason
                               ).write(folder / f"{notebook.name}{record.SUFFIX}")
        gb.db.commit()


class _Pool:
    """Worker processes with private courses under ``tmp`` (removed with it)."""

    def __init__(self, root: Path, assignments: list[str], tmp: Path, settings: dict):
        self.initargs = (str(root), assignments, str(tmp / GRADEBOOK), str(tmp), settings)

    def run(self, submissions, jobs, finish, started=None) -> list[Submission]:
        """Grade ``submissions``; return those left unfinished because the pool broke."""
        unfinished = []
        context = multiprocessing.get_context("fork")
        with ProcessPoolExecutor(max_workers=max(1, min(jobs, len(submissions))),
                                 mp_context=context, initializer=_start_worker,
                                 initargs=self.initargs) as pool:
            futures = {pool.submit(_grade_in_worker, s): s for s in submissions}
            if started:  # with "fork", the pool starts all its workers at the first submit
                started()
            for future in as_completed(futures):
                try:
                    finish(future.result())
                except BrokenProcessPool:
                    unfinished.append(futures[future])
        return unfinished


def records_of(root: Path, submissions: list[Submission]) -> list[record.GradeRecord]:
    """The grade records of ``submissions`` (one per notebook), read from autograded/."""
    found = []
    for s in submissions:
        folder = Path(root) / "autograded" / s.student / s.assignment
        found.extend(record.GradeRecord.read(p) for p in sorted(folder.glob(f"*{record.SUFFIX}")))
    return found


def export_grades(root: Path, dest: Path) -> None:
    """Write the gradebook's grades to ``dest`` as ``nbgrader export`` does (its CSV plugin)."""
    from nbgrader.plugins import CsvExportPlugin

    plugin = CsvExportPlugin()
    plugin.to = str(dest)
    with Gradebook(f"sqlite:///{Path(root) / GRADEBOOK}") as gb:
        plugin.export(gb)
