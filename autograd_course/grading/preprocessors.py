"""nbgrader preprocessors that grade untrusted notebooks; the course's nbgrader_config.py uses them.

Sanitize stage (before the notebook runs):
    :class:`RepairSubmission` puts back cells a student deleted and notes edited locked cells.
Autograde stage:
    :class:`JudgedExecute` runs the student's cells in a sandboxed kernel and the test cells
    in the judge, outside that kernel (:mod:`.judge`, :mod:`.sandbox`), and writes each test
    cell's verdict as its outputs; :class:`RecordResults` writes the grade record (scores,
    diagnoses, notes, flags for review) and puts each diagnostic into the gradebook comment
    that the feedback shows.
Feedback:
    :class:`HideHiddenTests` removes hidden-test code and tracebacks from the feedback.
Reading:
    :class:`TolerantNotebookExporter` grades a file that is not a valid notebook as an empty
    submission instead of stopping.
"""

from __future__ import annotations

import contextlib
import copy
import importlib
import os
import secrets
import shutil
import sys
import tempfile
import threading
from pathlib import Path

import nbformat
import zmq
from jupyter_client.kernelspec import KernelSpec, KernelSpecManager
from jupyter_client.manager import AsyncKernelManager
from jupyter_core.utils import run_sync
from nbconvert.exporters import NotebookExporter
from nbformat.notebooknode import NotebookNode
from nbgrader import utils
from nbgrader.api import Gradebook, MissingEntry
from nbgrader.coursedir import CourseDirectory
from nbgrader.preprocessors import Execute, NbGraderPreprocessor
from traitlets import Bool, Integer, List, Unicode

from autograd_course.grading import record, sandbox, scan

META = "autograd_course"
HIDDEN_BEGIN = "### BEGIN HIDDEN TESTS"
HIDDEN_END = "### END HIDDEN TESTS"
SECRET_FILE = ".grader-secret"
GRADING_KERNEL = "autograd-course-grading"
PASSED = "All tests passed."
NOT_SANDBOXED = ("not sandboxed: the student's kernel ran without bubblewrap, with the "
                 "grader's file rights")


def _notes(nb: NotebookNode) -> list[str]:
    return nb.metadata.setdefault(META, {}).setdefault("notes", [])


def _grade_id(cell: NotebookNode) -> str | None:
    return cell.metadata.get("nbgrader", {}).get("grade_id")


def _is_test_cell(cell: NotebookNode) -> bool:
    return cell.cell_type == "code" and utils.is_grade(cell) and not utils.is_solution(cell)


def _error(ename: str, evalue: str) -> NotebookNode:
    return nbformat.v4.new_output(
        "error", ename=ename, evalue=evalue, traceback=[f"{ename}: {evalue}"]
    )


def _course_paths(config, resources) -> tuple[CourseDirectory, str, str]:
    coursedir = CourseDirectory(config=config)
    info = resources.get("nbgrader", {})
    return coursedir, info.get("assignment", ""), info.get("notebook", "")


def release_notebook(coursedir: CourseDirectory, assignment: str, notebook: str
                     ) -> NotebookNode | None:
    """Return the student version of a notebook from release/, or None when it is missing."""
    path = Path(coursedir.format_path(coursedir.release_directory, ".", assignment)) / (
        notebook + ".ipynb"
    )
    if not path.is_file():
        return None
    return nbformat.read(path, as_version=4)


