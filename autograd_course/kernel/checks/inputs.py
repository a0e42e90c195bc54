"""Fresh random inputs of the tests, and the inputs and tolerance of one question.

``fresh``, ``fresh_float`` and ``fresh_int`` never use PyTorch's global generator: in a kernel
the seed is unpredictable, in the judge it is the judge's seeded generator (the same inputs at
a regrade). ``accumulation_inputs`` and ``ACCUMULATION_RTOL`` are 03's ``accumulated_grad``'s.
"""

from __future__ import annotations

import os

import torch

from autograd_course.kernel.checks.contract import JUDGE
from autograd_course.kernel.checks.values import check_number


def _generator() -> torch.Generator:
    judge = JUDGE.get()
    if judge is not None:
        return judge.generator()
    return torch.Generator().manual_seed(int.from_bytes(os.urandom(7), "little"))


def fresh(*shape, low: float = -2.0, high: float = 2.0, dtype=torch.float32) -> torch.Tensor:
    """A new tensor of uniform random values in [low, high).

    In a kernel the seed is unpredictable; in the judge it comes from the grader's secret and
    the test (so a regrade draws the same inputs). It never uses PyTorch's global generator,
    so a student's ``torch.manual_seed`` cannot predict it. The result does not require grad.
    """
    u = torch.rand(tuple(shape), generator=_generator(), dtype=torch.float64)
    return (low + (high - low) * u).to(dtype)


def fresh_float(low: float, high: float) -> float:
    """A Python float drawn uniformly from [low, high) (see :func:`fresh`)."""
    return float(fresh(low=low, high=high, dtype=torch.float64).item())


def fresh_int(low: int, high: int) -> int:
    """A Python int drawn uniformly from low..high, both included (see :func:`fresh`)."""
    return int(low + int(fresh(low=0.0, high=1.0, dtype=torch.float64).item() * (high - low + 1)))


# --- the inputs and tolerance of one question ---------------------------------------------

#: Relative tolerance of 03's ``accumulated_grad``: on :func:`accumulation_inputs` a correct
#: float32 formula is within about 1e-5 of the float64 value, so 1e-4 never fails it, while a
#: wrong factor (at least 4/3 off) never passes.
ACCUMULATION_RTOL = 1e-4


def accumulation_inputs() -> tuple[float, float, float, int]:
    """``(w0, x, t, n)``: inputs of 03's ``accumulated_grad`` (L = (w*x - t)**2, n passes).

    The error ``w0*x - t`` is kept at least 0.5 away from zero: near zero it is the
    difference of two nearly equal numbers, and a correct float32 formula loses its digits.
    """
    while True:
        w0, x, t = fresh_float(-3.0, 3.0), fresh_float(0.5, 2.0), fresh_float(-3.0, 3.0)
        n = fresh_int(2, 4)
        if abs(w0 * x - t) >= 0.5:
            return w0, x, t, n


def check_accumulated_grad(answer, w0: float, x: float, t: float, n: int,
                           name: str = "accumulated_grad(...)", *, reveal: bool = False) -> None:
    """Check ``w.grad`` after ``n`` uncleared backward() passes of L = (w*x - t)**2 at w0."""
    one_pass = 2 * (w0 * x - t) * x
    check_number(answer, n * one_pass, name=name, rtol=ACCUMULATION_RTOL, atol=1e-6,
                 reveal=reveal,
                 mistakes=[(one_pass, "one_pass", "this is the gradient of a single backward() "
                            "pass; without clearing, .grad adds up all n of them.")])
