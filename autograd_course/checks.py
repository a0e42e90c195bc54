"""Checks for the graded exercises: compare an answer and, when it is wrong, name the mistake.

Every test cell of the assignments (visible and hidden parts alike) uses these functions, so the
feedback is the same everywhere. A failed check raises :class:`CheckError`, an
``AssertionError`` whose message says what is wrong and how to fix it:

- a gradient that is ``None`` (no ``requires_grad=True``, or no ``backward()``),
- a gradient that is two (three, four) times the answer (accumulated over several ``backward()``),
- the wrong sign, the wrong shape, the wrong dtype, NaN or infinite values,
- a result that still records a computation graph where it must not,
- ``.grad`` read from a non-leaf tensor (which PyTorch never fills),
- a "copy" that shares memory with its source, a tensor not made in ``torch.inference_mode()``,
- a predicted exception that is not the one the code raises.

With ``reveal=False`` (the default, used by hidden tests) a message never contains the expected
values; ``reveal=True`` (visible checks) adds them, together with the actual ones.

>>> import torch
>>> from autograd_course.checks import check_tensor
>>> check_tensor(torch.tensor([2.0, 4.0]), torch.tensor([2.0, 4.0]), name="x.grad")
>>> check_tensor(torch.tensor([4.0, 8.0]), torch.tensor([2.0, 4.0]), name="x.grad")
Traceback (most recent call last):
...
autograd_course.checks.CheckError: x.grad is twice the right value: the gradient was accumulated...

Tamper resistance: student code runs in the same kernel as the tests and could replace
``torch.allclose`` (or ``isinstance``...) by a function that always agrees. This module captures
private references to everything it compares with when it is imported, and uses only those
afterwards; :data:`REFERENCES` maps each public name to the captured original, and
:func:`tampered_references` lists the names that no longer point to it.
"""

from __future__ import annotations

import builtins
import contextlib
import io
import math
import os
import sys
import warnings

import torch

# --- captured at import time; the checks below use only these references -------------------
_allclose = torch.allclose
_equal = torch.equal
_isclose = torch.isclose
_isfinite = torch.isfinite
_all = torch.all
_is_tensor = torch.is_tensor
_as_tensor = torch.as_tensor
_zeros_like = torch.zeros_like
_no_grad = torch.no_grad
_Generator = torch.Generator
_rand = torch.rand
_Tensor = torch.Tensor
_float64 = torch.float64
_isinstance = builtins.isinstance
_issubclass = builtins.issubclass
_type = builtins.type
_callable = builtins.callable
_len = builtins.len
_abs = builtins.abs
_bool = builtins.bool
_float = builtins.float
_int = builtins.int
_str = builtins.str
_tuple = builtins.tuple
_list = builtins.list
_BaseException = builtins.BaseException
_math_isclose = math.isclose
_math_isfinite = math.isfinite
_catch_warnings = warnings.catch_warnings
_simplefilter = warnings.simplefilter
_redirect_stdout = contextlib.redirect_stdout
_redirect_stderr = contextlib.redirect_stderr
_StringIO = io.StringIO
_urandom = os.urandom
_from_bytes = builtins.int.from_bytes

#: Public name -> the original object this module captured when it was imported. A grader can
#: check e.g. ``torch.allclose is REFERENCES["torch.allclose"]`` after running student code.
REFERENCES: dict[str, object] = {
    "torch.allclose": _allclose,
    "torch.equal": _equal,
    "torch.isclose": _isclose,
    "torch.isfinite": _isfinite,
    "torch.all": _all,
    "torch.is_tensor": _is_tensor,
    "torch.as_tensor": _as_tensor,
    "torch.zeros_like": _zeros_like,
    "torch.no_grad": _no_grad,
    "torch.Generator": _Generator,
    "torch.rand": _rand,
    "torch.Tensor": _Tensor,
    "builtins.isinstance": _isinstance,
    "builtins.issubclass": _issubclass,
    "builtins.type": _type,
    "builtins.callable": _callable,
    "builtins.len": _len,
    "builtins.abs": _abs,
    "math.isclose": _math_isclose,
    "math.isfinite": _math_isfinite,
    "warnings.catch_warnings": _catch_warnings,
    "warnings.simplefilter": _simplefilter,
    "os.urandom": _urandom,
}

_NONLEAF_WARNING = "not a leaf Tensor is being accessed"


