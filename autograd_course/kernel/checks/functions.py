"""A custom Function's own methods, called directly, with a context the test builds.

Tests of a ``torch.autograd.Function`` (09 Q1 and Q3, 10 Q2) check it twice: through ``apply``
and ``torch.func``, as a learner uses it, and through :func:`own_backward` and :func:`own_jvp`,
which call the class's own methods as autograd does, with a :class:`StandInContext`. A kernel
that redefines ``torch.autograd.Function.apply`` or ``torch.func`` changes nothing these see:
what they return was computed by the class's own ``forward``, ``setup_context``, ``backward``
(or ``vjp``) and ``jvp``. They hold no answer. This module travels into the student's kernel
by value (it registers itself with cloudpickle), so a kernel that rebinds its names changes
nothing a test sends there either; its globals ``torch``, ``inspect`` and ``sys`` still travel
by reference, and a patch of the kernel's agent could change what runs: a lie has to live in
the student's own methods, or in a patch of the kernel, which the code scan flags for review.

They follow torch 2.13's rules (``torch/autograd/function.py``, ``python_function.cpp``):

- forward: ``forward(ctx, *inputs)``, or, when the class overrides ``setup_context``,
  ``forward(*inputs)`` (its defaults bound) then ``setup_context(ctx, inputs, output)``; both
  under ``torch.no_grad()``, on copies of the inputs (leaves that require grad where
  ``needs_input_grad`` says so);
- backward: ``vjp`` where the class overrides it, else ``backward`` (both: torch's error), with
  the test's ``grad_outputs`` themselves, under ``torch.no_grad()`` (a backward without
  ``create_graph``: a ``once_differentiable`` backward returns its values as they are); its
  result taken as autograd takes it: a tuple (anything else is one gradient), one entry per
  input (trailing Nones dropped), each a tensor or None, summed to its input's shape and cast
  to its dtype, None where the input needs no gradient; torch's errors otherwise;
- jvp: ``jvp(ctx, *tangents)``, grad mode as it is, its result a tuple as it is;
- ``ctx.saved_tensors`` is what ``save_for_backward`` saved, in backward (autograd's error if
  one changed in place since forward), what ``save_for_forward`` saved, in jvp, and ``()`` in
  forward.

Both return plain data (a dict) for the judge, in one call: the methods the class defines
itself (:func:`own_methods`; nothing runs where the ones needed are not there), and what the
run showed of the rules of PyTorch's Extending note: which tensors the methods changed in
place, which inputs forward saved with ``save_for_backward`` (the tensors themselves), whether
backward or jvp read ``ctx.saved_tensors`` (and jvp, with nothing saved for it). Sequences in
it are lists: the judge knows the objects a kernel sent by their identity, and every empty
tuple is one and the same object.

>>> import torch
>>> class Square(torch.autograd.Function):
...     @staticmethod
...     def forward(ctx, x):
...         ctx.save_for_backward(x)
...         return x * x
...     @staticmethod
...     def backward(ctx, grad):
...         (x,) = ctx.saved_tensors
...         return 2 * x * grad
>>> run = own_backward(Square, (torch.tensor([3.0]),), (torch.tensor([1.0]),))
>>> run["output"], run["grads"], run["saved_inputs"], run["read_saved"]
(tensor([9.]), [tensor([6.])], [0], True)
>>> run["methods"], own_jvp(Square, (torch.tensor([3.0]),), (torch.tensor([1.0]),))
(['forward', 'backward'], {'methods': ['forward', 'backward']})
"""

from __future__ import annotations

import inspect
import sys

import torch

#: The methods of a Function that :func:`own_methods` looks for, in this order.
METHODS = ("forward", "setup_context", "backward", "vjp", "jvp", "vmap")


