"""nbgrader preprocessors that make autograding safe; the course's nbgrader_config.py uses them.

Sanitize stage (before the notebook runs):
    :class:`RepairSubmission` puts back cells a student deleted and notes edited locked cells.
Autograde stage:
    :class:`GuardedExecute` runs the notebook with grader cells around every test and judges,
    outside the kernel, whether each test really passed; :class:`RecordResults` writes the
    grade record (scores, diagnostic messages, flags) and puts each diagnostic into the
    gradebook comment that the feedback shows.
Feedback:
    :class:`HideHiddenTests` removes hidden-test code and tracebacks from the feedback.
Reading:
    :class:`TolerantNotebookExporter` grades a file that is not a valid notebook as an empty
    submission instead of stopping.
"""

from __future__ import annotations

import copy
import json
import os
import re
import secrets
import threading
from pathlib import Path

import nbformat
from nbconvert.exporters import NotebookExporter
from nbformat.notebooknode import NotebookNode
from nbgrader import utils
from nbgrader.api import Gradebook, MissingEntry
from nbgrader.coursedir import CourseDirectory
from nbgrader.preprocessors import Execute, NbGraderPreprocessor
from traitlets import Integer, Unicode

from autograd_course.grading import record, scan

META = "autograd_course"
HIDDEN_BEGIN = "### BEGIN HIDDEN TESTS"
HIDDEN_END = "### END HIDDEN TESTS"


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


