"""Proxies: the kernel's stand-ins for a test's functions, whose calls come back to the judge.

A :class:`Proxy` unpickles in the kernel as a token and a public name only; the function it
stands for, its code and what it carries stay in the judge, which answers its calls for the
running test only (:meth:`~autograd_course.grading.boundary.judge.Session.proxy`). Rules: a
call's arguments are tensors and numbers, bounded in size (:func:`_callback_arguments`); a
Function's forward and backward get a fresh context of the judge's at each call.
"""

from __future__ import annotations

import math

import torch

from autograd_course.grading.boundary.links import AnswerError
from autograd_course.kernel.wire import Decoder


class Proxy:
    """What the kernel gets for a test's function or Function class (:meth:`.judge.Session.proxy`):
    it unpickles there as :func:`autograd_course.kernel.agent.proxy_callable` or
    :func:`~autograd_course.kernel.agent.proxy_function` of its token and public name, nothing
    else."""

    def __init__(self, token: str, kind: str, name: str):
        self.token, self.kind, self.name = token, kind, name

    def __reduce__(self):
        from autograd_course.kernel import agent

        make = agent.proxy_function if self.kind == "function" else agent.proxy_callable
        return make, (self.token, self.name)

    def __repr__(self) -> str:
        return f"<the test's {self.name}, called back in the judge>"


class _FunctionCalls(dict):
    """The callbacks of a Function's proxy (a Function of one output): ``forward(*inputs)``
    and ``backward(*inputs, grad)``, each with a fresh context of the judge's (backward runs
    forward again first), so that nothing is kept between calls."""

    def __init__(self, function: type):
        super().__init__(forward=self.forward, backward=self.backward)
        self.function = function

    def forward(self, *inputs):
        with torch.no_grad():
            return self.function.forward(_Context(len(inputs)), *inputs)

    def backward(self, *values):
        """``values``: the inputs, then the gradient of the (one) output."""
        if not values:
            raise ValueError("no gradient")
        context = _Context(len(values) - 1)
        with torch.no_grad():
            self.function.forward(context, *values[:-1])
            return self.function.backward(context, values[-1])


class _Context:
    """A context for a Function's forward and backward run in the judge."""

    def __init__(self, n: int):
        self.needs_input_grad = (True,) * n
        self.saved_tensors: tuple = ()

    def save_for_backward(self, *tensors):
        self.saved_tensors = tensors

    def mark_non_differentiable(self, *tensors):
        pass

    def set_materialize_grads(self, value):
        pass


#: The most elements a callback's tensors may have, each and broadcast together.
MAX_CALLBACK_ELEMENTS = 2**20
_FLAT = (type(None), bool, int, float)


def _callback_arguments(records: list, decoder: Decoder) -> list:
    """A callback's arguments: each a tensor or a number (no container: a shared structure
    would cost the judge a walk of every path through it), at most
    :data:`MAX_CALLBACK_ELEMENTS` elements each and broadcast together (inputs of shapes
    (n, 1) and (1, n) would make the test's function work on n² elements)."""
    if len(records) > 16:
        raise AnswerError("too many arguments for the test's function")
    args = [decoder.decode(record) for record in records]
    if not all(isinstance(a, torch.Tensor) or type(a) in _FLAT for a in args):
        raise AnswerError("the test's functions take tensors and numbers only")
    shapes = [a.shape for a in args if isinstance(a, torch.Tensor)]
    sizes = [math.prod(shape) for shape in shapes]
    try:
        joint = math.prod(torch.broadcast_shapes(*shapes)) if shapes else 0
    except RuntimeError:
        joint = 0  # not broadcastable: the test's function says so itself
    if max([joint, *sizes]) > MAX_CALLBACK_ELEMENTS or (sizes and joint > max(sizes)):
        raise AnswerError("the test's function takes tensors of the test's own sizes")
    return args
