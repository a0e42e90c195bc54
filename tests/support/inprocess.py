"""Run an assignment's cells in this process, as a student's kernel and as the judge would.

``run_local`` runs the cells in one namespace, as a student's own kernel does (test cells
included): the student's experience of the visible checks. ``run_judged`` runs the student's
cells in an in-process 'kernel' (:class:`~autograd_course.grading.boundary.links.InProcessLink`) and
the test cell in the judge, through the same encoding, decoding and handles as real grading:
the grader's verdict, without a kernel process.
"""

from __future__ import annotations

import contextlib
import io
import warnings
from dataclasses import dataclass

import nbformat

from autograd_course.grading.boundary.judge import Session, Verdict
from autograd_course.grading.boundary.links import InProcessLink

HIDDEN = "### BEGIN HIDDEN TESTS"


def meta(cell) -> dict:
    return cell.metadata.get("nbgrader", {})


def _cells_up_to(nb, qid: str):
    """The code cells before ``qid``'s test cell (other tests left out), and that test cell.

    Each cell comes with whether it belongs to ``qid`` (after the previous test cell).
    """
    before = []
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        m = meta(cell)
        if m.get("grade") and not m.get("solution"):
            if m.get("grade_id") == f"{qid}_test":
                return before, cell
            before = [(c, False) for c, _ in before]
            continue
        before.append((cell, True))
    raise AssertionError(f"no test cell for {qid}")


def _source(cell, qid: str, solution: str | None) -> str:
    return solution if (solution is not None and meta(cell).get("grade_id") == qid) else (
        cell.source)


@dataclass
class LocalRun:
    """What a test cell did in a student's kernel: its exception, output and warnings."""

    error: BaseException | None
    stdout: str
    stderr: str
    warnings: list


def run_local(nb: nbformat.NotebookNode, qid: str, solution: str | None = None,
              visible_only: bool = False) -> LocalRun:
    """Run the cells up to ``qid``'s test cell in one namespace, as a student's kernel does."""
    namespace: dict = {"__name__": "__main__"}
    before, test = _cells_up_to(nb, qid)
    for cell, _ in before:
        with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
            warnings.simplefilter("ignore")
            with contextlib.suppress(Exception):
                exec(compile(_source(cell, qid, solution), "<cell>", "exec"), namespace)
    code = test.source.split(HIDDEN)[0] if visible_only else test.source
    out, err = io.StringIO(), io.StringIO()
    with (warnings.catch_warnings(record=True) as caught, contextlib.redirect_stdout(out),
          contextlib.redirect_stderr(err)):
        warnings.simplefilter("always")
        try:
            exec(compile(code, f"<{qid}_test>", "exec"), namespace)
        except Exception as error:  # noqa: BLE001 -- the outcome under test
            return LocalRun(error, out.getvalue(), err.getvalue(), caught)
    return LocalRun(None, out.getvalue(), err.getvalue(), caught)


def run_judged(nb: nbformat.NotebookNode, qid: str, solution: str | None = None,
               seed_key: bytes | None = None, session: Session | None = None) -> Verdict:
    """Run the cells up to ``qid``'s test cell as grading does, and return the judge's verdict.

    Student cells run in an in-process 'kernel'; locked cells there and in the judge; the
    test cell in the judge. ``seed_key`` fixes the hidden inputs (fresh ones without it).
    """
    link = InProcessLink()
    session = session or Session(link, seed_key=seed_key)
    session.link = link
    before, test = _cells_up_to(nb, qid)
    unanswered, answer_error = False, ""
    for cell, own in before:
        error = link.run_cell(_source(cell, qid, solution))
        m = meta(cell)
        if m.get("locked") and not m.get("solution"):
            session.run_locked(cell.source, m.get("grade_id", "locked"))
        elif own and m.get("solution") and error is not None:
            if isinstance(error, NotImplementedError):
                unanswered = True
            else:
                answer_error = f"{type(error).__name__}: {error}"
    return session.run_test(test.source, f"{qid}_test", unanswered=unanswered,
                            answer_error=answer_error)
