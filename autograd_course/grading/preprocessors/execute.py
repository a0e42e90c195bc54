"""Running a submission: the student's cells in a sandboxed kernel, the test cells in the judge."""

from __future__ import annotations

import importlib
import os
import shutil
import sys
import tempfile
import threading
from pathlib import Path

import nbformat
from nbgrader import utils
from nbgrader.coursedir import CourseDirectory
from traitlets import Bool, Integer, List, Unicode

from autograd_course.grading import record, sandbox, scan
from autograd_course.grading.course import SECRET_FILE, read_secret
from autograd_course.grading.kernel import KernelPlan, SandboxedExecute

from .cells import META, cell_role, course_paths, error_output, grade_id, short

PASSED = "All tests passed."
NOT_SANDBOXED = ("not sandboxed: the student's kernel ran without bubblewrap, with the "
                 "grader's file rights")


class _LazyJudge:
    """The judge module, imported in a thread: torch loads while the kernel starts."""

    def __init__(self):
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if self._thread is None and "autograd_course.grading.judge" not in sys.modules:
            self._thread = threading.Thread(target=importlib.import_module,
                                            args=("autograd_course.grading.judge",), daemon=True)
            self._thread.start()

    def __getattr__(self, name: str):
        if self._thread is not None:
            self._thread.join()
        return getattr(importlib.import_module("autograd_course.grading.judge"), name)


judge = _LazyJudge()