class TolerantNotebookExporter(NotebookExporter):
    """A notebook exporter that reads a broken file as an empty submission, with a note."""

    def from_file(self, file_stream, resources=None, **kw):
        name = os.path.basename(getattr(file_stream, "name", "the notebook"))
        try:
            nb = nbformat.read(file_stream, as_version=4)
        except Exception as exc:  # not JSON, not UTF-8, not a notebook at all
            return self.from_notebook_node(self._empty(name, exc), resources=resources, **kw)
        _repair_duplicate_ids(nb)
        try:
            nbformat.validate(nb)
        except Exception as exc:  # e.g. an output a tool wrote with keys the schema forbids
            for cell in nb.cells:
                if cell.cell_type == "code":
                    cell.outputs, cell.execution_count = [], None
            try:
                nbformat.validate(nb)
            except Exception:
                return self.from_notebook_node(self._empty(name, exc), resources=resources, **kw)
            _notes(nb).append(f"{name} had invalid parts ({_short(exc)}); its outputs were "
                              "dropped and the notebook was graded")
        return self.from_notebook_node(nb, resources=resources, **kw)

    def _empty(self, name: str, exc: BaseException) -> NotebookNode:
        reason = f"{name} is not a valid notebook ({_short(exc)})"
        self.log.warning("%s: graded as an empty submission", reason)
        nb = nbformat.v4.new_notebook()
        nb.metadata.kernelspec = {"name": "python3", "display_name": "Python 3",
                                  "language": "python"}
        _notes(nb).append(reason + "; graded as an empty submission")
        return nb


def _repair_duplicate_ids(nb: NotebookNode) -> None:
    """Give a fresh id to every cell whose id repeats an earlier cell's (a copy-pasted cell)."""
    seen = set()
    for cell in nb.cells:
        if "id" in cell and cell.id in seen:
            cell.id = secrets.token_hex(4)
        seen.add(cell.get("id"))


def _short(exc: BaseException, limit: int = 160) -> str:
    text = f"{type(exc).__name__}: {exc}".splitlines()[0]
    return text if len(text) <= limit else text[: limit - 1] + "…"


class RepairSubmission(NbGraderPreprocessor):
    """Put back the nbgrader cells a student deleted, and note locked cells they edited.

    Deleted cells come back from the student version in release/, at their place; nbgrader's
    OverwriteCells (next in the sanitize stage) then restores the source of every locked cell.
    """

    def preprocess(self, nb, resources):
        coursedir, assignment, notebook = _course_paths(self.config, resources)
        template = release_notebook(coursedir, assignment, notebook)
        if template is None:
            return nb, resources
        present = {_grade_id(c): c for c in nb.cells if _grade_id(c)}
        restored = []
        position = 0
        for cell in template.cells:
            grade_id = _grade_id(cell)
            if grade_id is None:
                continue
            if grade_id in present:
                position = nb.cells.index(present[grade_id]) + 1
                locked = cell.metadata.get("nbgrader", {}).get("locked", False)
                if (
                    locked
                    and not utils.is_solution(cell)
                    and present[grade_id].source != cell.source
                ):
                    _notes(nb).append(
                        f"locked cell '{grade_id}' was edited; the original was restored"
                    )
                continue
            new_cell = copy.deepcopy(cell)
            nb.cells.insert(position, new_cell)
            present[grade_id] = new_cell
            position += 1
            restored.append(grade_id)
        if restored:
            _notes(nb).append("deleted cells were put back: " + ", ".join(restored))
        return nb, resources


def cell_role(cell: NotebookNode) -> str:
    """What a cell is to the grader: "test", "locked" (trusted code), "answer" or "text"."""
    if cell.cell_type != "code":
        return "text"
    if _is_test_cell(cell):
        return "test"
    meta = cell.metadata.get("nbgrader", {})
    if meta.get("locked") and not meta.get("solution"):
        return "locked"
    return "answer"


class _GradingKernelManager(AsyncKernelManager):
    """A kernel manager whose connection file the sandboxed kernel's user can read, and whose
    clients refuse messages over 256 MiB (a kernel flooding its outputs cannot fill the
    grader's memory with them)."""

    def _context_default(self):
        context = super()._context_default()
        context.setsockopt(zmq.MAXMSGSIZE, 256 * 2**20)
        return context

    def write_connection_file(self, **kwargs) -> None:
        super().write_connection_file(**kwargs)
        if os.geteuid() == 0:
            os.chown(self.connection_file, sandbox.NOBODY, sandbox.NOBODY)


