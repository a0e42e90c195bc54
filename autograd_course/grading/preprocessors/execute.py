"""Running a submission: the student's cells in a sandboxed kernel, the test cells in the judge."""

from __future__ import annotations

import importlib
import math
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

import nbformat
from nbgrader import utils
from nbgrader.coursedir import CourseDirectory
from traitlets import Bool, Integer, List, Unicode

from autograd_course.grading import intake, scan, served
from autograd_course.grading.boundary import sandbox, warm
from autograd_course.grading.boundary.folders import (
    KERNEL_FOLDERS,
    kernel_user,
    prepare_folders,
    sweep_stale_folders,
)
from autograd_course.grading.boundary.provision import KernelPlan, SandboxedExecute, log_tail
from autograd_course.grading.containment import contained
from autograd_course.grading.course import SECRET_FILE, read_secret

from .cells import (
    META,
    cell_role,
    course_paths,
    error_output,
    grade_id,
    max_file_bytes,
    release_notebook,
    short,
)
from .cells import notes as notes_of

PASSED = "All tests passed."
NOT_SANDBOXED = ("not sandboxed: the student's kernel ran without bubblewrap, with the "
                 "grader's file rights")
#: The most seconds a notebook waits for its process's zygote to start (it starts in a few
#: seconds) before it takes a cold kernel: the wait is the notebook's time (a grading worker's
#: first notebook, and the warm check's checks after its first).
ZYGOTE_WAIT_SECONDS = 20


class _LazyJudge:
    """The judge module, imported in a thread: torch loads while the kernel starts."""

    def __init__(self):
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if self._thread is None and "autograd_course.grading.boundary.judge" not in sys.modules:
            self._thread = threading.Thread(
                target=importlib.import_module,
                args=("autograd_course.grading.boundary.judge",), daemon=True)
            self._thread.start()

    def __getattr__(self, name: str):
        if self._thread is not None:
            self._thread.join()
        return getattr(importlib.import_module("autograd_course.grading.boundary.judge"), name)


judge = _LazyJudge()
_swept = threading.Event()
_said: set[str] = set()  # why warm kernels could not run, once each per process