class JudgedExecute(SandboxedExecute):
    """nbgrader's Execute with the verdict reached outside the student's kernel.

    The student's cells run in a sandboxed kernel (:mod:`..sandbox`); the locked cells run
    there and in the judge (:mod:`..judge`); test cells run only in the judge, which reads the
    kernel's names as data and calls its functions remotely. The judge writes each test
    cell's outputs -- one pass line, or the diagnosis as an error -- so nbgrader's own
    SaveAutoGrades gives the points the judge decided, and nothing the student's code shows
    gives credit. The student's code is scanned outside the kernel; a finding is a flag for
    a person, never a penalty. A kernel that dies (crash, ``os._exit``, memory limit) or
    stops answering fails only the tests that had not run.
    """

    memory_limit_mb = Integer(
        4096, help="Memory (address space, and resident size) a grading kernel may use, in MiB."
    ).tag(config=True)
    cpu_seconds = Integer(
        1800, help="CPU seconds a grading kernel may use over the whole notebook."
    ).tag(config=True)
    sandbox = Bool(
        True, help="Run the student's kernel in bubblewrap when it is available."
    ).tag(config=True)
    require_sandbox = Bool(
        False, help="Refuse to grade when the sandbox (bubblewrap) cannot run."
    ).tag(config=True)
    reply_limit_mb = Integer(
        64, help="Largest answer, in MiB, the judge reads from a kernel in one call."
    ).tag(config=True)
    max_processes = Integer(
        256, help="Processes and threads a grading kernel may run at once (torch's thread "
        "pools included); it holds per kernel where the grader is root (a user per kernel)."
    ).tag(config=True)
    disk_mb = Integer(
        128, help="Size, in MiB, of each folder a grading kernel can write: its working "
        "folder (a copy of the submission's other files) and its /tmp."
    ).tag(config=True)
    hide_paths = List(
        Unicode(), help="Further folders whose contents the student's kernel must not see, "
        "even where they hold a folder of its import path (besides the course root, the "
        "exchange and a SQLite gradebook's folder). The sandbox shows nothing that its "
        "allowlist does not name."
    ).tag(config=True)
    secret = Unicode(
        "", help="The grader's secret that seeds hidden inputs (default: the course root's "
        f"{SECRET_FILE}, made on first use)."
    ).tag(config=True)

    def preprocess(self, nb, resources):
        judge.start()
        self.shutdown_kernel = "immediate"  # nothing in a grading kernel is worth waiting for
        state = resources.setdefault(META, {})
        coursedir, assignment, notebook = course_paths(self.config, resources)
        student = resources.get("nbgrader", {}).get("student", "")
        notes = list(nb.metadata.get(META, {}).get("notes", []))
        flags, flagged = self._scan(nb)
        secret = (self.secret or read_secret(coursedir.root)).encode()
        with (tempfile.TemporaryDirectory(prefix="autograd-course-kernel-") as tmp,
              sandbox.kernel_user() as uid):
            folders = sandbox.prepare_folders(Path(tmp), uid)
            _copy_other_files(resources, folders.files)
            limits = sandbox.Limits(memory_mb=self.memory_limit_mb, cpu_seconds=self.cpu_seconds,
                                    processes=self.max_processes, work_mb=self.disk_mb,
                                    tmp_mb=self.disk_mb)
            private = _private_paths(coursedir) + [Path(p) for p in self.hide_paths]
            argv, sandboxed = sandbox.kernel_command(
                folders, limits, private=private, uid=uid, use_sandbox=self.sandbox,
                require=self.require_sandbox)
            self.use_kernel(KernelPlan(argv, folders, self.memory_limit_mb, uid))
            self._seed = (secret, student, assignment, notebook)
            self.session = None  # made at the first cell the judge runs (see _link)
            self._unanswered, self._answer_error = False, ""
            failure = None
            try:
                super().preprocess(nb, resources)
            except judge.AuthoringError:
                raise
            except Exception as exc:  # the kernel died or stopped answering: grade what ran
                failure = self._describe_failure(exc)
            finally:
                if self.session is not None:
                    self.session.link.close()
                self.release_kernel()
                self.nb = nb
            if failure and not self.kernel_started:
                failure += ": " + _tail(Path(tmp) / "kernel.log")
        for cell in nb.cells:
            if cell_role(cell) == "test" and not cell.get("outputs"):
                reason = failure or "the test did not run"
                cell.outputs = [error_output("NotRun", reason)]
        if not sandboxed:
            notes.append(NOT_SANDBOXED)
        notes += [f"the course's locked cell failed in the judge: {e}"
                  for e in (self.session.locked_errors if self.session else [])]
        state.update(notes=notes, flags=flags, flagged=sorted(flagged), failure=failure,
                     sandboxed=sandboxed)
        return nb, resources

    def _link(self):
        """The judge's session and its link to the kernel, made at their first use."""
        if self.session is None:
            link = judge.JupyterLink(self.km, self.reply_limit_mb * 2**20,
                                     alive=self.kernel_alive)
            self.session = judge.Session(link, seed_key=judge.seed_key(*self._seed),
                                         timeout=float(self.timeout or 60))
        return self.session.link

    # -- the cells -----------------------------------------------------------------------
    def preprocess_cell(self, cell, resources, index):
        role = cell_role(cell)
        if role == "text":
            return cell, resources
        if role == "test":
            self._link()
            self._judge(cell)
            return cell, resources
        timeouts = getattr(self, "_timeouts_in_a_row", 0)
        if timeouts >= 2:
            raise _Unresponsive("the kernel did not answer after two interrupted time-outs")
        self.cell_timed_out = None
        cell, resources = super().preprocess_cell(cell, resources, index)
        if self.cell_timed_out is not None:
            # Say why in plain words, first, so that it is the diagnostic of the cell.
            cell.outputs.insert(
                0,
                error_output(
                    "CellTimeoutError",
                    f"the cell ran longer than {self.cell_timed_out} s and was stopped"
                    " (an endless loop?)",
                ),
            )
        self._timeouts_in_a_row = timeouts + 1 if self.cell_timed_out is not None else 0
        if role == "locked":
            self._link()
            self.session.run_locked(cell.source, grade_id(cell) or f"cell {index}")
        elif role == "answer":
            errors = [o for o in cell.outputs if o.output_type == "error"]
            if errors and errors[-1].get("ename") == "NotImplementedError" and (
                    utils.is_solution(cell)):
                self._unanswered = True
            elif errors and utils.is_solution(cell):
                self._answer_error = f"{errors[-1].get('ename')}: {errors[-1].get('evalue', '')}"
        return cell, resources

    def _judge(self, cell) -> None:
        cell_id = grade_id(cell)
        verdict = self.session.run_test(cell.source, cell_id, unanswered=self._unanswered,
                                        answer_error=self._answer_error)
        self._unanswered, self._answer_error = False, ""
        outputs = []
        if verdict.stdout:
            outputs.append(nbformat.v4.new_output("stream", name="stdout", text=verdict.stdout))
        if verdict.passed:
            outputs.append(nbformat.v4.new_output("stream", name="stdout", text=PASSED + "\n"))
        else:
            outputs.append(error_output(verdict.ename, verdict.message))
        self.code_cells_executed += 1
        cell.execution_count = self.code_cells_executed
        cell.outputs = outputs
        self.resources.setdefault(META, {}).setdefault("diagnoses", {})[cell_id] = (
            verdict.diagnosis)

    def _describe_failure(self, exc: BaseException) -> str:
        if self.watchdog.killed:
            return self.watchdog.killed
        if isinstance(exc, _Unresponsive):
            return str(exc)
        if isinstance(exc, sandbox.SandboxUnavailable):
            raise exc
        name = type(exc).__name__
        if name == "DeadKernelError" or (self.session and self.session.dead):
            return "the kernel died (a crash, os._exit or a signal)"
        return f"grading stopped: {short(exc)}"

    # -- the scan ------------------------------------------------------------------------
    def _scan(self, nb) -> tuple[list[str], set[str]]:
        """Flags for review (never a penalty), and the test cells they concern."""
        protected: dict[str, str] = {}
        for cell in nb.cells:
            if cell_role(cell) == "locked":
                protected.update(
                    {k: v for k, v in scan.imported_names(cell.source).items() if "." in v}
                )
        flags, flagged, pending = [], set(), []
        for cell in nb.cells:
            role = cell_role(cell)
            if role == "test":
                if pending:
                    flagged.add(grade_id(cell))
                pending = []
            elif role == "answer":
                where = grade_id(cell) or f"cell {cell.get('id', '?')}"
                found = scan.scan_source(cell.source, where, protected)
                flags += [f"code scan: {f}" for f in found]
                pending += found
        return flags, flagged


