"""A learner's self-check: grade notebooks exactly as the instructor's autograde would.

``autograd-course check NOTEBOOK`` grades the notebook with nbgrader's own Autograde and the
course's config (the judge, the sandbox) in a private course that holds only its assignment.
That course is prepared once per version of the assignment (``nbgrader generate_assignment``
in a cached folder, keyed by a hash of the source and the config) and copied for each check,
so a check costs about what ``nbgrader validate`` costs. The hidden inputs are seeded by the
course's secret and the student's id, as in grading: the same notebook gets the same verdict
from ``check`` and from ``grade``.

The notebook is graded in a child process (:mod:`.bounded`), which this process kills when
the notebook's budget (``c.JudgedExecute.submission_seconds``) is spent: the check then fails
for time, with the reason, and the next notebook is checked. A kernel that never answers its
first request is the grader's failure (:mod:`.kernel`): the check is tried once more, then
fails with "the grader could not start a kernel: ..." and no verdict on the notebook.

The cache is only ever a shortcut. A prepared course carries a stamp (:data:`STAMP`: the
fingerprint, the course root it was made for, the package and nbgrader that made it) and is
used only when its stamp, its config, its notebooks and its gradebook are all what this course
needs now; anything else (a course folder copied or moved with its cache, a cache of an older
checkout, a gradebook left half-written) is rebuilt. A check that nbgrader still cannot grade
with a cached course is tried once more with a freshly built one, and a cache that cannot be
written is replaced by a private build for the one check.
"""

from __future__ import annotations

import atexit
import contextlib
import getpass
import hashlib
import json
import os
import shutil
import sqlite3
import stat
import tempfile
import time
import warnings
from pathlib import Path

from autograd_course import __version__
from autograd_course.grading import record
from autograd_course.grading.containment import STOPPED, GradingStopped, stopped
from autograd_course.grading.course import CONFIG_FILE, Course, CourseError
from autograd_course.grading.release import prepare
from autograd_course.grading.tasks import sqlite_url

CACHE = ".autograd-course-cache"
#: The file in a prepared course that says what it was made for (see :func:`stamp_of`).
STAMP = "prepared.json"
#: Seconds after which a ``.building-*`` folder in the cache is an interrupted build's.
STALE_BUILD_SECONDS = 3600


def fingerprint(course: Course, assignment: str) -> str:
    """A hash of what a prepared ``assignment`` is made of: the package's version, the
    course's config and the assignment's source files."""
    digest = hashlib.sha256(__version__.encode())
    digest.update((course.root / CONFIG_FILE).read_bytes())
    folder = course.directory("source", ".", assignment)
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(folder)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def stamp_of(course: Course, assignment: str, fingerprint: str) -> dict:
    """What a prepared course must have been made for to be used: this version of the
    assignment, this course root (a copied or moved course rebuilds its own), this package
    and this nbgrader."""
    import nbgrader

    return {"assignment": assignment, "fingerprint": fingerprint, "root": str(course.root),
            "package": str(Path(__file__).resolve().parent.parent),
            "nbgrader": nbgrader.__version__}


def _notebook_paths(course: Course, folder: Path, assignment: str) -> list[Path]:
    """Where ``folder`` (a prepared course) holds the assignment's source and release notebook,
    laid out as ``course`` lays them out."""
    paths = []
    for step in ("source", "release"):
        where = course.directory(step, ".", assignment) / f"{assignment}.ipynb"
        try:
            paths.append(folder / where.relative_to(course.root))
        except ValueError:  # a step outside the course root: not in a prepared course
            continue
    return paths


def _gradebook_knows(path: Path, assignment: str) -> bool:
    """Whether the SQLite gradebook ``path`` opens and holds ``assignment``'s notebook."""
    if not path.is_file():
        return False
    try:
        with contextlib.closing(sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro",
                                                uri=True)) as db:
            row = db.execute(
                "SELECT 1 FROM notebook JOIN assignment ON notebook.assignment_id = "
                "assignment.id WHERE assignment.name = ? AND notebook.name = ?",
                (assignment, assignment)).fetchone()
    except sqlite3.Error:
        return False
    return row is not None


def owned(path: Path) -> bool:
    """Whether ``path`` is a real folder of this user that no one else may write: the judge
    runs the test cells of a prepared course's gradebook, so one that another user could have
    written is not used."""
    info = path.lstat()
    return (stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid()
            and not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH))


def usable(folder: Path, course: Course, assignment: str, stamp: dict) -> bool:
    """Whether the prepared course ``folder`` can grade ``assignment`` for ``course`` now: this
    user's own (it and the cache), made for it (its stamp), with the course's config, both
    notebooks and a gradebook that holds the assignment."""
    try:
        if not (owned(folder.parent) and owned(folder)):
            return False
        if json.loads((folder / STAMP).read_text()) != stamp:
            return False
        if (folder / CONFIG_FILE).read_bytes() != (course.root / CONFIG_FILE).read_bytes():
            return False
        if not all(p.is_file() for p in _notebook_paths(course, folder, assignment)):
            return False
    except (OSError, ValueError):
        return False
    return _gradebook_knows(folder / "gradebook.db", assignment)


def _build(folder: Path, course: Course, assignment: str, stamp: dict) -> Path:
    """Prepare ``assignment`` in the new folder ``folder`` and stamp it."""
    prepare(folder, course, [assignment], db_url=sqlite_url(folder))
    (folder / STAMP).write_text(json.dumps(stamp, indent=1) + "\n")
    return folder


