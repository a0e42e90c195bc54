"""The failures of a check: the errors it raises and the helpers that raise them.

A failed check raises :class:`CheckError` (``_fail``), whose message names the mistake; a
question not answered yet is :class:`NotAnswered`; the student's function raising in the kernel
is :class:`StudentError`. A fact the kernel reports of its own tensor fails through ``_fact``:
a failed check in a kernel, a note worth no points in the judge. Messages describe a wrong
answer with ``_what_it_is``.
"""

from __future__ import annotations

from autograd_course.kernel.checks.contract import JUDGE
from autograd_course.kernel.wire import Handle
from autograd_course.kernel.wrapping import wrapped


class CheckError(AssertionError):
    """A failed check. The message explains the mistake; the attributes are for graders/tests.

    ``diagnosis`` is a short code of the mistake ("none", "accumulated", "sign", "shape",
    "dtype", "graph", "leaf", "values", ...); ``expected`` the expected value (never part of
    the message unless ``reveal`` is true). In a notebook it shows as one short red line.
    """

    def __init__(self, message: str, diagnosis: str, expected=None, reveal: bool = False):
        super().__init__(message)
        self.diagnosis = diagnosis
        self.expected = expected
        self.reveal = reveal

    def _render_traceback_(self) -> list[str]:
        """What IPython shows instead of a traceback: the diagnosis alone."""
        return [_red_line(type(self).__name__, str(self))]


class NotAnswered(CheckError):
    """A visible check met a question that is not answered yet: its answer still raises the
    template's ``NotImplementedError``, or a name it defines does not exist (its cell was not
    run). Diagnosis "blank"; in a notebook it shows as one red line, like any CheckError."""

    def __init__(self, message: str):
        super().__init__(message, "blank")


def _red_line(ename: str, message: str) -> str:
    """``ename: message``, the name in red, :func:`~..wrapping.wrapped` to the notebook's
    columns."""
    return f"\x1b[0;31m{ename}\x1b[0m" + wrapped(f"{ename}: {message}")[len(ename):]


def _not_implemented(label: str) -> NotAnswered:
    return NotAnswered(f"{label} is not answered yet: it still raises NotImplementedError. "
                       "Replace the `raise NotImplementedError()` in its answer cell with your "
                       "answer, run that cell, then this one again.")


def _not_defined(name: str | None) -> NotAnswered:
    what = f"`{name}`" if name else "a name this test uses"
    return NotAnswered(f"{what} is not defined yet: run the cell above that defines it, its "
                       "answer cell (with your answer in place of the `raise "
                       "NotImplementedError()`; if that cell fails, fix its error first) or a "
                       "cell the notebook asks you to run (Run ▸ Run All Above Selected Cell "
                       "runs them all), and check the spelling of the name.")


def _is_the_stub(error: BaseException) -> bool:
    """Whether ``error`` is the template's blank answer, ``raise NotImplementedError()`` (a
    NotImplementedError with a message comes from somewhere else: PyTorch, say)."""
    return isinstance(error, NotImplementedError) and not str(error)


class StudentError(Exception):
    """The student's function raised an exception while the judge called it in the kernel."""

    def __init__(self, label: str, type_name: str, message: str):
        super().__init__(f"{label} raised {type_name}: {message}")
        self.label, self.type_name, self.message = label, type_name, message


def _fail(diagnosis: str, message: str, expected=None, reveal: bool = False):
    raise CheckError(message, diagnosis, expected, reveal)


def _fact(diagnosis: str, message: str) -> None:
    """A check of a fact the student's kernel reports about its own tensor (requires_grad,
    grad_fn, is_leaf, is_inference, the memory it views, its ``.grad``) failed.

    In the learner's own kernel this is a failed check like any other. In the judge it costs
    no points: the kernel can forge such a fact, so the grade rests on values the student
    must compute and on what is measured from outside the kernel; the diagnosis is shown as a
    note (:data:`NOTE`) with the test's result.
    """
    judge = JUDGE.get()
    if judge is None:
        _fail(diagnosis, message)
    judge.note(diagnosis, message)


#: How the judge shows a diagnosis that costs no points.
NOTE = "Note (no points at stake): "


def _type_name(value) -> str:
    if isinstance(value, Handle):
        return f"{value.type_name} (an object kept in your kernel)"
    return type(value).__name__


def _what_it_is(value) -> str:
    """What ``value`` is, for "... but {_what_it_is(value)}": "it is None", or "its type is
    AddBackward0" (no article to get wrong before a type name: a int, a AddBackward0)."""
    if value is None:
        return "it is None"
    return f"its type is {_type_name(value)}"