def _copy_other_files(resources, files: Path) -> None:
    """Copy the submission's other files (data, modules) where the kernel's working folder is
    filled from, readable by the kernel's user."""
    folder = resources.get("metadata", {}).get("path")
    if not folder or not Path(folder).is_dir():
        return
    for path in Path(folder).iterdir():
        if path.suffix == ".ipynb" or path.name.endswith(record.SUFFIX) or path.is_symlink():
            continue
        target = files / path.name
        if path.is_dir():
            shutil.copytree(path, target, symlinks=False, ignore_dangling_symlinks=True,
                            copy_function=shutil.copyfile)
        elif path.is_file():
            shutil.copyfile(path, target)
    for path in [files, *files.rglob("*")]:
        if not path.is_symlink():
            os.chmod(path, 0o755 if path.is_dir() else 0o644)


def _private_paths(coursedir: CourseDirectory) -> list[Path]:
    """Folders the kernel must not see into: the course, the exchange, a SQLite gradebook's."""
    hidden = [Path(coursedir.root)]
    exchange = coursedir.config.get("Exchange", {}).get("root")
    if exchange:
        hidden.append(Path(exchange))
    db_url = coursedir.db_url or ""
    if db_url.startswith("sqlite:///"):
        hidden.append(Path(db_url.removeprefix("sqlite:///")).parent)
    return [p for p in hidden if p.exists()]


def _tail(path: Path, lines: int = 3) -> str:
    """The last lines of a log, on one line (why a kernel did not start)."""
    try:
        text = path.read_text(errors="replace").strip().splitlines()
    except OSError:
        return "no kernel log"
    return " / ".join(text[-lines:])[-400:] or "the kernel wrote nothing"


class _Unresponsive(Exception):
    pass
