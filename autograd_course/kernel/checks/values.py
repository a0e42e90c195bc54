"""Checks of a value: compare an answer with the expected one and name the mistake.

``check_tensor`` and ``check_number`` compare values (``_compare`` names a wrong sign, a factor,
zeros, NaN, or one of the question's own ``mistakes``); the other checks look at an answer's
form alone (a number, a bool, a tuple, a shape). Rules: with ``reveal=False`` a message never
shows the expected values; in the judge an expected value a test function carried into the
kernel is refused (``_guard``).
"""

from __future__ import annotations

import numpy as np
import torch

from autograd_course.kernel.checks.contract import JUDGE
from autograd_course.kernel.checks.errors import _fail, _what_it_is


def _is_a_tensor(value) -> bool:
    return isinstance(value, torch.Tensor)


def _close(a, b, rtol, atol) -> bool:
    return bool(torch.allclose(a, b, rtol=rtol, atol=atol))


def _fmt(t) -> str:
    return str(t.detach().tolist()) if _is_a_tensor(t) else str(t)


def _guard(expected) -> None:
    """In the judge: refuse an expected value that a test function carried into the kernel."""
    judge = JUDGE.get()
    if judge is not None:
        judge.check_not_sent(expected)


def _compare(actual, expected, name, rtol, atol, reveal, hint, mistakes, gradient):
    """Compare two tensors of equal shape and name the mistake if they differ.

    The story of a multiple (accumulated over k backward() calls, a gradient cleared too
    early) is told only for ``gradient`` answers, which autograd computed: a hand-derived
    value, a prediction or an evaluation that is off by a factor just has a factor wrong.
    """
    if not bool(torch.isfinite(actual).all()):
        _fail(
            "nan",
            f"{name} contains NaN or infinite values: check for a division by zero, a "
            "learning rate that is too large, or a gradient that grows at every step.",
            expected,
            reveal,
        )
    if _close(actual, expected, rtol, atol):
        return
    for candidate, diagnosis, message in mistakes:
        candidate = torch.as_tensor(candidate, dtype=expected.dtype)
        if candidate.numel() == expected.numel():
            candidate = candidate.reshape(expected.shape)  # a number against a 1-element tensor
        if candidate.shape == expected.shape and _close(actual, candidate, rtol, atol):
            _fail(diagnosis, f"{name}: {message}", expected, reveal)
    what = "gradient" if gradient else "value"
    zero = torch.zeros_like(expected)
    if not _close(expected, zero, 0.0, atol):
        if _close(actual, -expected, rtol, atol):
            _fail(
                "sign",
                f"{name} has the wrong sign (it is minus the right {what}). Check the order "
                "of a subtraction (prediction - target, not target - prediction) and, in an "
                "update, that you step against the gradient: x - lr * grad.",
                expected,
                reveal,
            )
        for k, word in ((2, "twice"), (3, "three times"), (4, "four times")):
            if _close(actual, k * expected, rtol, atol):
                if gradient:
                    _fail(
                        "accumulated",
                        f"{name} is {word} the right gradient: it was accumulated over {k} "
                        "backward() calls. .grad adds up, it is not replaced: call backward() "
                        "once per gradient, and clear .grad (x.grad = None, or "
                        "optimizer.zero_grad()) before the next backward().",
                        expected,
                        reveal,
                    )
                _fail("factor", f"{name} is {word} the right value: a factor {k} too many "
                      "(count the terms and the power rule's factor again).", expected, reveal)
            if _close(k * actual, expected, rtol, atol):
                _fail(
                    "fraction",
                    f"{name} is only 1/{k} of the right {what}: a factor is missing (the "
                    "power rule's factor? a term of a sum?).",
                    expected,
                    reveal,
                )
        if _close(actual, zero, 0.0, atol):
            message = f"{name} is all zeros."
            if gradient:
                message += (" Was the gradient cleared (optimizer.zero_grad(), x.grad = None) "
                            "after backward() and before it was read?")
            _fail("zero", message, expected, reveal)
    message = f"{name} has the wrong values (its shape and dtype are right)."
    if hint:
        message += f" {hint}"
    if reveal:
        message += f" Expected {_fmt(expected)}, got {_fmt(actual)}."
    else:
        message += " (Hidden test: the expected values are not shown.)"
    _fail("values", message, expected, reveal)


def _dtype_message(name: str, actual: torch.dtype, expected: torch.dtype) -> str:
    message = f"{name} has dtype {actual} instead of {expected}."
    if not actual.is_floating_point and expected.is_floating_point:
        return message + (" torch.tensor([1, 2]) makes integers: write 1.0, or pass "
                          f"dtype={expected}.")
    if actual.is_floating_point and expected.is_floating_point:
        return message + (f" Create it with dtype={expected} (or convert with "
                          f".to({expected})): PyTorch's default for new tensors is "
                          "torch.float32.")
    return message + f" Convert it with .to({expected})."