def _sweep_once() -> None:
    """Remove, once per grading process, the kernel folders that graders which were killed
    (and so could not clean up) left behind (:func:`.folders.sweep_stale_folders`)."""
    if not _swept.is_set():
        _swept.set()
        sweep_stale_folders()


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
    notebook_seconds = Integer(
        110, help="Wall-clock seconds one notebook may take to grade, its kernel's start "
        "included; past it the kernel is stopped and the tests that had not run get 0."
    ).tag(config=True)
    submission_seconds = Integer(
        0, help="Wall-clock seconds one submission may take, grading and feedback of all its "
        "notebooks together, held by the process that started the grading (autograd-course "
        "grade and check; see autograd_course/grading/bounded.py): past it the grading "
        "process is killed and the submission gets 0 with the reason. 0: notebook_seconds "
        "and 10 s for each notebook, and 60 s more for nbgrader's own work and the feedback. "
        "Plain nbgrader has no such parent: there notebook_seconds and the output caps of "
        "MakeInert bound the work."
    ).tag(config=True)
    max_cells = Integer(
        300, help="Cells of a notebook that are run: every answer and test cell, and the "
        "student's own other cells while there is room."
    ).tag(config=True)
    max_output_mb = Integer(
        32, help="MiB of outputs the grader keeps from one notebook's kernel; the rest is "
        "dropped as it arrives."
    ).tag(config=True)
    warm_kernels = Bool(
        True, help="Fork each notebook's kernel from a zygote that has imported torch once per "
        "grading process (autograd_course.kernel.zygote), in the same sandbox; off, or where the "
        "zygote cannot run (no bubblewrap, no fork), each kernel is a new process."
    ).tag(config=True)
    secret = Unicode(
        "", help="The grader's secret that seeds hidden inputs (default: the course root's "
        f"{SECRET_FILE}, made on first use)."
    ).tag(config=True)

    @contained  # a SystemExit or other BaseException: this notebook's failure (GradingStopped)
    def preprocess(self, nb, resources):
        judge.start()
        self._budget_end = time.monotonic() + self.notebook_seconds
        self.timeout_func = self._cell_timeout
        # Outputs still arriving after a cell's reply (a large output on a busy machine, or a
        # message the grader then refuses) get the cell's timeout, not nbclient's 4 s: past
        # that, nbgrader stops the whole notebook with a CellTimeoutError whose reason would
        # depend on the machine's load. The notebook's budget still bounds it.
        self.iopub_timeout = max(self.iopub_timeout, int(self.timeout or 60))
        self.shutdown_kernel = "immediate"  # nothing in a grading kernel is worth waiting for
        state = resources.setdefault(META, {})
        coursedir, assignment, notebook = course_paths(self.config, resources)
        student = resources.get("nbgrader", {}).get("student", "")
        notes = notes_of(resources)
        notes += _cap_cells(nb, self.max_cells)
        self._output_bytes, self._output_cut = 0, False
        flags, flagged = scan_cells(nb, release_notebook(coursedir, assignment, notebook))
        secret = (self.secret or read_secret(coursedir.root)).encode()
        _sweep_once()
        private = self._private(coursedir)
        zygote = self._zygote(private)
        with (tempfile.TemporaryDirectory(prefix=f"{KERNEL_FOLDERS}{os.getpid()}-",
                                          dir=zygote and zygote.spool) as tmp,
              kernel_user() as uid):
            folders = prepare_folders(Path(tmp), uid)
            notes += _copy_other_files(resources, self.config, folders.files)
            limits = sandbox.Limits(memory_mb=self.memory_limit_mb, cpu_seconds=self.cpu_seconds,
                                    processes=self.max_processes, work_mb=self.disk_mb,
                                    tmp_mb=self.disk_mb)
            argv, sandboxed = sandbox.kernel_command(
                folders, limits, private=private, uid=uid, use_sandbox=self.sandbox,
                require=self.require_sandbox)
            forked = (zygote, warm.request(folders, limits, uid)) if zygote and sandboxed else None
            self.use_kernel(KernelPlan(argv, folders, self.memory_limit_mb, uid, warm=forked,
                                       limits=limits))
            # past the budget (and a grace for nbclient to notice), the kernel is killed
            self.watchdog.deadline = (self._budget_end + 10, self._budget_reason())
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
                failure += ": " + log_tail(folders.log)
        for cell in nb.cells:
            if cell_role(cell) == "test" and not cell.get("outputs"):
                reason = failure or "the test did not run"
                cell.outputs = [error_output("NotRun", reason)]
        if not sandboxed:
            notes.append(NOT_SANDBOXED)
        if not sandbox.seccomp_on():  # the filter of cold and warm kernels (sandbox.py)
            notes.append(sandbox.SECCOMP_OFF)
        notes += [f"the course's locked cell failed in the judge: {e}"
                  for e in (self.session.locked_errors if self.session else [])]
        state.update(notes=notes, flags=flags, flagged=flagged, failure=failure,
                     sandboxed=sandboxed, kernel="warm" if forked else "cold",
                     seconds=round(time.monotonic() - self._budget_end + self.notebook_seconds,
                                   2))
        return nb, resources

    def _private(self, coursedir: CourseDirectory) -> list[Path]:
        """The folders the kernel must not see (:func:`_private_paths`, and
        :attr:`hide_paths`)."""
        return _private_paths(coursedir) + [Path(p) for p in self.hide_paths]

    def start_zygote(self) -> None:
        """Start the grading process's zygote (:meth:`_zygote`) for the course of this
        configuration before its first notebook, which then waits for it, as do the notebooks
        after it while it starts (:func:`..warm.plan`), rather than each starting a cold
        kernel that imports torch again beside it: for a grading child, which grades many."""
        warm.plan(None, wait=True)
        if self._warm():  # one that cannot start is said by the first notebook, in its log
            warm.zygote(self._private(CourseDirectory(config=self.config)), most=0)

    def _warm(self) -> bool:
        """Whether this process's kernels may be forked from a zygote: warm kernels and the
        sandbox on, more than one notebook to grade, bubblewrap here."""
        return bool(self.warm_kernels and self.sandbox and warm.pays() and sandbox.bubblewrap())

    def _zygote(self, private: list[Path]):
        """The grading process's zygote (:mod:`..warm`), or None: warm kernels off, the
        sandbox off, a process that grades one notebook, a zygote still starting (a notebook
        that waits for it waits :data:`ZYGOTE_WAIT_SECONDS` at most, half of what is left of
        its time budget at most, then takes a cold kernel), or one that cannot run here (said
        once, in the log)."""
        if not self._warm():
            return None
        left = max(0.0, self._budget_end - time.monotonic())
        zygote, why = warm.zygote(private, most=min(ZYGOTE_WAIT_SECONDS, left / 2))
        if zygote is None and why and why not in _said:
            _said.add(why)
            self.log.warning("%s: each notebook's kernel starts cold", why)
        return zygote

    def _link(self):
        """The judge's session and its link to the kernel, made at their first use."""
        if self.session is None:
            from autograd_course.grading.boundary.links import JupyterLink  # loads with judge.start

            link = JupyterLink(self.km, self.reply_limit_mb * 2**20,
                               alive=self.kernel_alive, pid=self.kernel_pid)
            self.session = judge.Session(link, seed_key=judge.seed_key(*self._seed),
                                         timeout=float(self.timeout or 60),
                                         budget=self._budget_end)
        return self.session.link

    # -- the budget ----------------------------------------------------------------------
    def _budget_reason(self) -> str:
        return (f"the notebook's time budget of {self.notebook_seconds} s "
                "(c.JudgedExecute.notebook_seconds) was spent")

    def _cell_timeout(self, cell) -> int:
        """A cell's timeout: the per-cell one, or what is left of the notebook's budget."""
        left = self._budget_end - time.monotonic()
        return max(1, min(int(self.timeout or 60), math.ceil(left)))

    def _check_budget(self) -> None:
        if time.monotonic() >= self._budget_end:
            raise _BudgetSpent(self._budget_reason())

    def output(self, outs, msg, display_id, cell_index):
        # nbclient's hook for each output message: outputs past the notebook's share of the
        # grader's memory are dropped, with one note
        self._output_bytes += _size(msg.get("content", {})) + 1024  # and the output's own
        if self._output_bytes <= self.max_output_mb * 2**20:
            return super().output(outs, msg, None, cell_index)  # no display ids: no updates
        if not self._output_cut:
            self._output_cut = True
            note = (f"[the grader kept the first {self.max_output_mb} MiB of this notebook's "
                    "outputs (c.JudgedExecute.max_output_mb); the rest was dropped]\n")
            outs.append(nbformat.v4.new_output("stream", name="stderr", text=note))
        return None

    # -- the cells -----------------------------------------------------------------------
    def preprocess_cell(self, cell, resources, index):
        cell, resources = self._run_cell(cell, resources, index)
        if index == len(self.nb.cells) - 1 and self.kernel_started and self.kernel_alive():
            self._bring_back_files(resources)
        return cell, resources

    def _bring_back_files(self, resources) -> None:
        """Put the files the notebook wrote in its working folder into the autograded folder,
        as nbgrader's kernel, which runs there, would: within the limits of a submission's
        files, never over a notebook or the submission's timestamp, never read as the
        grader's data (the grade records live elsewhere, :mod:`..record`), and under a name
        Jupyter serves as text or a download, never as a page (:func:`..served.safe_name`)."""
        folder = resources.get("metadata", {}).get("path")
        if not folder or not Path(folder).is_dir():
            return
        self._link()
        limit = max_file_bytes(self.config)
        try:
            written = self.session.files(self.reply_limit_mb * 2**20 // 2, intake.MAX_FILES)
        except Exception as exc:  # noqa: BLE001 - the kernel's files are its own business
            notes_of(resources).append(f"the files the notebook wrote could not be read: "
                                       f"{short(exc)}")
            return
        given = self._plan.folders.files
        for name, data in written.items():
            if (name.endswith(".ipynb") or name == "timestamp.txt" or len(data) > limit
                    or ((given / name).is_file() and (given / name).read_bytes() == data)):
                continue
            target = Path(folder) / served.safe_name(name)  # never a page Jupyter serves
            if target.is_symlink() or Path(folder).resolve() not in target.resolve().parents:
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)

    def _run_cell(self, cell, resources, index):
        role = cell_role(cell)
        if role == "text":
            return cell, resources
        self._check_budget()
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
        # imported here, not at the top: checks imports torch, which the judge's thread
        # imports while the kernel starts (judge.start), and which is loaded by now
        from autograd_course.kernel.checks import NOTE

        cell_id = grade_id(cell)
        verdict = self.session.run_test(cell.source, cell_id, unanswered=self._unanswered,
                                        answer_error=self._answer_error)
        self._unanswered, self._answer_error = False, ""
        outputs = []
        notes = "".join(f"{NOTE}{message}\n" for _, message in verdict.notes)
        if verdict.stdout or notes:
            outputs.append(nbformat.v4.new_output("stream", name="stdout",
                                                  text=verdict.stdout + notes))
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
        if isinstance(exc, _Unresponsive | _BudgetSpent):
            return str(exc)
        if time.monotonic() >= self._budget_end:
            return self._budget_reason()
        if isinstance(exc, sandbox.SandboxUnavailable):
            raise exc
        name = type(exc).__name__
        if name == "DeadKernelError" or (self.session and self.session.dead):
            return "the kernel died (a crash, os._exit or a signal)"
        return f"grading stopped: {short(exc)}"


