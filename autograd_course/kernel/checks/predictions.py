"""Checks of a predicted exception: the name or class of what code raises, or None.

The truth is found by running the code here (``raised_by``: in the judge when grading), never
in the student's kernel; a class from the kernel counts by its name alone.
"""

from __future__ import annotations

import contextlib
import io
import warnings

from autograd_course.kernel.checks.errors import _fail, _what_it_is
from autograd_course.kernel.wire import Handle


def _exception_name(prediction, name):
    if prediction is None:
        return None
    if isinstance(prediction, type) and issubclass(prediction, BaseException):
        return prediction.__name__
    if isinstance(prediction, Handle) and prediction.type_name == "type":
        return prediction.__name__  # a class in the student's kernel: only its name counts
    if isinstance(prediction, str) and prediction.strip():
        return prediction.strip()
    _fail(
        "type",
        f"{name} should be the name of an exception class (a string such as 'KeyError'), the "
        f"class itself, or None for 'runs without error'; {_what_it_is(prediction)}.",
    )


def raised_by(code):
    """Run ``code()`` (a function of no argument) quietly; return the class of the exception it
    raises, or None when it runs without error. Warnings and printed output are discarded."""
    sink = io.StringIO()
    with warnings.catch_warnings(), contextlib.redirect_stdout(sink), contextlib.redirect_stderr(
            sink):
        warnings.simplefilter("ignore")
        try:
            code()
        except Exception as error:  # noqa: BLE001 -- any exception is the answer
            return type(error)
    return None


def check_prediction_format(prediction, name: str = "prediction") -> None:
    """Check that ``prediction`` is an exception name, an exception class, or None."""
    _exception_name(prediction, name)


def check_prediction(prediction, code, name: str = "prediction") -> None:
    """Check a predicted outcome of ``code()``: the exception class it raises (its name, or the
    class), or None when it runs without error. The truth is found by running ``code()``,
    here (in the judge when grading), never in the student's kernel."""
    predicted = _exception_name(prediction, name)
    raised = raised_by(code)
    actual = None if raised is None else raised.__name__
    if predicted == actual:
        return
    tip = " Run the code in a try/except block and look at type(err).__name__ and str(err)."
    if predicted is None:
        message = f"{name}: you predicted that the code runs without error, but it raises."
    elif actual is None:
        message = f"{name}: you predicted {predicted}, but the code runs without error."
    else:
        message = f"{name}: the code raises a different exception than {predicted}."
    _fail("exception", message + tip, actual)