def check_tensor(
    actual,
    expected,
    name: str = "result",
    *,
    rtol: float = 1e-5,
    atol: float = 1e-6,
    reveal: bool = False,
    hint: str | None = None,
    mistakes=(),
    check_dtype: bool = True,
    gradient: bool = False,
) -> None:
    """Check that ``actual`` is a tensor with the shape, dtype and values of ``expected``.

    Values are compared with ``torch.allclose(actual, expected, rtol, atol)``. When they
    differ, the message names the mistake: None, not a tensor, shape, dtype, NaN, wrong sign,
    a factor too many or missing, all zeros, or one of ``mistakes`` --
    ``(wrong_value, diagnosis, message)`` triples for mistakes specific to a question, which
    the test computes itself (e.g. the result of a loop that never clears ``.grad``).
    ``gradient=True`` says the answer is a gradient autograd computed: a multiple is then
    explained as gradients accumulated over several ``backward()`` calls, and zeros as a
    gradient cleared too early. ``hint`` is added to the generic "wrong values" message;
    ``reveal=True`` adds the expected and actual values (visible checks only).
    """
    _guard(expected)
    expected = torch.as_tensor(expected)
    if actual is None:
        _fail(
            "none",
            f"{name} is None. A gradient is None when the tensor was not created with "
            "requires_grad=True, when backward() was never called on a result computed from "
            "it, or when it is read from a non-leaf tensor. Did your function return its "
            "result?",
            expected,
            reveal,
        )
    if not _is_a_tensor(actual):
        extra = ""
        if isinstance(actual, int | float):
            extra = " Wrap a number with torch.tensor(...), or return the tensor itself."
        _fail(
            "type",
            f"{name} should be a torch.Tensor, but {_what_it_is(actual)}.{extra}",
            expected,
            reveal,
        )
    if tuple(actual.shape) != tuple(expected.shape):
        extra = ""
        if actual.dim() == 0 and expected.dim() > 0:
            extra = " A 0-dimensional result: did you sum or average where you should not?"
        _fail(
            "shape",
            f"{name} has the wrong shape: {tuple(actual.shape)} instead of "
            f"{tuple(expected.shape)}.{extra}",
            expected,
            reveal,
        )
    if check_dtype and actual.dtype != expected.dtype:
        _fail("dtype", _dtype_message(name, actual.dtype, expected.dtype), expected, reveal)
    with torch.no_grad():
        a = actual.detach().to(torch.float64)
        e = expected.detach().to(torch.float64)
        _compare(a, e, name, rtol, atol, reveal, hint, mistakes, gradient)


def check_number(
    actual,
    expected: float,
    name: str = "result",
    *,
    rtol: float = 1e-6,
    atol: float = 1e-8,
    reveal: bool = False,
    hint: str | None = None,
    mistakes=(),
    gradient: bool = False,
) -> None:
    """Check that ``actual`` is a Python number close to ``expected`` (same diagnoses as
    :func:`check_tensor`). A one-element tensor is refused with a hint to use ``.item()``."""
    _guard(expected)
    if actual is None:
        _fail("none", f"{name} is None: did your function return its result?", expected, reveal)
    if _is_a_tensor(actual):
        _fail(
            "type",
            f"{name} should be a Python number, but it is a tensor: use .item() to turn a "
            "one-element tensor into a number.",
            expected,
            reveal,
        )
    if isinstance(actual, bool | np.bool_) or not isinstance(actual, int | float | np.number):
        _fail(
            "type",
            f"{name} should be a number (float), but {_what_it_is(actual)}.",
            expected,
            reveal,
        )
    a = torch.as_tensor([float(actual)], dtype=torch.float64)
    e = torch.as_tensor([float(expected)], dtype=torch.float64)
    _compare(a, e, name, rtol, atol, reveal, hint, mistakes, gradient)


def check_number_format(actual, name: str = "result") -> None:
    """Check that ``actual`` is a plain number (for predictions, before their values count)."""
    if actual is None:
        _fail("none", f"{name} is None: assign your number to it.")
    if _is_a_tensor(actual):
        _fail("type", f"{name} should be a Python number, but it is a tensor: use .item(), or "
              "write the number itself.")
    if isinstance(actual, bool | np.bool_) or not isinstance(actual, int | float | np.number):
        _fail("type", f"{name} should be a number (such as -2.5), but "
              f"{_what_it_is(actual)}.")


def check_bool_format(actual, name: str = "result") -> None:
    """Check that ``actual`` is True or False (for predictions, before their values count)."""
    if not isinstance(actual, bool | np.bool_):
        _fail("type", f"{name} should be True or False (a bool, without quotes), but "
              f"{_what_it_is(actual)}.")


def check_equal(actual, expected, name: str = "result", *, hint=None, reveal=False) -> None:
    """Check ``actual == expected`` for plain Python values (bools, ints, strings, None)."""
    if type(actual) is type(expected) and actual == expected:
        return
    if type(actual) is not type(expected) and expected is not None and actual is not None:
        _fail(
            "type",
            f"{name} should be of type {type(expected).__name__}, but {_what_it_is(actual)}.",
            expected,
            reveal,
        )
    message = f"{name} is wrong."
    if hint:
        message += f" {hint}"
    if reveal:
        message += f" Expected {expected!r}, got {actual!r}."
    _fail("values", message, expected, reveal)


def check_tuple(answer, length: int, name: str = "result") -> tuple:
    """Check that ``answer`` is a tuple (or list) of ``length`` items; return it as a tuple."""
    if not isinstance(answer, tuple | list):
        _fail(
            "type",
            f"{name} should be a tuple of {length} items, but {_what_it_is(answer)}.",
        )
    if len(answer) != length:
        _fail("shape", f"{name} should have {length} items, but it has {len(answer)}.")
    return tuple(answer)


def check_shape(t, shape, name: str = "result", *, dtype=None) -> None:
    """Check that ``t`` is a tensor of the given shape (and dtype), without looking at values."""
    if t is None:
        _fail("none", f"{name} is None: did you assign or return your answer?")
    if not _is_a_tensor(t):
        _fail("type", f"{name} should be a torch.Tensor, but {_what_it_is(t)}.")
    if tuple(t.shape) != tuple(shape):
        _fail("shape", f"{name} has the wrong shape: {tuple(t.shape)} instead of {tuple(shape)}.")
    if dtype is not None and t.dtype != dtype:
        _fail("dtype", _dtype_message(name, t.dtype, dtype))
