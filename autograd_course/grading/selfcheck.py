"""A learner's self-check: grade notebooks exactly as the instructor's autograde would.

``autograd-course check NOTEBOOK`` grades the notebook with nbgrader's own Autograde and the
course's config (the judge, the sandbox) in a private course that holds only its assignment.
That course is prepared once per version of the assignment and cached (:mod:`.prepared`), and
copied for each check, so a check costs about what ``nbgrader validate`` costs. The hidden
inputs are seeded by the course's secret and the student's id, as in grading: the same
notebook gets the same verdict from ``check`` and from ``grade``.

The notebook is graded in a child process (:mod:`.bounded`), which this process kills when
the notebook's budget (``c.JudgedExecute.submission_seconds``) is spent: the check then fails
for time, with the reason, and the next notebook is checked. A kernel that never answers its
first request is the grader's failure (:mod:`.boundary.provision`): the check is tried once
more, then fails with "the grader could not start a kernel: ..." and no verdict on the notebook.

A check that nbgrader cannot grade with a cached course is tried once more with a freshly
built one, and a cache that cannot be written is replaced by a private build for the one check.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import pwd
import re
import shutil
import stat
import tempfile
import threading
import warnings
from collections.abc import Mapping
from pathlib import Path

from autograd_course.grading import engines, prepared, record
from autograd_course.grading.containment import STOPPED, GradingStopped, stopped
from autograd_course.grading.course import Course, CourseError
from autograd_course.grading.tasks import settle_collector, sqlite_url
from autograd_course.grading.terminal import safe
from autograd_course.kernel import wrapping


def student_and_origin(notebook: Path, student: str | None,
                       environ: Mapping[str, str] | None = None) -> tuple[str, str]:
    """The student a notebook is checked as, and where that id came from: "given" (by the
    caller, ``--student``), "path" (read from submitted/STUDENT/...), "jupyterhub" (the
    JupyterHub user, as nbgrader takes it) or "user" (the OS account, as
    :func:`getpass.getuser` reads it), from ``environ`` (this process's by default)."""
    environ = os.environ if environ is None else environ
    if student:
        return student, "given"
    parts = Path(notebook).resolve().parts
    if "submitted" in parts and len(parts) - parts.index("submitted") >= 4:
        return parts[parts.index("submitted") + 1], "path"
    if environ.get("JUPYTERHUB_USER"):
        return environ["JUPYTERHUB_USER"], "jupyterhub"
    for name in ("LOGNAME", "USER", "LNAME", "USERNAME"):  # getpass.getuser's order
        if environ.get(name):
            return environ[name], "user"
    return pwd.getpwuid(os.getuid()).pw_name, "user"  # and its last resort


def student_of(notebook: Path, student: str | None) -> str:
    """The student a notebook is checked as: given, or read from submitted/STUDENT/..., or
    the user's name (as nbgrader takes it: JUPYTERHUB_USER, else the OS account)."""
    return student_and_origin(notebook, student)[0]


def nbgrader_failure(result: dict) -> str:
    """Why nbgrader's API could not grade, in one line: the reason of a notebook whose grading
    stopped (:class:`~.containment.GradingStopped`), else its first specific error, not its
    closing "Please see the above traceback"."""
    generic = ("There was an error processing", "Please see the", "Traceback")
    log = record.strip_ansi(result.get("log") or "")
    stopped_by = GradingStopped.__module__ + "." + GradingStopped.__name__ + ": "
    for line in log.splitlines():  # a logged traceback's lines, indented by nbgrader
        if line.strip().startswith(stopped_by):
            return line.strip().removeprefix(stopped_by)
    for line in log.splitlines():
        if line.startswith("[ERROR]"):
            text = line.removeprefix("[ERROR]").strip()
            if text and not text.startswith(generic):
                return text
    lines = [line.strip() for line in record.strip_ansi(result.get("error") or "").splitlines()
             if line.strip() and "Please see the" not in line]
    return lines[-1] if lines else "nbgrader could not grade it (no message)"


def check(root: Path, notebook: Path, student: str | None = None) -> list[record.GradeRecord]:
    """Grade ``notebook`` (an assignment's notebook, named as in source/) alone."""
    warnings.filterwarnings("ignore", module="nbgrader")  # SQLAlchemy's notes on nbgrader's API

    course = Course.load(root)
    notebook = Path(notebook).resolve()
    assignment, student = notebook.stem, student_of(notebook, student)
    if not record.NAME.match(student):
        raise RuntimeError(f"{student!r} is not a student id (letters, digits and . _ @ + -): "
                           "give one with --student")
    with tempfile.TemporaryDirectory(prefix="autograd-course-check-") as tmp:
        scratch = Path(tmp)
        problem = ""
        for attempt, rebuild in enumerate((False, True)):
            try:
                cached, built = prepared.prepared_course(course, assignment, rebuild=rebuild,
                                                         scratch=scratch)
                found, problem = _grade_bounded(course, cached, scratch / f"course-{attempt}",
                                                notebook, assignment, student)
            except (OSError, shutil.Error, CourseError) as exc:  # a cached course that
                found, built = None, False  # vanished meanwhile, or is not one any more
                problem = f"{type(exc).__name__}: {exc}"
            except (Exception, KeyboardInterrupt):
                raise
            except BaseException as exc:  # noqa: BLE001 - SystemExit...: this notebook's alone
                raise RuntimeError(str(stopped(exc, "grading"))) from None
            if found:
                return found
            if built or problem.startswith(STOPPED):  # a fresh build would not help: the
                break  # course was new, or the notebook's own grading stopped
        raise RuntimeError(problem)


#: The columns of a line of ``check``'s report: JupyterLab breaks a longer line of a cell's
#: output anywhere, mid-word, so a longer entry goes on in lines of its own (:func:`wrapped`).
WIDTH = 90
#: How much deeper than its entry a wrapped entry's next lines are indented.
MORE = "    "


def wrapped(entry: str) -> list[str]:
    """The lines of one entry of the report (``"  FAIL q1: 0/2  message"``): broken at spaces
    to :data:`WIDTH` columns (a longer word stays whole), every line after the first indented
    :data:`MORE` deeper than the entry, its own line breaks kept
    (:func:`~autograd_course.kernel.wrapping.wrapped`). The words are the entry's.

    >>> lines = wrapped("  FAIL q1: 0/2  " + "word " * 20)
    >>> [len(line) for line in lines], lines[1]
    ([90, 30], '      word word word word word')
    """
    more = re.match(r" *", entry)[0] + MORE
    first, *rest = entry.split("\n")
    entry = "\n".join([first, *(more + part.lstrip(" ") for part in rest if part.strip())])
    return wrapping.wrapped(entry, WIDTH, MORE).split("\n")


def result_lines(records: list[record.GradeRecord], stem: str) -> list[str]:
    """What ``check`` prints of a notebook's grade records (``stem``: its name): each
    question's verdict, the errors, the notes and the total, each entry :func:`wrapped`; text
    from the notebook made :func:`~.terminal.safe`."""
    return [line for entry in _result_entries(records, stem) for line in wrapped(entry)]


def _result_entries(records: list[record.GradeRecord], stem: str) -> list[str]:
    lines = []
    for rec in records:
        if rec.notebook != stem:
            lines.append(f"  {safe(rec.notebook)}.ipynb:")
        for q in rec.questions:
            mark = "PASS" if q["passed"] else "FAIL"
            lines.append(f"  {mark} {q['question']}: {q['score'] or 0:g}/{q['points']:g}"
                         + (f"  {safe(q['message'])}" if q["message"] else ""))
        for line in rec.errors:
            if line.endswith(": NotImplementedError"):
                continue  # the blank template: its question already says "not answered"
            lines.append(f"  error in {safe(line)}")
        for line in rec.notes + ([rec.failure] if rec.failure else []) + rec.flags:
            lines.append(f"  note: {safe(line)}")
        lines.append(f"  total: {rec.score:g}/{rec.max_score:g}")
    return lines


# -- the budget: the notebook is graded in a child process that this one holds ---------------
_children: list = []  # this process's grading child, kept for the next notebook it checks
#: Set (by :func:`abandon`) when the one who asked the check in progress went away.
_abandoned = threading.Event()
#: Why a check whose asker went away stopped.
ABANDONED = "the check was stopped: the one who asked it went away"


def abandon() -> None:
    """Stop the check in progress, from another thread (the warm check's service, whose asker
    hung up): its grading child and kernels are killed, and the check fails with
    :data:`ABANDONED` instead of being tried again."""
    _abandoned.set()
    for child in _children:
        child.kill_soon()


def drop_child() -> None:
    """Kill this process's grading child, with its zygote and kernels (the next check starts a
    new one); for a process that stops, or one whose child's state is in doubt."""
    for child in _children:
        child.kill()
    _children.clear()
#: Preloaded by the forkserver that checking children fork from (torch, with the judge).
PRELOAD = ["autograd_course.grading.selfcheck", "autograd_course.grading.boundary.judge"]


def _start_child(scratch: str, notebooks: int | None, wait: bool) -> None:
    """A checking child's start: the parent's plan of warm kernels (:func:`.warm.plan`),
    nbgrader's SQLAlchemy notes kept out of the learner's way, as in :func:`check`, and its
    collector settled for many checks (:func:`.tasks.settle_collector`)."""
    from autograd_course.grading.boundary import warm

    settle_collector()
    warm.plan(notebooks, wait)
    warnings.filterwarnings("ignore", module="nbgrader")


def prewarm(root: Path) -> bool:
    """Start the zygote of this process's grading child now if its first check did not (the
    warm check's service, once its first check is answered: :mod:`.checkserver`), without
    waiting for it, and plan warm kernels for a child started later; whether there is a child
    to start it in. A later check asked while the zygote still starts waits for it (a cold
    kernel would import torch again beside it), as a grading worker's notebooks do, within
    :data:`.preprocessors.execute.ZYGOTE_WAIT_SECONDS`; so does a child started after the
    first was dropped."""
    from autograd_course.grading.boundary import warm

    warm.plan(None, wait=True)
    if not (_children and _children[0].alive):
        return False
    try:
        _children[0].call(_start_zygote, str(root), seconds=60)
    except Exception:  # noqa: BLE001 - no zygote now: the next check starts it
        return False
    return True


def _start_zygote(root: str) -> None:
    """In a checking child: plan warm kernels, waited for, and start the zygote for a course
    like ``root``'s (the sandbox hides ``root``, as each check's kernel does)."""
    from autograd_course.grading.boundary import warm

    warm.plan(None, wait=True)
    warm.zygote([Path(root)], most=0)  # only started (or found): the next check waits


def _grade_bounded(course: Course, cached: Path, work: Path, notebook: Path, assignment: str,
                   student: str) -> tuple[list[record.GradeRecord] | None, str]:
    """:func:`_grade` in this process's grading child (:class:`.bounded.Child`, started at
    the first check and kept, with its zygote, for the next), within the submission's budget
    (:func:`.preprocessors.execute.submission_budget`): past it, the child and its kernels are
    killed and the check fails for time (RuntimeError). A child that dies is replaced once;
    a kernel that does not start is tried once more, then
    :class:`~.boundary.provision.KernelNotStarted`."""
    from autograd_course.grading import bounded
    from autograd_course.grading.boundary import warm
    from autograd_course.grading.boundary.provision import KernelNotStarted
    from autograd_course.grading.preprocessors.execute import submission_budget

    seconds = submission_budget(course.config, 1)
    deaths = kernel_failures = 0
    _abandoned.clear()
    while True:
        if not (_children and _children[0].alive):
            plan = warm._plan  # noqa: SLF001 - the plan this process was given, for the child
            _children[:] = [bounded.Child(bounded.context(PRELOAD), _start_child,
                                          (plan.notebooks, plan.wait))]
            atexit.register(_children[0].close)  # else multiprocessing waits for it at exit
        try:
            return _children[0].call(_grade, course, cached, work, notebook, assignment,
                                     student, seconds=seconds)
        except bounded.Overrun as exc:
            raise RuntimeError(str(exc)) from None
        except bounded.Died:
            if _abandoned.is_set():
                raise RuntimeError(ABANDONED) from None
            deaths += 1
            if deaths == 2:
                raise RuntimeError("the grading process died twice while it graded this "
                                   "notebook (a signal, or out of memory)") from None
        except KernelNotStarted as exc:  # the grader's failure, not the notebook's: once more
            kernel_failures += 1
            if kernel_failures == 2:
                raise KernelNotStarted(f"the grader could not start a kernel: {exc} (tried "
                                       "twice; the notebook was not graded)") from None
        work = work.with_name(f"{work.name}-again")  # the one tried holds what it left


def _grade(course: Course, cached: Path, work: Path, notebook: Path, assignment: str,
           student: str) -> tuple[list[record.GradeRecord] | None, str]:
    """Autograde ``notebook`` in ``work``, a copy of the prepared course ``cached``; return its
    grade records, or None and why nbgrader could not grade it."""
    from nbgrader.apps import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory

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
    from autograd_course.grading.boundary.provision import KernelNotStarted, not_started

    not_started()  # forget an earlier check's
    engines.share(private["db_url"])
    try:
        with contextlib.chdir(work):
            result = NbGraderAPI(config=checking.config).autograde(assignment, student,
                                                                   force=True, create=True)
    finally:
        engines.release(private["db_url"])
    if why := not_started():  # no verdict: the kernel never answered (see .boundary.provision)
        raise KernelNotStarted(why[-1])
    found, _ = record.store(work).read(assignment, student)
    if result.get("success") and found:
        return found, ""
    return None, nbgrader_failure(result)


# -- validate: the visible tests, one line per question ------------------------------------
def _first_line(source: str) -> str:
    return record.shorten(next((line for line in source.splitlines() if line.strip()), ""), 50)


@contextlib.contextmanager
def _stderr_kept(into: Path):
    """Send what is written to file descriptor 2 (the kernel's log lines, nbgrader's) to the
    file ``into`` for the block."""
    import sys

    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(into, "wb") as sink:
            os.dup2(sink.fileno(), 2)
            yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)


