"""Checks of predictions: a predicted exception, and a set of predictions counted, not named.

- ``check_prediction``: the name or class of what code raises, or None. The truth is found by
  running the code here (``raised_by``: in the judge when grading), never in the student's
  kernel; a class from the kernel counts by its name alone.
- ``check_predictions``: several predictions of one question (booleans, numbers, tensors,
  None, choices), against the truth the test computed. A wrong set is told HOW MANY of its
  predictions are wrong, never which ones nor why: naming an item (or the reason that fits it)
  would give the answer away in one check. A count gives it away too, one check per item
  (flip one item, re-check, see the count move); the real limit is where the check runs: in
  self-study the learner has source/, answers included, anyway; on a course server the hidden
  tests (these checks) run only when the work is graded. The form of each item is the visible
  checks' job, and may be named.

>>> from autograd_course.kernel.checks import CheckError, check_predictions
>>> check_predictions({"a": True, "b": 2.0}, {"a": True, "b": 2.0}, name="predicted")
>>> try:
...     check_predictions((True, False, True), (True, True, False), name="raises",
...                       explain="Go through all three again.")
... except CheckError as error:
...     print(error.diagnosis)
...     print(error)
predictions
2 of the 3 predictions in raises are wrong (the check does not say which: work each one
out from the rule it tests). Go through all three again.
>>> check_predictions({"a": -8.0, "b": None}, {"a": -4.0, "b": None}, name="predicted")
Traceback (most recent call last):
...
autograd_course.kernel.checks.CheckError: 1 of the 2 predictions in predicted is wrong ...
"""

from __future__ import annotations

import contextlib
import io
import math
import warnings
from collections.abc import Mapping, Sequence

import numpy as np
import torch

from autograd_course.kernel.checks.errors import _fail, _what_it_is
from autograd_course.kernel.checks.values import _guard
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


#: The diagnosis of a set of predictions with some wrong (which ones is never said).
WRONG_PREDICTIONS = "predictions"


def _matches(given, truth, rtol: float, atol: float) -> bool:
    """Whether one prediction is right: the same kind of value as the truth, and equal to it
    (numbers and tensors within ``rtol``/``atol``; a tensor of the same shape)."""
    if truth is None:
        return given is None
    if isinstance(truth, bool | np.bool_):
        return isinstance(given, bool | np.bool_) and bool(given) == bool(truth)
    if isinstance(truth, torch.Tensor):
        if not isinstance(given, torch.Tensor) or tuple(given.shape) != tuple(truth.shape):
            return False
        with torch.no_grad():
            return bool(torch.allclose(given.detach().to(torch.float64),
                                       truth.detach().to(torch.float64), rtol=rtol, atol=atol))
    if isinstance(truth, int | float | np.number):
        if isinstance(given, bool | np.bool_) or not isinstance(given, int | float | np.number):
            return False
        return math.isclose(float(given), float(truth), rel_tol=rtol, abs_tol=atol)
    return type(given) is type(truth) and given == truth


def _pairs(given, truth, name: str) -> list[tuple[object, object]]:
    """The (prediction, truth) pairs, by key for a dict of predictions, by position for a
    sequence; a different set of keys or length fails on the form (naming no value)."""
    if isinstance(truth, Mapping):
        if not isinstance(given, Mapping) or set(given) != set(truth):
            _fail("shape", f"{name} should be a dict with the keys "
                  f"{', '.join(repr(key) for key in truth)}; {_what_it_is(given)}"
                  + (f" with the keys {sorted(given, key=repr)!r}."
                     if isinstance(given, Mapping) else "."))
        return [(given[key], truth[key]) for key in truth]
    truth = list(truth)
    if isinstance(given, str | bytes) or not isinstance(given, Sequence):
        _fail("type", f"{name} should be a list or tuple of {len(truth)} predictions, but "
              f"{_what_it_is(given)}.")
    if len(given) != len(truth):
        _fail("shape", f"{name} should have {len(truth)} items, but it has {len(given)}.")
    return list(zip(given, truth, strict=True))


def check_predictions(given, truth, name: str = "predictions", *, explain: str | None = None,
                      rtol: float = 1e-5, atol: float = 1e-6) -> None:
    """Check a set of predictions against ``truth`` (computed by the test), saying how many are
    wrong and never which.

    ``given`` and ``truth`` are dicts with the same keys, or sequences of the same length; an
    item is right when it is the same kind of value as its truth and equal to it: True/False,
    None, a number or a tensor (close, within ``rtol``/``atol``; a tensor of the same shape),
    or any other value (a string such as "A") compared with ``==``. When some are wrong it
    raises a :class:`CheckError` (diagnosis ``"predictions"``) that gives their number and
    ``explain`` (advice for the whole set: it must not single out an item), never an item's
    key, position, value or the reason it is wrong. Check each item's form first, in the
    visible part: a malformed item just counts as wrong here.
    """
    _guard(truth)
    pairs = _pairs(given, truth, name)
    wrong = sum(not _matches(item, right, rtol, atol) for item, right in pairs)
    if not wrong:
        return
    message = (f"{wrong} of the {len(pairs)} predictions in {name} "
               f"{'is' if wrong == 1 else 'are'} wrong (the check does not say which: work each "
               "one out from the rule it tests).")
    if explain:
        message += f" {explain}"
    expected = dict(truth) if isinstance(truth, Mapping) else list(truth)
    _fail(WRONG_PREDICTIONS, message, expected)