def _remove(path: Path, cache: Path) -> None:
    """Remove a prepared course: renamed out of the way first (a check that looks for it
    meanwhile builds its own), then deleted."""
    try:
        gone = Path(tempfile.mkdtemp(prefix=".stale-", dir=cache))
        path.rename(gone / path.name)
    except OSError:
        gone = path
    shutil.rmtree(gone, ignore_errors=True)


def _sweep(cache: Path, assignment: str, keep: Path) -> None:
    """Remove the other versions of ``assignment`` and what interrupted builds left."""
    for old in cache.glob(f"{assignment}-*"):
        if old != keep and len(old.name) == len(keep.name):  # an older version
            shutil.rmtree(old, ignore_errors=True)
    for old in [*cache.glob(".building-*"), *cache.glob(".stale-*")]:
        try:
            if time.time() - old.stat().st_mtime > STALE_BUILD_SECONDS:
                shutil.rmtree(old, ignore_errors=True)
        except OSError:
            continue


def prepared_course(course: Course, assignment: str, *, rebuild: bool = False,
                    scratch: Path | None = None) -> tuple[Path, bool]:
    """A course with ``assignment`` released and in its gradebook, and whether it was built
    just now. It is built once per version of the assignment and cached (the versions before
    it are removed); a cached one that is not :func:`usable` here, or any with ``rebuild``, is
    built again. Where the cache cannot be written, it is built in ``scratch`` (a folder the
    caller removes) when given."""
    cache = course.root / CACHE
    version = fingerprint(course, assignment)
    stamp = stamp_of(course, assignment, version)
    folder = cache / f"{assignment}-{version}"
    if not rebuild and usable(folder, course, assignment, stamp):
        return folder, False
    try:
        cache.mkdir(mode=0o755, exist_ok=True)  # not group-writable under any umask (owned)
        building = Path(tempfile.mkdtemp(prefix=f".building-{assignment}-", dir=cache))
    except OSError:  # a read-only course, or a cache of another user: build for this check
        if scratch is None:
            raise
        return _build(Path(tempfile.mkdtemp(prefix="prepared-", dir=scratch)), course,
                      assignment, stamp), True
    try:
        _build(building, course, assignment, stamp)
    except BaseException:
        shutil.rmtree(building, ignore_errors=True)
        raise
    if folder.exists() or folder.is_symlink():  # the cache's unusable one
        _remove(folder, cache)
    try:
        building.rename(folder)
    except OSError:  # another check put its own there meanwhile
        if usable(folder, course, assignment, stamp):
            shutil.rmtree(building, ignore_errors=True)
            return folder, True
        return building, True  # used as it is; swept later
    _sweep(cache, assignment, folder)
    return folder, True


def student_and_origin(notebook: Path, student: str | None) -> tuple[str, str]:
    """The student a notebook is checked as, and where that id came from: "given" (by the
    caller, ``--student``), "path" (read from submitted/STUDENT/...), "jupyterhub" (the
    JupyterHub user, as nbgrader takes it) or "user" (the OS account)."""
    if student:
        return student, "given"
    parts = Path(notebook).resolve().parts
    if "submitted" in parts and len(parts) - parts.index("submitted") >= 4:
        return parts[parts.index("submitted") + 1], "path"
    if os.environ.get("JUPYTERHUB_USER"):
        return os.environ["JUPYTERHUB_USER"], "jupyterhub"
    return getpass.getuser(), "user"


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
                cached, built = prepared_course(course, assignment, rebuild=rebuild,
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


# -- the budget: the notebook is graded in a child process that this one holds ---------------
_children: list = []  # this process's grading child, kept for the next notebook it checks
#: Preloaded by the forkserver that checking children fork from (torch, with the judge).
PRELOAD = ["autograd_course.grading.selfcheck", "autograd_course.grading.boundary.judge"]


def _start_child(scratch: str, notebooks: int | None, wait: bool) -> None:
    """A checking child's start: the parent's plan of warm kernels (:func:`.warm.plan`), and
    nbgrader's SQLAlchemy notes kept out of the learner's way, as in :func:`check`."""
    from autograd_course.grading.boundary import warm

    warm.plan(notebooks, wait)
    warnings.filterwarnings("ignore", module="nbgrader")


def _grade_bounded(course: Course, cached: Path, work: Path, notebook: Path, assignment: str,
                   student: str) -> tuple[list[record.GradeRecord] | None, str]:
    """:func:`_grade` in this process's grading child (:class:`.bounded.Child`, started at
    the first check and kept, with its zygote, for the next), within the submission's budget
    (:func:`.preprocessors.execute.submission_budget`): past it, the child and its kernels are
    killed and the check fails for time (RuntimeError). A child that dies is replaced once;
    a kernel that does not start is tried once more, then :class:`~.kernel.KernelNotStarted`."""
    from autograd_course.grading import bounded
    from autograd_course.grading.boundary import warm
    from autograd_course.grading.boundary.provision import KernelNotStarted
    from autograd_course.grading.preprocessors.execute import submission_budget

    seconds = submission_budget(course.config, 1)
    deaths = kernel_failures = 0
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
    with contextlib.chdir(work):
        result = NbGraderAPI(config=checking.config).autograde(assignment, student,
                                                               force=True, create=True)
    if why := not_started():  # no verdict: the kernel never answered (see .kernel)
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
        error = [line.strip() for line in record.strip_ansi(cell["raw_error"]).splitlines()
                 if line.strip()]
        lines.append(f"FAIL {name_of(cell['source'])}: "
                     f"{record.shorten(error[-1] if error else 'failed', 300)}")
    if not lines:
        lines.append("every visible test passes; the hidden tests run when it is graded "
                     f"(or with: autograd-course check {notebook.name})")
    elif failed:
        lines.append(f"{len(failed)} test cell(s) fail their visible tests")
    return lines