def tampered_references() -> list[str]:
    """Return the names in :data:`REFERENCES` that no longer point to the captured original."""
    changed = []
    for dotted, original in REFERENCES.items():
        module_name, _, attribute = dotted.rpartition(".")
        module = sys.modules.get(module_name)
        if module is None or getattr(module, attribute, None) is not original:
            changed.append(dotted)
    return changed


class CheckError(AssertionError):
    """A failed check. The message explains the mistake; the attributes are for graders/tests.

    ``diagnosis`` is a short code of the mistake ("none", "accumulated", "sign", "shape",
    "dtype", "graph", "leaf", "values", ...); ``expected`` the expected value (never part of
    the message unless ``reveal`` is true).
    """

    def __init__(self, message: str, diagnosis: str, expected=None, reveal: bool = False):
        super().__init__(message)
        self.diagnosis = diagnosis
        self.expected = expected
        self.reveal = reveal


def _fail(diagnosis: str, message: str, expected=None, reveal: bool = False):
    raise CheckError(message, diagnosis, expected, reveal)


def _is_a_tensor(value) -> bool:
    return _isinstance(value, _Tensor)


def _read_grad(t):
    """``t.grad`` without the UserWarning PyTorch emits for non-leaf tensors (stderr = 0 points)."""
    with _catch_warnings():
        _simplefilter("ignore")
        return t.grad


def _graph_label(t) -> str:
    fn = t.grad_fn
    return "none" if fn is None else _type(fn).__name__


def _close(a, b, rtol, atol) -> bool:
    return _bool(_allclose(a, b, rtol=rtol, atol=atol))


def _fmt(t) -> str:
    return _str(t.detach().tolist()) if _is_a_tensor(t) else _str(t)


# --- fresh random inputs ------------------------------------------------------------------


def _generator():
    return _Generator().manual_seed(_from_bytes(_urandom(7), "little"))


def fresh(*shape, low: float = -2.0, high: float = 2.0, dtype=torch.float32) -> torch.Tensor:
    """A new tensor of uniform random values in [low, high), from an unpredictable seed.

    It does not use (or disturb) PyTorch's global random generator, so a student's
    ``torch.manual_seed`` cannot predict it. The result has ``requires_grad=False``.
    """
    u = _rand(_tuple(shape), generator=_generator(), dtype=_float64)
    return (low + (high - low) * u).to(dtype)


def fresh_float(low: float, high: float) -> float:
    """A Python float drawn uniformly from [low, high) with an unpredictable seed."""
    return _float(fresh(low=low, high=high, dtype=_float64).item())


def fresh_int(low: int, high: int) -> int:
    """A Python int drawn uniformly from low..high (inclusive) with an unpredictable seed."""
    return _int(low + _int(fresh(low=0.0, high=1.0, dtype=_float64).item() * (high - low + 1)))


# --- calling the student's function -------------------------------------------------------


def run_answer(fn, *args, name: str | None = None, **kwargs):
    """Call the student's ``fn(*args, **kwargs)`` and return its result.

    Warnings raised inside are captured (a warning printed to stderr makes nbgrader give the
    test cell 0 points). Reading ``.grad`` of a non-leaf tensor is reported as the mistake it
    is. Output printed by ``fn`` is discarded.
    """
    label = name or f"{getattr(fn, '__name__', 'your function')}(...)"
    if not _callable(fn):
        _fail("type", f"{label}: expected a function, got a {_type(fn).__name__}.")
    with _catch_warnings(record=True) as caught, _redirect_stdout(_StringIO()):
        _simplefilter("always")
        result = fn(*args, **kwargs)
    for warning in caught:
        if _NONLEAF_WARNING in _str(warning.message):
            _fail(
                "leaf",
                f"{label} reads .grad of a non-leaf tensor (the result of an operation). "
                "PyTorch fills .grad only for leaf tensors created with requires_grad=True, "
                "so that .grad is None. Read .grad of the leaf you created, or call "
                ".retain_grad() on the intermediate tensor before backward().",
            )
    return result


# --- values ---------------------------------------------------------------------------------


