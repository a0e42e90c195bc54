"""Grading a class: worker processes on this machine, or tasks on a Dask cluster.

:func:`grade_class` is what ``autograd-course grade`` runs; :func:`summary_lines`, what it says
at the end. The two back ends, and why: docs/design.md#autograd_coursegradingrunnerpy. Rules:

- one run at a time (:func:`.gradebook.exclusive`); submissions already graded whose files have
  not changed are skipped, unless ``force``;
- the rest are graded as :mod:`.tasks` (the run's :class:`~.tasks.Bundle` goes to each worker
  once); each result is merged as it arrives (:meth:`.gradebook.Writer.merge`), in the main
  process only: workers share no files with the course;
- each submission, grading and feedback together, has one wall-clock budget
  (``c.JudgedExecute.submission_seconds``), held by the process that started its grading
  (:mod:`.bounded`): past it, its processes are killed, it gets 0 and the reason;
- a local grading child that dies is tried once more, alone; a second death gives 0 and a reason;
- a kernel that never answers is the grader's failure (:mod:`.boundary.provision`): tried once
  more, then the run stops (exit status 2, :class:`GraderFailure`) and writes no score for it
  or for any submission not merged yet;
- a Ctrl-C stops the run at once (:class:`Interrupted`): what was merged stays merged, whole,
  and the grading children and their kernels are killed.
"""

from __future__ import annotations

import collections
import contextlib
import functools
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from nbgrader.api import MissingEntry

from autograd_course.grading import bounded, gradebook, prepared, roster, tasks
from autograd_course.grading.course import Course, CourseError, Submission
from autograd_course.grading.tasks import Bundle, Outcome, Task
from autograd_course.grading.terminal import safe


@dataclass
class Summary:
    """What a grading run did."""

    outcomes: list[Outcome] = field(default_factory=list)
    skipped: list[Submission] = field(default_factory=list)  # graded before, unchanged
    warnings: list[str] = field(default_factory=list)  # the roster's (written already)
    #: With ``on_merged``: the gradebook, read again after it, still held each submission's
    #: marker as this run left or kept it, and the dates it was decided with.
    settled: bool = False


def budgets_of(course: Course, bundle: Bundle) -> dict[str, float]:
    """The wall-clock seconds a submission of each of ``bundle``'s assignments may take,
    grading and feedback together (:func:`.preprocessors.execute.submission_budget`)."""
    from autograd_course.grading.preprocessors.execute import submission_budget

    return {name: submission_budget(course.config, bundle.notebooks.get(name, 1))
            for name in bundle.assignments}


def bundle_for(course: Course, assignments: list[str], settings: dict) -> Bundle:
    """One prepared course for ``assignments``, packed, with the grading settings workers
    need.

    It has a SQLite gradebook of its own (:func:`.release.new_gradebook`), and is kept in the
    course's cache (:func:`.prepared.prepared_bundle`).
    The course's gradebook must know each assignment as this source/ defines it: one that
    does not know it yet gets it (as ``autograd-course release`` would do); one that knows
    other graded cells is refused (source/ changed since the release).
    """
    settings = {"secret": course.secret(), "hide_paths": [str(course.root)], **settings}
    archive, graded_cells = prepared.prepared_bundle(course, assignments)
    for name in assignments:
        gradebook.register(course, name, graded_cells[name])
    return Bundle(tuple(assignments), archive, settings,
                  {name: len(graded_cells[name]) for name in assignments})


class GraderFailure(CourseError):
    """The run stopped for a failure of the grader's own (its kernels do not start): no score
    was written for the submissions it had not merged (see the module)."""


class KernelsDoNotStart(Exception):
    """A submission's kernel did not start, twice (the reason of the last time)."""


class Interrupted(KeyboardInterrupt):
    """A Ctrl-C stopped the run: what was merged stays; the rest is graded by the next run."""

    def __init__(self, merged: int, left: int):
        super().__init__(f"{merged} submissions merged, {left} not graded (run grade again "
                         "to go on)")
        self.merged, self.left = merged, left