def _stdout(cell: NotebookNode) -> str:
    return "".join(
        o.get("text", "")
        for o in cell.get("outputs", [])
        if o.output_type == "stream" and o.name == "stdout"
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


class _Instrumented:
    """The notebook as the kernel runs it: grader cells around every test cell."""

    def __init__(self, nb: NotebookNode):
        self.original = nb
        self.prologue_token = secrets.token_hex(16)
        self.cells: list[NotebookNode] = []
        self.roles: list[tuple[str, int]] = []  # (role, index of the original cell)
        self.tokens: dict[int, dict[str, str]] = {}
        self.sources: dict[int, str] = {}
        self._add(
            "prologue",
            -1,
            "import autograd_course.grading.guard as __grader_guard\n"
            f"__grader_guard.install(); print('{self.prologue_token}:installed')",
        )
        for index, cell in enumerate(nb.cells):
            if not _is_test_cell(cell):
                self.cells.append(cell)
                self.roles.append(("cell", index))
                continue
            tokens = {k: secrets.token_hex(16) for k in ("reset", "end", "canary", "after")}
            self.tokens[index] = tokens
            self._add("reset", index, f"__grader_guard.reset('{tokens['reset']}')")
            self.sources[index] = cell.source
            cell.source = cell.source.rstrip() + f"\nprint('{tokens['end']}')"
            self.cells.append(cell)
            self.roles.append(("test", index))
            self._add(
                "canary",
                index,
                f"__grader_guard.canary('{tokens['canary']}')\nprint('{tokens['after']}')",
            )

    def _add(self, role: str, index: int, source: str) -> None:
        self.cells.append(nbformat.v4.new_code_cell(source))
        self.roles.append((role, index))

    def notebook(self) -> NotebookNode:
        nb = copy.copy(self.original)
        nb.cells = self.cells
        return nb

    def restore_sources(self) -> None:
        for index, source in self.sources.items():
            self.original.cells[index].source = source


class GuardedExecute(Execute):
    """nbgrader's Execute, made safe against tampering and hostile notebooks.

    - A grader cell runs first and captures the comparison functions, the course's check
      helpers and the IPython hooks (:mod:`autograd_course.grading.guard`).
    - Before every test cell a grader cell restores all of them and reports what had changed.
    - Every test cell ends with a secret token; a test passes only if its token was printed
      (it ran to its end) and no error was reported.
    - After every test cell a canary cell must fail with its own secret; a kernel that hides
      failures (replaced run_cell, input transformers, custom exception handlers) is caught.
    - The student's code is scanned outside the kernel (:mod:`.scan`).
    Any sign of tampering withholds the notebook's autograded points and flags it.
    A kernel that dies (crash, ``os._exit``, memory limit) or stops answering fails only
    the tests that had not run; the notebook is still graded.
    """

    memory_limit_mb = Integer(
        4096, help="Kill the grading kernel when its memory (RSS) exceeds this many MiB."
    ).tag(config=True)
    withheld_message = Unicode(
        "tampering with the grader was detected ({reason}); the autograded points of this "
        "notebook are withheld and your instructor will review it",
        help="The message a tampered notebook's test cells fail with.",
    ).tag(config=True)

    def preprocess(self, nb, resources):
        state = resources.setdefault(META, {})
        notes = list(nb.metadata.get(META, {}).get("notes", []))
        findings = self._scan(nb)
        plan = _Instrumented(nb)
        self._watch = {"killed": None}
        failure = None
        try:
            super().preprocess(plan.notebook(), resources)
        except Exception as exc:  # the kernel died or stopped answering: grade what ran
            failure = self._describe_failure(exc)
        finally:
            plan.restore_sources()
            self.nb = nb
        flags, reasons = self._judge(plan, failure)
        flags += [f"code scan: {f}" for f in findings]
        if flags:
            reason = "; ".join(dict.fromkeys(f.split(":")[0] for f in flags))
            for index in plan.tokens:
                cell = nb.cells[index]
                cell.outputs.insert(
                    0, _error("TamperingDetected", self.withheld_message.format(reason=reason))
                )
        state.update(notes=notes, flags=flags, reasons=reasons, failure=failure)
        return nb, resources

    # -- running -----------------------------------------------------------------------
    def start_new_kernel_client(self):
        client = super().start_new_kernel_client()
        self._start_watchdog()
        return client

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

    def preprocess_cell(self, cell, resources, index):
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
        return cell, resources

    def _describe_failure(self, exc: BaseException) -> str:
        if self._watch.get("killed"):
            return self._watch["killed"]
        if isinstance(exc, _Unresponsive):
            return str(exc)
        name = type(exc).__name__
        if name == "DeadKernelError":
            return "the kernel died (a crash, os._exit or a signal)"
        return f"grading stopped: {_short(exc)}"

    # -- judging -----------------------------------------------------------------------
    def _scan(self, nb) -> list[scan.Finding]:
        protected: dict[str, str] = {}
        for cell in nb.cells:
            locked = cell.metadata.get("nbgrader", {}).get("locked", False)
            if cell.cell_type == "code" and locked and not utils.is_solution(cell):
                protected.update(
                    {k: v for k, v in scan.imported_names(cell.source).items() if "." in v}
                )
        findings = []
        for cell in nb.cells:
            nbg = cell.metadata.get("nbgrader", {})
            if cell.cell_type != "code" or (nbg.get("locked") and not nbg.get("solution")):
                continue
            where = nbg.get("grade_id") or f"cell {cell.get('id', '?')}"
            findings.extend(scan.scan_source(cell.source, where, protected))
        return findings

    def _judge(self, plan: _Instrumented, failure: str | None):
        flags: list[str] = []
        reasons: dict[str, str] = {}
        prologue = plan.cells[0]
        if f"{plan.prologue_token}:installed" not in _stdout(prologue):
            raise RuntimeError(
                "the grader's first cell failed: " + json.dumps(prologue.outputs)[:500]
            )
        ran = [i for i, c in enumerate(plan.cells)
               if c.get("execution_count") is not None or c.get("outputs")]
        last_run = ran[-1] if ran else -1  # where the kernel was when it died, if it did
        for position, ((role, index), cell) in enumerate(
                zip(plan.roles, plan.cells, strict=True)):
            if role == "prologue" or index not in plan.tokens:
                continue
            tokens = plan.tokens[index]
            grade_id = _grade_id(plan.original.cells[index])
            executed = cell.get("execution_count") is not None or bool(cell.get("outputs"))
            if not executed:
                if role == "test":
                    reason = failure or "the test did not run"
                    cell.outputs.insert(0, _error("NotRun", reason))
                    reasons[grade_id] = reason
                continue
            if role == "reset":
                match = re.search(re.escape(tokens["reset"]) + r":reset:(\[.*\])", _stdout(cell))
                if match is None:
                    flags.append(f"grader cell blocked: the check before {grade_id} did not run")
                else:
                    for name in json.loads(match.group(1)):
                        flags.append(f"replaced {name}: found before {grade_id}")
            elif role == "test":
                died_here = failure is not None and position == last_run
                self._judge_test(cell, tokens, grade_id, flags, failure if died_here else None)
            elif role == "canary":
                errors = [o for o in cell.outputs if o.output_type == "error"]
                honest = any(
                    o.get("ename") == "AssertionError" and o.get("evalue") == tokens["canary"]
                    for o in errors
                ) and tokens["after"] not in _stdout(cell)
                if not honest:
                    flags.append(
                        f"kernel hides failures: a failing grader cell after {grade_id} "
                        "was reported as passing"
                    )
        return flags, reasons

    @staticmethod
    def _judge_test(cell, tokens, grade_id, flags, died: str | None) -> None:
        """Pass only a test that printed its end token; ``died`` names a kernel death in it."""
        finished = tokens["end"] in _stdout(cell)
        for output in cell.outputs:
            if output.output_type == "stream" and tokens["end"] in output.text:
                output.text = output.text.replace(tokens["end"] + "\n", "").replace(
                    tokens["end"], ""
                )
        cell.outputs = [o for o in cell.outputs if not (o.output_type == "stream" and not o.text)]
        failed = any(o.output_type == "error" for o in cell.outputs)
        if not finished and not failed and died:
            cell.outputs.insert(0, _error("KernelDied", died))
        elif not finished and not failed:
            flags.append(
                f"kernel hides failures: {grade_id} stopped before its end without an error"
            )
            cell.outputs.insert(
                0, _error("TestDidNotFinish", "the test cell did not run to its end")
            )


class _Unresponsive(Exception):
    pass


class RecordResults(NbGraderPreprocessor):
    """Write the grade record of the notebook and put each diagnostic in the gradebook.

    The record (``<notebook>.grading.json`` beside the autograded notebook) lists every test
    cell with its points, score and message, the notes on repaired cells and the tampering
    flags; the message also becomes the auto-comment of the question's solution cell, which
    nbgrader's feedback shows.
    """

    def preprocess(self, nb, resources):
        coursedir, assignment, notebook = _course_paths(self.config, resources)
        student = resources["nbgrader"]["student"]
        state = resources.get(META, {})
        questions = []
        solution_of = {}
        last_solution = None
        for cell in nb.cells:
            if utils.is_solution(cell):
                last_solution = _grade_id(cell)
            if _is_test_cell(cell):
                score, points = utils.determine_grade(cell, self.log)
                message = record.diagnostic(cell.outputs)
                grade_id = _grade_id(cell)
                questions.append(
                    dict(
                        question=grade_id,
                        points=points,
                        score=score,
                        passed=score == points,
                        message=message,
                    )
                )
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
        )
        directory = Path(coursedir.format_path(coursedir.autograded_directory, student, assignment))
        data.write(directory / f"{notebook}{record.SUFFIX}")
        for flag in data.flags:
            self.log.warning("FLAGGED %s/%s/%s: %s", student, assignment, notebook, flag)
        self._comment(resources, notebook, assignment, student, questions, solution_of)
        return nb, resources

    def _comment(self, resources, notebook, assignment, student, questions, solution_of):
        with Gradebook(resources["nbgrader"]["db_url"]) as gradebook:
            for question in questions:
                solution = solution_of.get(question["question"])
                if solution is None or question["passed"]:
                    continue
                try:
                    comment = gradebook.find_comment(solution, notebook, assignment, student)
                except MissingEntry:
                    continue
                comment.auto_comment = f"{question['question']}: {question['message']}"
            gradebook.db.commit()


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