class StandInContext:
    """What a Function's methods get as ``ctx`` from :func:`own_backward` and :func:`own_jvp`:
    everything PyTorch's Extending note lets them do with autograd's (``save_for_backward``
    and ``saved_tensors``, ``save_for_forward``, ``mark_dirty``, ``mark_non_differentiable``,
    ``set_materialize_grads``, ``needs_input_grad``, attributes of their own), recorded;
    ``read_unsaved``: jvp read ``saved_tensors`` while nothing was saved with
    ``save_for_forward`` (it got ``()``, as from autograd's)."""

    def __init__(self, needs_input_grad=()):
        self.needs_input_grad = tuple(bool(flag) for flag in needs_input_grad)
        self.to_save: tuple = ()
        self.saved_for_forward: tuple = ()
        self.dirty_tensors: tuple = ()
        self.non_differentiable: tuple = ()
        self.materialize_grads = True
        self._stage = "forward"
        self._versions: tuple = ()
        self._read: set[str] = set()
        self.read_unsaved = False  # jvp read ctx.saved_tensors, and nothing was saved for it

    def save_for_backward(self, *tensors):
        for index, tensor in enumerate(tensors):
            if not (tensor is None or isinstance(tensor, torch.Tensor)):
                raise TypeError(f"save_for_backward can only save variables, but argument "
                                f"{index} is of type {type(tensor).__name__}")
        self.to_save = tensors

    def save_for_forward(self, *tensors):
        if not all(tensor is None or isinstance(tensor, torch.Tensor) for tensor in tensors):
            raise AssertionError("save_for_forward expects all arguments to be tensors; you "
                                 "should save non-tensors as attributes on ctx.")
        self.saved_for_forward = tensors

    def mark_dirty(self, *tensors):
        self.dirty_tensors = tensors

    def mark_non_differentiable(self, *tensors):
        self.non_differentiable = tensors

    def set_materialize_grads(self, value):
        self.materialize_grads = bool(value)

    def mark_shared_storage(self, *pairs):
        raise RuntimeError("mark_shared_storage is deprecated. Tensors with shared storages "
                           "are automatically tracked. Note that calls to `set_()` are not "
                           "tracked")

    @property
    def saved_tensors(self) -> tuple:
        self._read.add(self._stage)
        if self._stage == "jvp":
            self.read_unsaved = self.read_unsaved or not self.saved_for_forward
            return tuple(self.saved_for_forward)
        if self._stage != "backward":
            return ()
        for tensor, version in zip(self.to_save, self._versions, strict=True):
            if tensor is not None and tensor._version != version:
                raise RuntimeError(
                    "one of the variables needed for gradient computation has been modified "
                    f"by an inplace operation: [{tensor.type()} {list(tensor.shape)}] is at "
                    f"version {tensor._version}; expected version {version} instead.")
        return tuple(self.to_save)


def defines(cls, name: str) -> bool:
    """Whether the Function class ``cls`` defines the method ``name`` itself (it, or a base
    class of its own), rather than inheriting ``torch.autograd.Function``'s."""
    return getattr(cls, name, None) is not getattr(torch.autograd.Function, name, None)


def own_methods(cls) -> list[str] | None:
    """The methods of :data:`METHODS` that ``cls`` defines itself (:func:`defines`), or None
    where ``cls`` is no subclass of ``torch.autograd.Function``."""
    if not (isinstance(cls, type) and issubclass(cls, torch.autograd.Function)):
        return None
    return [name for name in METHODS if defines(cls, name)]