@contextlib.contextmanager
def _merging() -> Iterator[None]:
    """A SIGINT (Ctrl-C) that comes during the block is held until its end, then raised as
    KeyboardInterrupt: a submission's files, grades and marker are merged whole (in the main
    thread only, where Python delivers signals; elsewhere the block runs as it is)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: held.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if held:
        raise KeyboardInterrupt


def _interruptible(grade: Callable[..., Summary]) -> Callable[..., Summary]:
    """A Ctrl-C before grading began is :class:`Interrupted` too (nothing merged)."""

    @functools.wraps(grade)
    def run(course, submissions, **kwargs) -> Summary:
        try:
            return grade(course, submissions, **kwargs)
        except Interrupted:
            raise
        except KeyboardInterrupt:
            raise Interrupted(0, len(submissions)) from None

    return run


@_interruptible
def grade_class(course: Course, submissions: list[Submission], *, jobs: int = 1,
                scheduler: str | None = None, force: bool = False,
                on_done: Callable[[Outcome, int, int], None] | None = None,
                on_wait: Callable[[], None] | None = None,
                settings: dict | None = None, rename_notebook: bool = False,
                on_merged: Callable[[], None] | None = None,
                on_assignment: Callable[[str], None] | None = None) -> Summary:
    """Grade ``submissions`` (skipping the unchanged graded ones unless ``force``); merge
    each into the course as it comes. ``on_done(outcome, done, total)`` after each merge;
    ``on_assignment(name)`` once the last submission of ``name`` this run grades is merged
    (an assignment with none to grade is not named).
    ``rename_notebook``: a folder's only notebook, misnamed, is graded under the expected
    name (:func:`.tasks.make_task`). A submission is unchanged when its files, its due date
    and its extension are (the due date and extension are read from the gradebook here).
    ``on_merged()`` is called once every merge is done, the grading lock still held; the
    gradebook is then read again (:func:`_settled`: ``Summary.settled``).

    The course's roster (:mod:`.roster`), when there is one, is read first (one that cannot be
    read stops the run before anything is graded) and put into the gradebook, names and all.

    Results of one submission that cannot be merged (files that clash with a folder, a
    record that is not its own: OSError, ValueError) make that submission's failure, as one
    that could not be graded; the others are merged all the same.

    A submission whose kernel does not start is tried once more; a second time, the run stops
    with :class:`GraderFailure` (the grader's failure: nothing is written for it, nor for the
    submissions not merged yet). A Ctrl-C stops it with :class:`Interrupted`: what was merged
    stays, each submission whole; children and kernels are killed.
    """
    class_roster = roster.load(course)
    summary = Summary()
    with gradebook.exclusive(course, on_wait):
        if class_roster is not None:
            summary.warnings = roster.use(course, class_roster,
                                          [s.student for s in submissions])
        todo, decided = [], {}
        marks = {a: gradebook.graded(course, a) for a in {s.assignment for s in submissions}}
        dates = course.dates(submissions)
        for submission in submissions:
            task = tasks.make_task(course, submission, dates, rename=rename_notebook)
            decided[submission] = task.digest
            if not force and marks[submission.assignment].get(submission.student) == task.digest:
                summary.skipped.append(submission)
            else:
                todo.append(task)
        if not todo:
            _merged(course, summary, decided, dates, on_merged)
            return summary
        if not scheduler:  # the grading children's imports, while the bundle is made (the
            bounded.start_early(_context())  # CLI starts it before its own imports: a no-op)
        bundle = bundle_for(course, sorted({t.submission.assignment for t in todo}),
                            settings or {})
        budgets = budgets_of(course, bundle)
        left = collections.Counter(t.submission.assignment for t in todo)  # to merge
        results = (_on_cluster(todo, bundle, scheduler, budgets) if scheduler
                   else _on_this_machine(todo, bundle, jobs, budgets))
        try:
            with gradebook.Writer(course) as writer:
                for outcome in results:
                    with _merging():  # a Ctrl-C waits for the merge to be done whole
                        if outcome.ok:
                            try:  # results that cannot be merged fail this student alone
                                writer.merge(outcome)
                            except (OSError, ValueError) as exc:  # RecordError too
                                writer.gb.db.rollback()
                                outcome.ok = False
                                outcome.error = f"its results could not be merged: {exc}"
                        if not outcome.ok:
                            reason = (outcome.error.strip().splitlines()
                                      or ["it could not be graded"])[-1]
                            writer.record_failure(outcome, reason)
                        summary.outcomes.append(outcome)
                    if on_done:
                        on_done(outcome, len(summary.outcomes), len(todo))
                    left[outcome.submission.assignment] -= 1
                    if on_assignment and not left[outcome.submission.assignment]:
                        on_assignment(outcome.submission.assignment)
        except KernelsDoNotStart as exc:
            raise GraderFailure(f"the grader could not start a kernel: {exc}; no score was "
                                f"written for {len(todo) - len(summary.outcomes)} submissions "
                                "(they are graded when grade runs again)") from None
        except KeyboardInterrupt:
            raise Interrupted(len(summary.outcomes), len(todo) - len(summary.outcomes)) from None
        finally:
            results.close()  # its children and their kernels are stopped
        _merged(course, summary, decided, dates, on_merged)
    order = {s: i for i, s in enumerate(submissions)}
    summary.outcomes.sort(key=lambda o: order[o.submission])
    return summary


def _merged(course: Course, summary: Summary, decided: dict[Submission, str], dates: dict,
            on_merged: Callable[[], None] | None) -> None:
    """Once every merge is done, under the grading lock: ``on_merged()``, then
    ``summary.settled``: whether the gradebook, read again, still holds each submission's
    marker as ``decided`` (the digest it was graded or kept under) and the due date and
    extension of ``dates`` it was decided with (formgrader commits without the lock)."""
    if on_merged is None:
        return
    on_merged()
    fresh = course.dates(list(decided))
    marks = {a: gradebook.graded(course, a) for a in {s.assignment for s in decided}}
    summary.settled = all(
        fresh.get(s, (None, None))[:2] == dates.get(s, (None, None))[:2]
        and marks[s.assignment].get(s.student) == digest for s, digest in decided.items())


# -- worker processes on this machine ----------------------------------------------------
def _context():
    """How grading children start (:func:`.bounded.context`: a forkserver that has imported
    the grader and torch once)."""
    return bounded.context(tasks.PRELOAD)


def _on_this_machine(todo: list[Task], bundle: Bundle, jobs: int, budgets: dict[str, float]
                     ) -> Iterator[Outcome]:
    """Grade ``todo`` in at most ``jobs`` grading children (:class:`.bounded.Child`), one
    submission at a time each, each within its assignment's budget (``budgets``). A child
    that overruns is killed with its kernels (the submission fails for time) and one that
    dies (a signal, the OOM killer) is let go (its submission is tried once more, alone in a
    new child); either way a new child takes the next submission. A child that is done is
    given its next submission before its outcome is yielded: it grades while the caller
    merges."""
    from multiprocessing.connection import wait

    from autograd_course.grading.boundary.provision import KernelNotStarted

    ctx = _context()
    waiting = [(task, 1) for task in todo]  # a task, and how many times it may still die
    retry: list[tuple[Task, int]] = []
    idle: list[bounded.Child] = []
    busy: dict[bounded.Child, tuple[Task, int]] = {}
    restarted: set[str] = set()  # the digests of tasks whose kernel did not start once
    width = max(1, min(jobs, len(todo)))
    finished = False

    def dispatch() -> None:
        # a submission that killed its child is tried again alone, once nothing else runs
        if not waiting and retry and not busy:
            waiting.append(retry.pop(0))
        while waiting and len(busy) < width:
            task, lives = waiting.pop(0)
            child = idle.pop() if idle else bounded.Child(
                ctx, tasks.serve, (bundle,), on_orphan=tasks.forget)
            child.send(tasks.graded_here, (task,), budgets[task.submission.assignment])
            busy[child] = (task, lives)

    try:
        while waiting or retry or busy:
            dispatch()
            soonest = min(child.deadline for child in busy)
            wait([w for child in busy for w in child.waitables],
                 max(0.0, soonest - time.monotonic()))
            done: list[Outcome] = []
            failure: KernelsDoNotStart | None = None
            for child in list(busy):
                task, lives = busy[child]
                try:
                    outcome = child.receive(timeout=0)
                except bounded.Overrun as exc:
                    del busy[child]
                    done.append(tasks.failed(task, str(exc)))
                    continue
                except bounded.Died:
                    del busy[child]
                    if lives:
                        retry.append((task, lives - 1))
                    else:
                        done.append(tasks.failed(task, tasks.KILLED))
                    continue
                except KernelNotStarted as exc:  # the grader's failure: tried once more
                    del busy[child]
                    idle.append(child)
                    if task.digest in restarted:  # raised once the others are merged
                        failure = KernelsDoNotStart(str(exc))
                        break
                    restarted.add(task.digest)
                    waiting.insert(0, (task, lives))
                    continue
                except Exception as exc:  # noqa: BLE001 - grading itself failed in the child
                    outcome = tasks.failed(task, bounded.said(exc))
                if outcome is bounded.PENDING:  # still grading
                    continue
                del busy[child]
                idle.append(child)
                done.append(outcome)
            if done and failure is None:
                try:  # the children take their next submissions before the merges
                    dispatch()
                except Exception:
                    yield from done  # what was graded is merged, then the failure raised
                    raise
            yield from done
            if failure is not None:
                raise failure
        finished = True
    finally:
        if finished:
            bounded.close_all(idle)
        else:  # stopped (Ctrl-C, the grader's failure): every child at once, then reaped
            for child in [*busy, *idle]:
                child.kill_soon()
            for child in [*busy, *idle]:
                child.kill()


# -- a Dask cluster ---------------------------------------------------------------------------
def _on_cluster(todo: list[Task], bundle: Bundle, scheduler: str, budgets: dict[str, float]
                ) -> Iterator[Outcome]:
    """Each submission is a task that grades it in a grading child of its Dask worker, which
    holds its budget (:func:`.tasks.grade_within`)."""
    from distributed import Client
    from distributed import as_completed as dask_completed
    from distributed.scheduler import KilledWorker

    from autograd_course.grading.boundary.provision import KernelNotStarted

    with Client(scheduler, timeout=60) as client:
        # a task's result, not scattered data: a submission that kills workers kills the
        # copies they held, and the cluster then computes the bundle again
        shipped = client.submit(tasks.the_bundle, bundle, pure=False,
                                key=f"bundle-{bundle.key}-{os.urandom(4).hex()}")
        futures = {}
        for task in todo:
            s = task.submission
            key = f"grade-{s.assignment}-{s.student}-{task.digest[:12]}"
            futures[client.submit(tasks.grade_within, task, shipped, budgets[s.assignment],
                                  key=key, pure=False)] = task
        for future in dask_completed(futures):
            task = futures[future]
            try:
                yield future.result()
            except KernelNotStarted as exc:  # twice, on its worker: the grader's failure
                raise KernelsDoNotStart(str(exc)) from None
            except KilledWorker:
                yield Outcome(task.submission, False, task.digest,
                              error="KilledWorker: grading this submission killed its Dask "
                              "worker every time it was tried")
            except Exception as exc:  # noqa: BLE001 - the task failed on the cluster
                yield Outcome(task.submission, False, task.digest,
                              error=f"{type(exc).__name__}: {exc}")


def class_of(course: Course, assignment: str) -> list[Submission]:
    """Every submission of ``assignment`` the gradebook holds: the whole class, whoever this
    run graded."""
    with course.gradebook() as gb:
        try:
            found = gb.find_assignment(assignment).submissions
        except MissingEntry:
            return []
        return sorted(Submission(s.student.id, assignment) for s in found)


def records_of(course: Course, submissions: list[Submission]):
    """The grade records of ``submissions`` (one per notebook), from the course's store, and
    a warning for each file there that was skipped (malformed, or another's)."""
    from autograd_course.grading.record import store

    records, warnings = [], []
    for s in submissions:
        found, skipped = store(course.root).read(s.assignment, s.student)
        records += found
        warnings += skipped
    return records, warnings


# -- what a run says at its end --------------------------------------------------------------
def late_by(seconds: float) -> str:
    """``seconds`` late, readable: ``7 d 17 h late (666000 s)`` (the two largest units)."""
    if seconds < 60:
        return f"{seconds:g} s late"
    whole, parts = int(seconds), []
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60), ("s", 1)):
        if whole >= size or parts:
            parts.append(f"{whole // size} {unit}")
            whole %= size
    kept = [p for p in parts[:2] if not p.startswith("0 ")]
    return f"{' '.join(kept)} late ({seconds:.0f} s)"