def _compare(actual, expected, name, rtol, atol, reveal, hint, mistakes, what="value"):
    """Compare two tensors of equal shape and name the mistake if they differ."""
    if not _bool(_all(_isfinite(actual))):
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
        candidate = _as_tensor(candidate, dtype=expected.dtype)
        if candidate.shape == expected.shape and _close(actual, candidate, rtol, atol):
            _fail(diagnosis, f"{name}: {message}", expected, reveal)
    zero = _zeros_like(expected)
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
                _fail(
                    "accumulated",
                    f"{name} is {word} the right {what}: the gradient was accumulated over "
                    f"{k} backward() calls. .grad adds up, it is not replaced: call backward() "
                    "once per gradient, and clear .grad (x.grad = None or "
                    "optimizer.zero_grad()) before the next backward().",
                    expected,
                    reveal,
                )
            if _close(k * actual, expected, rtol, atol):
                _fail(
                    "fraction",
                    f"{name} is only 1/{k} of the right {what}: a factor is missing (the "
                    "power rule's factor? a gradient that should have added up over several "
                    "backward() calls?).",
                    expected,
                    reveal,
                )
        if _close(actual, zero, 0.0, atol):
            _fail(
                "zero",
                f"{name} is all zeros: was the gradient cleared (zero_grad() or "
                ".grad.zero_()) after backward() and before it was read?",
                expected,
                reveal,
            )
    message = f"{name} has the wrong values (its shape and dtype are right)."
    if hint:
        message += f" {hint}"
    if reveal:
        message += f" Expected {_fmt(expected)}, got {_fmt(actual)}."
    else:
        message += " (Hidden test: the expected values are not shown.)"
    _fail("values", message, expected, reveal)


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
) -> None:
    """Check that ``actual`` is a tensor with the shape, dtype and values of ``expected``.

    Values are compared with ``torch.allclose(actual, expected, rtol, atol)``. When they
    differ, the message names the mistake: None, not a tensor, shape, dtype, NaN, wrong sign,
    accumulated (k times the answer), a missing factor, all zeros, or one of ``mistakes`` --
    ``(wrong_value, diagnosis, message)`` triples for mistakes specific to a question, which
    the test computes itself (e.g. the result of a loop that never clears ``.grad``).
    ``hint`` is added to the generic "wrong values" message; ``reveal=True`` adds the
    expected and actual values (visible checks only).
    """
    expected = _as_tensor(expected)
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
        if _isinstance(actual, (_int, _float)):
            extra = " Wrap a number with torch.tensor(...), or return the tensor itself."
        _fail(
            "type",
            f"{name} should be a torch.Tensor, but it is a {_type(actual).__name__}.{extra}",
            expected,
            reveal,
        )
    if _tuple(actual.shape) != _tuple(expected.shape):
        extra = ""
        if actual.dim() == 0 and expected.dim() > 0:
            extra = " A 0-dimensional result: did you sum or average where you should not?"
        _fail(
            "shape",
            f"{name} has the wrong shape: {_tuple(actual.shape)} instead of "
            f"{_tuple(expected.shape)}.{extra}",
            expected,
            reveal,
        )
    if check_dtype and actual.dtype != expected.dtype:
        _fail(
            "dtype",
            f"{name} has dtype {actual.dtype} instead of {expected.dtype}. "
            "torch.tensor([1, 2]) makes integers: write 1.0, or pass dtype=torch.float32.",
            expected,
            reveal,
        )
    with _no_grad():
        a = actual.detach().to(_float64)
        e = expected.detach().to(_float64)
        _compare(a, e, name, rtol, atol, reveal, hint, mistakes)


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
) -> None:
    """Check that ``actual`` is a Python number close to ``expected`` (same diagnoses as
    :func:`check_tensor`). A one-element tensor is refused with a hint to use ``.item()``."""
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
    if _isinstance(actual, _bool) or not _isinstance(actual, (_int, _float)):
        _fail(
            "type",
            f"{name} should be a number (float), but it is a {_type(actual).__name__}.",
            expected,
            reveal,
        )
    a = _as_tensor([_float(actual)], dtype=_float64)
    e = _as_tensor([_float(expected)], dtype=_float64)
    _compare(a, e, name, rtol, atol, reveal, hint, mistakes)