def own_backward(cls, inputs, grad_outputs, needs_input_grad=None) -> dict:
    """Run ``cls``'s own forward on copies of ``inputs``, then its own backward (or vjp) with
    ``grad_outputs`` (one per output), as autograd would. ``needs_input_grad``: one flag per
    input, by default True for every floating-point tensor. Returns a dict:

    - ``methods``: :func:`own_methods` of ``cls``; where it has no forward, or neither backward
      nor vjp, of its own (or is no Function), nothing runs and this is all the dict holds;
    - ``output``: what forward returned (a copy, as it was before backward);
    - ``grads``: one gradient per input, as autograd hands them on (None where not needed);
    - ``grad_outputs_changed``, ``saved_changed``: the places of the ``grad_outputs`` and of
      the tensors saved for backward that backward changed in place;
    - ``saved_inputs``: the places of the inputs saved for backward themselves (or views of
      them, which share their version counter);
    - ``read_saved``: whether backward read ``ctx.saved_tensors``.
    """
    methods = own_methods(cls)
    if methods is None or "forward" not in methods or not {"backward", "vjp"} & set(methods):
        return {"methods": methods}
    inputs, ctx, output = _forward(cls, inputs, needs_input_grad, default=True)
    ctx._versions = tuple(None if t is None else t._version for t in ctx.to_save)
    before, saved, given = _copy(output), _snapshot(ctx.to_save), _snapshot(grad_outputs)
    ctx._stage = "backward"
    user_fn = _backward_of(cls)
    args = (list(grad_outputs),) if getattr(cls, "boxed_grads_call", False) else grad_outputs
    with torch.no_grad():
        result = user_fn(ctx, *args)
    return {
        "methods": methods,
        "output": before,
        "grads": _as_autograd_takes(cls, result, inputs, ctx.needs_input_grad),
        "grad_outputs_changed": _changed(given),
        "saved_changed": _changed(saved),
        "saved_inputs": [i for i, t in enumerate(inputs) if any(
            _shares(s, t) for s in ctx.to_save)],
        "read_saved": "backward" in ctx._read,
    }


def own_jvp(cls, inputs, tangents, needs_input_grad=None) -> dict:
    """Run ``cls``'s own forward on copies of ``inputs``, then its own jvp with ``tangents``
    (one per input, None for none), as forward-mode AD would. Returns a dict:

    - ``methods``: :func:`own_methods` of ``cls``; where it has no forward or no jvp of its
      own (or is no Function), nothing runs and this is all the dict holds;
    - ``output``: what forward returned (a copy);
    - ``tangents``: what jvp returned, as a list (a tuple's items, or the one result);
    - ``tangents_changed``: the places of the ``tangents`` that jvp changed in place;
    - ``saved_for_forward``: how many tensors forward or setup_context saved with
      ``ctx.save_for_forward``;
    - ``read_saved``: whether jvp read ``ctx.saved_tensors``;
    - ``read_unsaved``: whether it read them while nothing was saved with
      ``ctx.save_for_forward`` (:class:`StandInContext`).

    An exception jvp raises is raised again, unless jvp had read ``ctx.saved_tensors`` with
    nothing saved for it (an unpacking of ``()`` fails, say): then the dict holds
    ``methods``, ``read_unsaved`` (True) and ``error``, the exception's type and message.
    """
    methods = own_methods(cls)
    if methods is None or "forward" not in methods or "jvp" not in methods:
        return {"methods": methods}
    inputs, ctx, output = _forward(cls, inputs, needs_input_grad, default=False)
    before, given = _copy(output), _snapshot(tangents)
    ctx._stage = "jvp"
    try:
        result = cls.jvp(ctx, *tangents)
    except Exception as error:  # noqa: BLE001 - raised again unless it met an empty ctx
        if not ctx.read_unsaved:
            raise
        return {"methods": methods, "read_unsaved": True,
                "error": f"{type(error).__name__}: {error}"}
    return {
        "methods": methods,
        "output": before,
        "tangents": list(result) if isinstance(result, tuple) else [result],
        "tangents_changed": _changed(given),
        "saved_for_forward": sum(isinstance(t, torch.Tensor) for t in ctx.saved_for_forward),
        "read_saved": "jvp" in ctx._read,
        "read_unsaved": ctx.read_unsaved,
    }


def _forward(cls, inputs, needs_input_grad, *, default: bool):
    """Copies of ``inputs`` (defaults of forward bound where setup_context is the class's),
    a StandInContext, and forward's output, computed under no_grad as autograd does."""
    inputs = tuple(inputs)
    setup = defines(cls, "setup_context")
    if setup:
        bound = inspect.signature(cls.forward).bind(*inputs)
        bound.apply_defaults()
        inputs = tuple(bound.args)
    if needs_input_grad is None:
        needs_input_grad = [default and isinstance(t, torch.Tensor) and t.is_floating_point()
                            for t in inputs]
    needs_input_grad = list(needs_input_grad) + [False] * (len(inputs) - len(needs_input_grad))
    inputs = tuple(t.detach().clone().requires_grad_(bool(need))
                   if isinstance(t, torch.Tensor) else t
                   for t, need in zip(inputs, needs_input_grad, strict=True))
    ctx = StandInContext(needs_input_grad)
    with torch.no_grad():
        if setup:
            output = cls.forward(*inputs)
            cls.setup_context(ctx, inputs, output)
        else:
            output = cls.forward(ctx, *inputs)
    return inputs, ctx, output