def _last_error(raw: str) -> str:
    """The error a failed cell's output ends with, in one line: its last line that is not
    indented (a traceback's ``Type: message``), with the indented lines after it (a failed
    check's message, broken into lines in the notebook: :func:`.kernel.wrapping.wrapped`)."""
    lines = [line.rstrip() for line in record.strip_ansi(raw).splitlines() if line.strip()]
    start = next((i for i in range(len(lines) - 1, -1, -1) if not lines[i][:1].isspace()), 0)
    return " ".join(line.strip() for line in lines[start:])


def validate(course: Course, notebook: Path) -> list[str]:
    """Run ``notebook``'s visible tests as ``nbgrader validate`` does (nbgrader's Validator,
    with the course's config: every cell in a kernel of its own, the test cells too) and say
    in one line each what fails: a test cell by its grade id and its error's last line (a
    question not answered yet reads "not answered", see :class:`.checks.NotAnswered`), instead
    of nbgrader's printing of each failing cell's source and whole traceback."""
    import nbformat
    from nbgrader.validator import Validator

    warnings.filterwarnings("ignore", module="nbgrader")
    notebook = Path(notebook).resolve()
    names = {}
    for cell in nbformat.read(notebook, as_version=4).cells:
        meta = cell.metadata.get("nbgrader", {}) if isinstance(cell.metadata, dict) else {}
        if isinstance(meta, dict) and isinstance(meta.get("grade_id"), str):
            names.setdefault(cell.source.strip(), meta["grade_id"])

    def name_of(source: str) -> str:
        return names.get(source.strip()) or f"the cell `{_first_line(source)}`"

    with tempfile.TemporaryDirectory(prefix="autograd-course-validate-") as tmp:
        log = Path(tmp) / "stderr"
        try:
            with _stderr_kept(log):
                results = Validator(config=course.config).validate(str(notebook))
        except Exception as exc:  # noqa: BLE001 - nbgrader could not run it: say why
            tail = " / ".join(log.read_text(errors="replace").strip().splitlines()[-3:])
            return [f"could not be validated: {type(exc).__name__}: "
                    f"{record.shorten(str(exc), 300)}" + (f" ({tail[-300:]})" if tail else "")]
    lines = []
    for cell in results.get("type_changed", []):
        lines.append(f"CHANGED {name_of(cell['source'])} is now a {cell['old_type']} cell: "
                     f"change it back to a {cell['new_type']} cell (nothing else was run)")
    for cell in results.get("changed", []):
        lines.append(f"CHANGED {name_of(cell['source'])}: this locked cell was edited. Grading "
                     "uses the original, so undo the change (Edit > Undo, or copy it from "
                     "release/) before you trust these results")
    failed = results.get("failed", [])
    for cell in failed:
        lines.append(f"FAIL {name_of(cell['source'])}: "
                     f"{record.shorten(_last_error(cell['raw_error']) or 'failed', 300)}")
    if not lines:
        lines.append("every visible test passes; the hidden tests run when it is graded "
                     f"(or with: autograd-course check {notebook.name})")
    elif failed:
        lines.append(f"{len(failed)} test cell(s) fail their visible tests")
    return lines