class _OneKernelSpec(KernelSpecManager):
    """Knows one kernel spec, the grading kernel's, whatever the notebook names."""

    def __init__(self, spec: KernelSpec, **kwargs):
        super().__init__(**kwargs)
        self.spec = spec

    def get_kernel_spec(self, kernel_name: str) -> KernelSpec:
        return self.spec


def read_secret(root: str | Path) -> str:
    """The grader's secret of the course at ``root`` (``.grader-secret``), made on first use.

    It seeds the hidden tests' inputs: with it, a submission is always graded on the same
    inputs (so a regrade or a self-check agrees with the grade), and it never leaves the
    grader (the sandbox hides the course root from the kernel).
    """
    path = Path(root) / SECRET_FILE
    if not path.exists():
        # written whole, then linked into place: a process that starts meanwhile reads either
        # no file (and links its own, or fails to and reads the winner's) or the whole secret
        with tempfile.NamedTemporaryFile("w", dir=path.parent, prefix=".grader-secret-",
                                         delete=False) as f:
            f.write(secrets.token_hex(32) + "\n")
        os.chmod(f.name, 0o600)
        try:
            os.link(f.name, path)
        except FileExistsError:
            pass
        except OSError:  # a file system without hard links: the last writer wins
            if not path.exists():
                os.replace(f.name, path)
        finally:
            if os.path.exists(f.name):
                os.unlink(f.name)
    return path.read_text().strip()


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