def _backward_of(cls):
    """The method autograd calls for backward: vjp where the class overrides it, else backward
    (``BackwardCFunction._get_user_fn``)."""
    if defines(cls, "backward") and defines(cls, "vjp"):
        raise RuntimeError("Implementing both 'backward' and 'vjp' for a custom Function is not "
                           "allowed. You should only implement one of them.")
    return cls.vjp if defines(cls, "vjp") else cls.backward


def _as_autograd_takes(cls, result, inputs, needs) -> list:
    """Backward's result as autograd hands it on, with autograd's errors."""
    grads = result if isinstance(result, tuple) else (result,)
    if len(grads) > len(inputs) and all(g is None for g in grads[len(inputs):]):
        grads = grads[:len(inputs)]
    if len(grads) != len(inputs):
        raise RuntimeError(f"function {cls.__name__}Backward returned an incorrect number of "
                           f"gradients (expected {len(inputs)}, got {len(grads)})")
    taken = []
    for index, (grad, given, need) in enumerate(zip(grads, inputs, needs, strict=True)):
        if grad is not None and not isinstance(grad, torch.Tensor):
            raise RuntimeError(f"expected Variable or None (got {type(grad).__name__})")
        if grad is not None and not isinstance(given, torch.Tensor):
            raise RuntimeError(f"function {cls.__name__}Backward returned a gradient different "
                               f"than None at position {index + 1}, but the corresponding "
                               "forward input was not a Variable")
        if grad is None or not need:
            taken.append(None)
            continue
        if grad.shape != given.shape:
            try:
                grad = grad.sum_to_size(given.shape)
            except RuntimeError:
                raise RuntimeError(
                    f"Function {cls.__name__}Backward returned an invalid gradient at index "
                    f"{index} - got {list(grad.shape)} but expected shape compatible with "
                    f"{list(given.shape)}") from None
        if grad.is_floating_point() and grad.dtype != given.dtype:
            grad = grad.to(given.dtype)
        taken.append(grad)
    return taken


def _snapshot(tensors) -> list:
    """Each tensor of ``tensors`` with its version and a copy of its values (None for others)."""
    return [(t, t._version, t.detach().clone()) if isinstance(t, torch.Tensor) else None
            for t in tensors]


def _shares(saved, given) -> bool:
    """Whether ``saved`` is the tensor ``given``, or a view of it (their storage is one)."""
    return isinstance(saved, torch.Tensor) and isinstance(given, torch.Tensor) and (
        saved is given or (given.numel() > 0 and saved.untyped_storage().data_ptr()
                           == given.untyped_storage().data_ptr()))


def _changed(snapshot) -> list[int]:
    """The places in ``snapshot`` whose tensor was changed in place since (its version moved
    on, or its values differ)."""
    found = []
    for index, taken in enumerate(snapshot):
        if taken is None:
            continue
        tensor, version, values = taken
        now = tensor.detach()
        same = now.shape == values.shape and bool(
            ((now == values) | (now.isnan() & values.isnan())).all())
        if tensor._version != version or not same:
            found.append(index)
    return found


def _copy(output):
    if isinstance(output, torch.Tensor):
        return output.detach().clone()
    if isinstance(output, tuple | list):
        return type(output)(_copy(item) for item in output)
    return output


def _travel_by_value() -> None:
    """Have cloudpickle send this module's functions and classes by value (where it is
    installed: the judge's side of grading)."""
    try:
        import cloudpickle
    except ImportError:  # pragma: no cover - a kernel that sends nothing anywhere
        return
    cloudpickle.register_pickle_by_value(sys.modules[__name__])


_travel_by_value()