def summary_lines(outcomes, records) -> list[str]:
    """What ``grade`` prints at the end of a run: its counts, then the failed, flagged,
    unsandboxed and troubled submissions of this run (``records``: their grade records)."""
    from autograd_course.grading.boundary import cgroups, sandbox
    from autograd_course.grading.preprocessors import NOT_SANDBOXED

    failed = [o for o in outcomes if not o.ok]
    flagged = [r for r in records if r.flags]
    not_graded = {(o.submission.student, o.submission.assignment) for o in failed}

    def problems(rec):  # the machine's, said once below, are not the notebook's
        return [note for note in rec.notes
                if note not in (NOT_SANDBOXED, sandbox.SECCOMP_OFF, cgroups.NO_CGROUP)]

    troubled = [r for r in records if (r.failure or problems(r)) and not r.flags
                and (r.student, r.assignment) not in not_graded]
    unsandboxed = [r for r in records if not r.sandboxed
                   and (r.student, r.assignment) not in not_graded]
    lines = [f"\n{len(outcomes)} submissions graded: {len(failed)} could not be graded (0 "
             f"points), {len(flagged)} flagged for review, {len(troubled)} graded with a "
             "problem"]
    if unsandboxed:
        lines.append(f"  NOT SANDBOXED: {len(unsandboxed)} notebooks were graded without "
                     "bubblewrap, with the grader's file rights (install bubblewrap, or use "
                     "--require-sandbox)")
    if unfiltered := sum(sandbox.SECCOMP_OFF in r.notes for r in records):
        lines.append(f"  SECCOMP OFF: {unfiltered} notebooks were graded without the kernel's "
                     "system-call filter (Linux on x86_64 with seccomp has it)")
    if uncounted := sum(cgroups.NO_CGROUP in r.notes for r in records):
        lines.append(f"  NO CGROUP: {uncounted} notebooks were graded without a cgroup per "
                     "kernel: memory Linux held for a kernel was not counted (grade as root "
                     "where cgroup v2, or v1's memory and pids hierarchies, are writable)")
    for outcome in outcomes:
        if outcome.ok and outcome.seconds_late > 0:
            penalty = sum(p or 0 for p in outcome.penalties.values())
            lines.append(f"  LATE    {outcome.submission.student}/"
                         f"{outcome.submission.assignment}: "
                         f"{late_by(outcome.seconds_late)}, penalty {penalty:g}")
    for outcome in failed:
        last = (outcome.error.strip().splitlines() or ["unknown error"])[-1]
        lines.append(f"  FAILED  {outcome.submission.student}/{outcome.submission.assignment}: "
                     f"{safe(last)}")
    for rec in flagged:
        lines.append(f"  FLAGGED {rec.student}/{rec.assignment}/{rec.notebook}: "
                     f"{safe(rec.flags[0])}"
                     + (f" (+{len(rec.flags) - 1} more)" if len(rec.flags) > 1 else ""))
    for rec in troubled:
        reason = rec.failure or "; ".join(problems(rec))
        lines.append(f"  PROBLEM {rec.student}/{rec.assignment}/{rec.notebook}: {safe(reason)}")
    return lines