class JudgedExecute(Execute):
    """nbgrader's Execute with the verdict reached outside the student's kernel.

    The student's cells run in a sandboxed kernel (:mod:`.sandbox`); the locked cells run
    there and in the judge (:mod:`.judge`); test cells run only in the judge, which reads the
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
    hide_paths = List(
        Unicode(), help="Further folders the student's kernel must not see (besides the course "
        "root, the exchange and a SQLite gradebook's folder)."
    ).tag(config=True)
    secret = Unicode(
        "", help="The grader's secret that seeds hidden inputs (default: the course root's "
        f"{SECRET_FILE}, made on first use)."
    ).tag(config=True)

    def preprocess(self, nb, resources):
        judge.start()
        self.shutdown_kernel = "immediate"  # nothing in a grading kernel is worth waiting for
        state = resources.setdefault(META, {})
        coursedir, assignment, notebook = _course_paths(self.config, resources)
        student = resources.get("nbgrader", {}).get("student", "")
        notes = list(nb.metadata.get(META, {}).get("notes", []))
        flags, flagged = self._scan(nb)
        secret = (self.secret or read_secret(coursedir.root)).encode()
        with tempfile.TemporaryDirectory(prefix="autograd-course-kernel-") as tmp:
            work, ipc = sandbox.prepare_folders(Path(tmp))
            _copy_other_files(resources, work)
            limits = sandbox.Limits(memory_mb=self.memory_limit_mb, cpu_seconds=self.cpu_seconds)
            argv, sandboxed = sandbox.kernel_command(
                work, ipc, _hidden_paths(coursedir) + [Path(p) for p in self.hide_paths], limits,
                use_sandbox=self.sandbox, require=self.require_sandbox)
            self._kernel = dict(argv=argv, work=work, ipc=ipc,
                                seed=(secret, student, assignment, notebook))
            self.session = None  # made at the first cell the judge runs (see _link)
            self._watch = {"killed": None}
            self._unanswered, self._answer_error = False, ""
            self.km_started_ok = False
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
                if self._kernel.get("log"):
                    self._kernel["log"].close()
                self.nb = nb
            if failure and not self.km_started_ok:
                failure += ": " + _tail(Path(tmp) / "kernel.log")
        for cell in nb.cells:
            if cell_role(cell) == "test" and not cell.get("outputs"):
                reason = failure or "the test did not run"
                cell.outputs = [_error("NotRun", reason)]
        if not sandboxed:
            notes.append(NOT_SANDBOXED)
        notes += [f"the course's locked cell failed in the judge: {e}"
                  for e in (self.session.locked_errors if self.session else [])]
        state.update(notes=notes, flags=flags, flagged=sorted(flagged), failure=failure,
                     sandboxed=sandboxed)
        return nb, resources

    # -- the kernel ----------------------------------------------------------------------
    def create_kernel_manager(self):
        spec = KernelSpec(argv=self._kernel["argv"], display_name="autograd-course grading",
                          language="python", interrupt_mode="message", env={})
        self.kernel_name = GRADING_KERNEL
        ipc = self._kernel["ipc"]
        self.km = _GradingKernelManager(
            kernel_name=GRADING_KERNEL, kernel_spec_manager=_OneKernelSpec(spec),
            transport="ipc", ip=str(ipc / "kernel"), connection_file=str(ipc / "kernel.json"),
            config=self.config)
        return self.km

    async def async_start_new_kernel(self, **kwargs):
        # The kernel's own stdout and stderr (not the notebook's outputs) go to a log, which
        # is quoted when the kernel fails to start.
        self._kernel["log"] = open(self._kernel["work"].parent / "kernel.log", "wb")  # noqa: SIM115
        kwargs.update(cwd=str(self._kernel["work"]), stdout=self._kernel["log"],
                      stderr=self._kernel["log"])
        return await super().async_start_new_kernel(**kwargs)

    start_new_kernel = run_sync(async_start_new_kernel)

    def start_new_kernel_client(self):
        client = super().start_new_kernel_client()
        self.km_started_ok = True
        self._start_watchdog()
        return client

    def _link(self):
        """The judge's session and its link to the kernel, made at their first use."""
        if self.session is None:
            provisioner = getattr(self.km, "provisioner", None)
            process = getattr(provisioner, "process", None)
            link = judge.JupyterLink(self.km, self.reply_limit_mb * 2**20,
                                     alive=lambda: process is None or process.poll() is None)
            self.session = judge.Session(link, seed_key=judge.seed_key(*self._kernel["seed"]),
                                         timeout=float(self.timeout or 60))
        return self.session.link

    async def _async_handle_timeout(self, timeout, cell=None):
        self._timed_out = timeout
        return await super()._async_handle_timeout(timeout, cell)

    def _start_watchdog(self) -> None:
        import psutil

        provisioner = getattr(self.km, "provisioner", None)
        pid = getattr(getattr(provisioner, "process", None), "pid", None)
        if pid is None:
            return
        limit = self.memory_limit_mb * 1024 * 1024
        watch = self._watch

        def poll():
            try:
                process = psutil.Process(pid)
                while process.is_running():
                    rss = process.memory_info().rss + sum(
                        c.memory_info().rss for c in process.children(recursive=True)
                    )
                    if rss > limit:
                        watch["killed"] = f"the kernel used more than {self.memory_limit_mb} MiB"
                        for child in process.children(recursive=True):
                            child.kill()
                        process.kill()
                        return
                    threading.Event().wait(0.1)
            except psutil.Error:
                return

        threading.Thread(target=poll, daemon=True, name="grader-memory-watchdog").start()

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
        self._timed_out = None
        cell, resources = super().preprocess_cell(cell, resources, index)
        if self._timed_out is not None:
            # Say why in plain words, first, so that it is the diagnostic of the cell.
            cell.outputs.insert(
                0,
                _error(
                    "CellTimeoutError",
                    f"the cell ran longer than {self._timed_out} s and was stopped"
                    " (an endless loop?)",
                ),
            )
        self._timeouts_in_a_row = timeouts + 1 if self._timed_out is not None else 0
        if role == "locked":
            self._link()
            self.session.run_locked(cell.source, _grade_id(cell) or f"cell {index}")
        elif role == "answer":
            errors = [o for o in cell.outputs if o.output_type == "error"]
            if errors and errors[-1].get("ename") == "NotImplementedError" and (
                    utils.is_solution(cell)):
                self._unanswered = True
            elif errors and utils.is_solution(cell):
                self._answer_error = f"{errors[-1].get('ename')}: {errors[-1].get('evalue', '')}"
        return cell, resources

    def _judge(self, cell) -> None:
        grade_id = _grade_id(cell)
        verdict = self.session.run_test(cell.source, grade_id, unanswered=self._unanswered,
                                        answer_error=self._answer_error)
        self._unanswered, self._answer_error = False, ""
        outputs = []
        if verdict.stdout:
            outputs.append(nbformat.v4.new_output("stream", name="stdout", text=verdict.stdout))
        if verdict.passed:
            outputs.append(nbformat.v4.new_output("stream", name="stdout", text=PASSED + "\n"))
        else:
            outputs.append(_error(verdict.ename, verdict.message))
        self.code_cells_executed += 1
        cell.execution_count = self.code_cells_executed
        cell.outputs = outputs
        self.resources.setdefault(META, {}).setdefault("diagnoses", {})[grade_id] = (
            verdict.diagnosis)

    def _describe_failure(self, exc: BaseException) -> str:
        if self._watch.get("killed"):
            return self._watch["killed"]
        if isinstance(exc, _Unresponsive):
            return str(exc)
        if isinstance(exc, sandbox.SandboxUnavailable):
            raise exc
        name = type(exc).__name__
        if name == "DeadKernelError" or (self.session and self.session.dead):
            return "the kernel died (a crash, os._exit or a signal)"
        return f"grading stopped: {_short(exc)}"

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
                    flagged.add(_grade_id(cell))
                pending = []
            elif role == "answer":
                where = _grade_id(cell) or f"cell {cell.get('id', '?')}"
                found = scan.scan_source(cell.source, where, protected)
                flags += [f"code scan: {f}" for f in found]
                pending += found
        return flags, flagged