def check_equal(actual, expected, name: str = "result", *, hint=None, reveal=False) -> None:
    """Check ``actual == expected`` for plain Python values (bools, ints, strings, None)."""
    if _type(actual) is _type(expected) and actual == expected:
        return
    if _type(actual) is not _type(expected) and expected is not None and actual is not None:
        _fail(
            "type",
            f"{name} should be a {_type(expected).__name__}, but it is a {_type(actual).__name__}.",
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
    if not _isinstance(answer, (_tuple, _list)):
        _fail(
            "type",
            f"{name} should be a tuple of {length} items, but it is a {_type(answer).__name__}.",
        )
    if _len(answer) != length:
        _fail("shape", f"{name} should have {length} items, but it has {_len(answer)}.")
    return _tuple(answer)


def check_shape(t, shape, name: str = "result", *, dtype=None) -> None:
    """Check that ``t`` is a tensor of the given shape (and dtype), without looking at values."""
    if t is None:
        _fail("none", f"{name} is None: did you assign or return your answer?")
    if not _is_a_tensor(t):
        _fail("type", f"{name} should be a torch.Tensor, but it is a {_type(t).__name__}.")
    if _tuple(t.shape) != _tuple(shape):
        _fail("shape", f"{name} has the wrong shape: {_tuple(t.shape)} instead of {_tuple(shape)}.")
    if dtype is not None and t.dtype != dtype:
        _fail(
            "dtype",
            f"{name} has dtype {t.dtype} instead of {dtype}. torch.tensor([1, 2]) makes "
            "integers: write 1.0, or pass dtype=torch.float32.",
        )


# --- gradients and graphs --------------------------------------------------------------------


def check_gradient_of(tensor, expected, name: str = "x", **options) -> None:
    """Check that ``tensor.grad`` holds ``expected`` (options as in :func:`check_tensor`).

    A None gradient is explained by its cause: a non-leaf tensor (``.grad`` is only filled for
    leaves, unless ``retain_grad()`` was called), no ``requires_grad``, or no ``backward()``.
    """
    if not _is_a_tensor(tensor):
        _fail("type", f"{name} should be a torch.Tensor, but it is a {_type(tensor).__name__}.")
    grad = _read_grad(tensor)
    if grad is None:
        if not tensor.is_leaf and not tensor.retains_grad:
            _fail(
                "leaf",
                f"{name} is not a leaf tensor (it was made by an operation, grad_fn="
                f"{_graph_label(tensor)}), so backward() does not fill {name}.grad: it is None. "
                f"Read .grad of the leaf you created with requires_grad=True, or call "
                f"{name}.retain_grad() before backward().",
            )
        if not tensor.requires_grad:
            _fail(
                "none",
                f"{name}.grad is None because {name} does not require grad: create it with "
                f"requires_grad=True (or call {name}.requires_grad_()) before computing with it.",
            )
        _fail(
            "none",
            f"{name}.grad is None: call backward() on the scalar result computed from {name} "
            f"before reading {name}.grad.",
        )
    check_tensor(grad, expected, name=f"{name}.grad", **options)


def check_no_graph(t, name: str = "result", *, hint: str | None = None) -> None:
    """Check that tensor ``t`` records no computation graph (``requires_grad`` False)."""
    if not _is_a_tensor(t):
        _fail("type", f"{name} should be a torch.Tensor, but it is a {_type(t).__name__}.")
    if t.requires_grad or t.grad_fn is not None:
        message = (
            f"{name} still records a computation graph (requires_grad=True, grad_fn="
            f"{_graph_label(t)}). Compute it inside `with torch.no_grad():` (or "
            "torch.inference_mode()), or return .detach() of it, so that no graph is kept."
        )
        if hint:
            message += f" {hint}"
        _fail("graph", message)


def check_is_leaf(t, name: str = "x", *, hint: str | None = None) -> None:
    """Check that ``t`` is a leaf tensor that requires grad (a parameter that can be trained)."""
    if not _is_a_tensor(t):
        _fail("type", f"{name} should be a torch.Tensor, but it is a {_type(t).__name__}.")
    if not t.is_leaf:
        message = (
            f"{name} is not a leaf tensor any more: it is the result of an operation "
            f"(grad_fn={_graph_label(t)}). An update like x = x - lr * x.grad makes a new "
            "tensor that records a graph; update the leaf in place inside torch.no_grad(): "
            "x -= lr * x.grad."
        )
        if hint:
            message += f" {hint}"
        _fail("leaf", message)
    if not t.requires_grad:
        _fail(
            "requires_grad",
            f"{name} no longer requires grad, so backward() cannot compute its gradient: "
            "keep the original leaf (created with requires_grad=True) and update it in place.",
        )


def check_leaf_answer(answer, t, name: str = "is_leaf") -> None:
    """Check a student's claim ``answer`` (a bool) of whether tensor ``t`` is a leaf.

    The expected value is computed independently of ``t.is_leaf``: a leaf has no grad_fn.
    """
    expected = t.grad_fn is None
    if not _isinstance(answer, _bool):
        _fail("type", f"{name} should be True or False, but it is a {_type(answer).__name__}.")
    if answer != expected:
        message = (
            f"{name} is wrong. A leaf is a tensor you created yourself (t.is_leaf is True, "
            "t.grad_fn is None), with or without requires_grad; a result of an operation on "
            "tensors that require grad is not a leaf."
        )
        if answer == t.requires_grad:
            message += " You seem to return t.requires_grad, which is a different question."
        _fail("leaf", message, expected)


def check_grad_fn_name(answer, t, name: str = "grad_fn name") -> None:
    """Check a student's ``answer`` for the class name of ``t.grad_fn`` (None for a leaf)."""
    fn = t.grad_fn
    expected = None if fn is None else _type(fn).__name__
    if answer is not None and not _isinstance(answer, _str):
        _fail(
            "type",
            f"{name} should be a string (or None), but it is a {_type(answer).__name__}: "
            "return the class name, type(t.grad_fn).__name__.",
            expected,
        )
    if answer == expected:
        return
    if _isinstance(answer, _str) and ("object at" in answer or answer.startswith("<")):
        _fail(
            "type",
            f"{name}: you returned str(t.grad_fn), which includes a memory address; return "
            "only the class name, type(t.grad_fn).__name__.",
            expected,
        )
    _fail(
        "values",
        f"{name} is wrong: a leaf has grad_fn None; a computed tensor's grad_fn is the "
        "backward function of the operation that made it (type(t.grad_fn).__name__).",
        expected,
    )


def check_independent_copy(copy, source, name: str = "copy") -> None:
    """Check that ``copy`` has ``source``'s values, records no graph and owns its memory."""
    check_no_graph(copy, name)
    check_tensor(copy, source.detach(), name=name, atol=0.0, rtol=0.0)
    if copy.untyped_storage().data_ptr() == source.untyped_storage().data_ptr():
        _fail(
            "storage",
            f"{name} shares memory with the original tensor: detach() returns a tensor that "
            "views the same storage, so an in-place change of one changes the other. Use "
            "detach().clone() for a copy with its own memory.",
        )


def check_inference(t, name: str = "result") -> None:
    """Check that ``t`` was created inside ``torch.inference_mode()`` (an inference tensor)."""
    check_no_graph(t, name)
    if not t.is_inference():
        _fail(
            "inference_mode",
            f"{name} is not an inference tensor: compute it inside `with "
            "torch.inference_mode():`, which skips even more autograd bookkeeping than "
            "torch.no_grad().",
        )


# --- predicting exceptions ------------------------------------------------------------------


def _exception_name(prediction, name):
    if prediction is None:
        return None
    if _isinstance(prediction, _type) and _issubclass(prediction, _BaseException):
        return prediction.__name__
    if _isinstance(prediction, _str) and prediction.strip():
        return prediction.strip()
    _fail(
        "type",
        f"{name} should be the name of an exception class (a string such as 'KeyError'), the "
        f"class itself, or None for 'runs without error'; it is a {_type(prediction).__name__}.",
    )


def raised_by(code):
    """Run ``code()`` (a function of no argument) quietly; return the class of the exception it
    raises, or None when it runs without error. Warnings and printed output are discarded."""
    sink = _StringIO()
    with _catch_warnings(), _redirect_stdout(sink), _redirect_stderr(sink):
        _simplefilter("ignore")
        try:
            code()
        except Exception as error:  # noqa: BLE001 -- any exception is the answer
            return _type(error)
    return None


def check_prediction_format(prediction, name: str = "prediction") -> None:
    """Check that ``prediction`` is an exception name, an exception class, or None."""
    _exception_name(prediction, name)


def check_prediction(prediction, code, name: str = "prediction") -> None:
    """Check a predicted outcome of ``code()``: the exception class it raises (its name, or the
    class), or None when it runs without error. The truth is found by running ``code()``."""
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