def scan_cells(nb, course=None) -> tuple[list[str], dict[str, list[str]]]:
    """The code scan of a submission: flags for review (never a penalty), and the test cells
    they concern, each with the findings in the answers it tests. ``course``, the notebook's
    student version in release/ (or None), says what each question forbids in its answer
    (:func:`..scan.forbidden`)."""
    forbids = scan.forbidden(course) if course is not None else {}
    protected: dict[str, str] = {}
    for cell in nb.cells:
        if cell_role(cell) == "locked":
            protected.update(
                {k: v for k, v in scan.imported_names(cell.source).items() if "." in v}
            )
    flags, flagged, pending = [], {}, []
    for cell in nb.cells:
        role = cell_role(cell)
        if role == "test":
            if pending:
                flagged.setdefault(grade_id(cell), []).extend(str(f) for f in pending)
            pending = []
        elif role == "answer":
            where = grade_id(cell) or f"cell {cell.get('id', '?')}"
            found = scan.scan_source(cell.source, where, protected,
                                     forbids.get(grade_id(cell) or "", ()))
            flags += [f"code scan: {f}" for f in found]
            pending += found
    return flags, flagged


def _copy_other_files(resources, config, files: Path) -> list[str]:
    """Copy the submission's other files (data, modules) where the kernel's working folder is
    filled from, within the intake's limits (:mod:`..intake`); return what was left out."""
    folder = resources.get("metadata", {}).get("path")
    if not folder or not Path(folder).is_dir():
        return []
    found = intake.scan(Path(folder), max_file_bytes(config))
    intake.copy_files(found, files)
    return [f"a file of the submission was not given to the kernel: {why}"
            for why in found.left_out if not why.split(":")[0].endswith(".ipynb")]


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