def _copy_other_files(resources, work: Path) -> None:
    """Copy the submission's other files (data, modules) into the kernel's working folder."""
    folder = resources.get("metadata", {}).get("path")
    if not folder or not Path(folder).is_dir():
        return
    for path in Path(folder).iterdir():
        if path.suffix == ".ipynb" or path.name.endswith(record.SUFFIX) or path.is_symlink():
            continue
        target = work / path.name
        if path.is_dir():
            shutil.copytree(path, target, symlinks=False, ignore_dangling_symlinks=True)
        elif path.is_file():
            shutil.copy2(path, target)
    if os.geteuid() == 0:
        for path in [work, *work.rglob("*")]:
            os.chown(path, sandbox.NOBODY, sandbox.NOBODY, follow_symlinks=False)


def _hidden_paths(coursedir: CourseDirectory) -> list[Path]:
    """Folders the kernel must not see: the course, the exchange, a SQLite gradebook's."""
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


class RecordResults(NbGraderPreprocessor):
    """Write the grade record of the notebook and put each diagnostic in the gradebook.

    The record (``<notebook>.grading.json`` beside the autograded notebook) lists every test
    cell with its points, score, message and diagnosis code, the notes on repaired cells and
    on the sandbox, and the flags of the code scan; the message also becomes the auto-comment
    of the question's solution cell, which nbgrader's feedback shows. A question whose code
    the scan flagged is marked as needing a manual grade, so formgrader shows it; its score
    stays what the judge gave.
    """

    def preprocess(self, nb, resources):
        coursedir, assignment, notebook = _course_paths(self.config, resources)
        student = resources["nbgrader"]["student"]
        state = resources.get(META, {})
        diagnoses = state.get("diagnoses", {})
        questions = []
        solution_of = {}
        last_solution = None
        for cell in nb.cells:
            if utils.is_solution(cell):
                last_solution = _grade_id(cell)
            if _is_test_cell(cell):
                score, points = utils.determine_grade(cell, self.log)
                grade_id = _grade_id(cell)
                questions.append(dict(
                    question=grade_id, points=points, score=score, passed=score == points,
                    message=record.diagnostic(cell.outputs),
                    diagnosis=diagnoses.get(grade_id) or ("" if score == points else "error"),
                ))
                if last_solution:
                    solution_of[grade_id] = last_solution
        data = record.GradeRecord(
            student=student,
            assignment=assignment,
            notebook=notebook,
            questions=questions,
            flags=state.get("flags", []),
            notes=state.get("notes", []),
            failure=state.get("failure"),
            sandboxed=state.get("sandboxed", False),
            errors=_cell_errors(nb),
        )
        directory = Path(coursedir.format_path(coursedir.autograded_directory, student, assignment))
        data.write(directory / f"{notebook}{record.SUFFIX}")
        for flag in data.flags:
            self.log.warning("FLAGGED %s/%s/%s: %s", student, assignment, notebook, flag)
        if not data.sandboxed:
            self.log.warning("NOT SANDBOXED %s/%s/%s", student, assignment, notebook)
        self._write_gradebook(resources, notebook, assignment, student, questions, solution_of,
                              set(state.get("flagged", [])))
        return nb, resources

    def _write_gradebook(self, resources, notebook, assignment, student, questions,
                         solution_of, flagged):
        messages: dict[str, list[str]] = {}  # the diagnoses of a solution cell's failed tests
        for question in questions:
            solution = solution_of.get(question["question"])
            if solution is not None and not question["passed"]:
                messages.setdefault(solution, []).append(question["message"])
        with Gradebook(resources["nbgrader"]["db_url"]) as gradebook:
            for question in questions:
                if question["question"] in flagged:
                    with contextlib.suppress(MissingEntry):
                        gradebook.find_grade(question["question"], notebook, assignment,
                                             student).needs_manual_grade = True
            for solution, texts in messages.items():
                with contextlib.suppress(MissingEntry):
                    gradebook.find_comment(solution, notebook, assignment,
                                           student).auto_comment = "\n".join(texts)
            gradebook.db.commit()


