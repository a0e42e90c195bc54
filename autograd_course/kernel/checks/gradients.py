"""Checks of gradients and computation graphs: ``.grad``, leaves, grad_fn, copies.

The autograd facts of a tensor are read with :func:`~autograd_course.kernel.wire.facts` (in the
judge: as the kernel reported them). Rule: a check of a fact the kernel could forge fails
through ``_fact`` (a note worth no points in the judge); values the student computes fail as
any check does.
"""

from __future__ import annotations

import torch

from autograd_course.kernel.checks.errors import _fact, _fail, _what_it_is
from autograd_course.kernel.checks.values import _is_a_tensor, check_tensor
from autograd_course.kernel.wire import facts


def _require_tensor(t, name: str) -> None:
    if not _is_a_tensor(t):
        _fail("type", f"{name} should be a torch.Tensor, but {_what_it_is(t)}.")


def check_gradient_of(tensor, expected, name: str = "x", **options) -> None:
    """Check that ``tensor.grad`` holds ``expected`` (options as in :func:`check_tensor`).

    A None gradient is explained by its cause: a non-leaf tensor (``.grad`` is only filled for
    leaves, unless ``retain_grad()`` was called), no ``requires_grad``, or no ``backward()``.
    """
    _require_tensor(tensor, name)
    known = facts(tensor)
    if known.grad is None:
        if not known.is_leaf and not known.retains_grad:
            _fail(
                "leaf",
                f"{name} is not a leaf tensor (it was made by an operation, grad_fn="
                f"{known.grad_fn}), so backward() does not fill {name}.grad: it is None. "
                f"Read .grad of the leaf you created with requires_grad=True, or call "
                f"{name}.retain_grad() before backward().",
            )
        if not known.requires_grad:
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
    check_tensor(known.grad, expected, name=f"{name}.grad", **{"gradient": True, **options})


def check_no_graph(t, name: str = "result", *, hint: str | None = None) -> None:
    """Check that tensor ``t`` records no computation graph (``requires_grad`` False)."""
    _require_tensor(t, name)
    known = facts(t)
    if known.requires_grad or known.grad_fn is not None:
        message = (
            f"{name} still records a computation graph (requires_grad=True, grad_fn="
            f"{known.grad_fn or 'none'}). Compute it inside `with torch.no_grad():` (or "
            "torch.inference_mode()), or return .detach() of it, so that no graph is kept."
        )
        if hint:
            message += f" {hint}"
        _fact("graph", message)


def check_untouched(after, before, name: str, *, by: str = "your function") -> None:
    """Check that the caller's tensor is as it was: ``before`` is a copy made before the
    student's code ran, ``after`` the tensor as that code left it (``current(t)``).

    The message names what happened: requires_grad switched on, .grad filled, values changed.
    """
    _require_tensor(after, name)
    now, then = facts(after), facts(before)
    advice = (f"Leave the caller's tensor alone and work on a copy: "
              f"{name}.detach().clone() (then .requires_grad_(True) on the copy).")
    if now.requires_grad and not then.requires_grad:
        _fact("changed_input", f"{by} set requires_grad on {name}, the caller's tensor: it now "
              f"records a graph. {advice}")
    elif now.grad is not None and then.grad is None:
        _fact("changed_input", f"{by} filled {name}.grad: backward() ran through the caller's "
              f"tensor. {advice}")
    elif tuple(after.shape) != tuple(before.shape) or not torch.equal(after.detach(),
                                                                      before.detach()):
        _fact("changed_input", f"{by} changed the values of {name}, the caller's tensor, in "
              f"place. {advice}")


def check_is_leaf(t, name: str = "x", *, hint: str | None = None) -> None:
    """Check that ``t`` is a leaf tensor that requires grad (a parameter that can be trained)."""
    _require_tensor(t, name)
    known = facts(t)
    if not known.is_leaf:
        message = (
            f"{name} is not a leaf tensor any more: it is the result of an operation "
            f"(grad_fn={known.grad_fn}). An update like x = x - lr * x.grad makes a new "
            "tensor that records a graph; update the leaf in place inside torch.no_grad(): "
            "x -= lr * x.grad."
        )
        if hint:
            message += f" {hint}"
        _fact("leaf", message)
    elif not known.requires_grad:
        _fact(
            "requires_grad",
            f"{name} no longer requires grad, so backward() cannot compute its gradient: "
            "keep the original leaf (created with requires_grad=True) and update it in place.",
        )


def check_leaf_answer(answer, t, name: str = "is_leaf") -> None:
    """Check a student's claim ``answer`` (a bool) of whether tensor ``t`` is a leaf.

    The expected value is computed independently of ``t.is_leaf``: a leaf has no grad_fn.
    """
    known = facts(t)
    expected = known.grad_fn is None
    if not isinstance(answer, bool):
        _fail("type", f"{name} should be True or False, but {_what_it_is(answer)}.")
    if answer != expected:
        message = (
            f"{name} is wrong. A leaf is a tensor you created yourself (t.is_leaf is True, "
            "t.grad_fn is None), with or without requires_grad; a result of an operation on "
            "tensors that require grad is not a leaf."
        )
        if answer == known.requires_grad:
            message += " You seem to return t.requires_grad, which is a different question."
        _fail("leaf", message, expected)


def check_grad_fn_name(answer, t, name: str = "grad_fn name") -> None:
    """Check a student's ``answer`` for the class name of ``t.grad_fn`` (None for a leaf)."""
    expected = facts(t).grad_fn
    if answer is not None and not isinstance(answer, str):
        _fail(
            "type",
            f"{name} should be a string (or None), but {_what_it_is(answer)}: "
            "return the class name, type(t.grad_fn).__name__.",
            expected,
        )
    if answer == expected:
        return
    if isinstance(answer, str) and ("object at" in answer or answer.startswith("<")):
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
    if facts(copy).storage == facts(source).storage:
        _fact(
            "storage",
            f"{name} shares memory with the original tensor: detach() returns a tensor that "
            "views the same storage, so an in-place change of one changes the other. Use "
            "detach().clone() for a copy with its own memory.",
        )


def check_inference(t, name: str = "result") -> None:
    """Check that ``t`` was created inside ``torch.inference_mode()`` (an inference tensor)."""
    check_no_graph(t, name)
    if not facts(t).is_inference:
        _fact(
            "inference_mode",
            f"{name} is not an inference tensor: compute it inside `with "
            "torch.inference_mode():`, which skips even more autograd bookkeeping than "
            "torch.no_grad().",
        )