def _cap_cells(nb, limit: int) -> list[str]:
    """Keep at most ``limit`` cells: every nbgrader cell, and the student's other cells in
    order while there is room; return the note that says what was left out."""
    if len(nb.cells) <= limit:
        return []
    room = limit - sum(1 for cell in nb.cells if grade_id(cell))
    kept, dropped = [], 0
    for cell in nb.cells:
        if grade_id(cell) or room > 0:
            room -= 0 if grade_id(cell) else 1
            kept.append(cell)
        else:
            dropped += 1
    total, nb.cells = len(nb.cells), kept
    return [f"the notebook has {total} cells, more than the limit of {limit} "
            f"(c.JudgedExecute.max_cells): the last {dropped} of the student's own cells "
            "(not answer or test cells) were not run"]


def _size(content) -> int:
    """About how many bytes an output message's content holds (its strings)."""
    if isinstance(content, str):
        return len(content)
    if isinstance(content, dict):
        return sum(_size(v) for v in content.values())
    if isinstance(content, list):
        return sum(_size(v) for v in content)
    return 8


class _Unresponsive(Exception):
    pass


class _BudgetSpent(Exception):
    pass


#: Seconds of a submission's budget for nbgrader's own work and its feedback pages, beyond
#: its notebooks' (see :attr:`JudgedExecute.submission_seconds`).
FEEDBACK_SECONDS = 60


def submission_budget(config, notebooks: int) -> int:
    """The wall-clock seconds a submission of ``notebooks`` notebooks may take under
    ``config`` (:attr:`JudgedExecute.submission_seconds`, or what its 0 means)."""
    traits = JudgedExecute.class_traits()
    given = config.get("JudgedExecute", {})
    seconds, per_notebook = (given.get(name, traits[name].default())
                             for name in ("submission_seconds", "notebook_seconds"))
    return int(seconds) or max(1, notebooks) * (int(per_notebook) + 10) + FEEDBACK_SECONDS