def _cell_errors(nb: NotebookNode) -> list[str]:
    """The errors the student's own cells raised: "cell: Type: message", cut short."""
    errors = []
    for index, cell in enumerate(nb.cells):
        if cell_role(cell) != "answer":
            continue
        for output in cell.get("outputs", []):
            if output.output_type == "error":
                where = _grade_id(cell) or f"cell {index + 1}"
                errors.append(f"{where}: {record.shorten(_error_text(output), 200)}")
    return errors


def _error_text(output) -> str:
    value = record.strip_ansi(str(output.get("evalue", ""))).strip()
    return f"{output.get('ename')}: {value}" if value else str(output.get("ename"))


class HideHiddenTests(NbGraderPreprocessor):
    """Keep hidden tests out of the feedback: their code, and tracebacks that would show it.

    A test cell keeps its visible part; the hidden part becomes one comment line. Errors in
    test cells keep their type and message (the diagnostic), not their traceback.
    """

    def preprocess_cell(self, cell, resources, index):
        if not _is_test_cell(cell):
            return cell, resources
        cell.source = strip_hidden_tests(cell.source)
        for output in cell.get("outputs", []):
            if output.output_type == "error":
                output.traceback = [f"{output.ename}: {output.evalue}"]
        return cell, resources


def strip_hidden_tests(source: str) -> str:
    """Return ``source`` with each hidden-test block replaced by a one-line note."""
    lines, hidden = [], False
    for line in source.splitlines():
        if line.strip() == HIDDEN_BEGIN:
            hidden = True
            lines.append("# (hidden tests run here: their results are shown below)")
        elif line.strip() == HIDDEN_END:
            hidden = False
        elif not hidden:
            lines.append(line)
    return "\n".join(lines)
