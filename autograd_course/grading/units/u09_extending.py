"""The grader's own closed forms for assignment 09, computed in the judge.

Each is written independently of the reference solutions of ``source/`` (another threshold,
another series, another formula), so that a test compares the student's numbers with a
second method. Like everything in :mod:`autograd_course.grading`, this module is the
grader's: the student's kernel does not see it.
"""

from __future__ import annotations

import math

import torch

#: Below this |x|, :func:`sinc_reference` sums the Taylor series of sinc'(x) (12 terms: the
#: first one left out is below 1e-30 of the sum), above it the quotient rule's formula, which
#: has lost at most a few units of 1e-16 there.
SERIES_BELOW = 0.5


def sinc_reference(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """sinc(x) = sin(x) / x (1 at 0) and its derivative (x cos x - sin x) / x**2 (0 at 0),
    elementwise in float64; the derivative from its Taylor series near 0,
    sum over k >= 1 of (-1)**k 2k x**(2k-1) / (2k+1)!, where the formula cancels."""
    x = x.to(torch.float64)
    nonzero = torch.where(x == 0, 1.0, x)
    value = torch.where(x == 0, 1.0, torch.sin(nonzero) / nonzero)
    formula = (nonzero * torch.cos(nonzero) - torch.sin(nonzero)) / nonzero**2
    series = torch.zeros_like(x)
    for k in range(12, 0, -1):  # smallest terms first
        series = series + (-1) ** k * 2 * k * x ** (2 * k - 1) / float(math.factorial(2 * k + 1))
    slope = torch.where(x.abs() < SERIES_BELOW, series, formula)
    return value, slope


def row_clipped(grad: torch.Tensor, max_norm: float) -> torch.Tensor:
    """Each row of the 2-D ``grad`` whose Euclidean norm exceeds ``max_norm`` scaled down to
    norm ``max_norm``; the other rows (a row of zeros too) as they are."""
    grad = grad.to(torch.float64)
    rows = []
    for row in grad:
        norm = math.sqrt(sum(value * value for value in row.tolist()))
        rows.append(row * (max_norm / norm) if norm > max_norm else row)
    return torch.stack(rows)


def bump_reference(x: torch.Tensor, w: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """f(x, w) = w exp(-w x**2) and its partial derivatives, elementwise in float64:
    df/dx = -2 w**2 x exp(-w x**2) and df/dw = (1 - w x**2) exp(-w x**2)."""
    x, w = x.to(torch.float64), w.to(torch.float64)
    e = torch.exp(-w * x * x)
    return w * e, -2.0 * w * w * x * e, (1.0 - w * x * x) * e
