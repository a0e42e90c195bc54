"""The grader's own computations for assignment 10, run by the judge.

:func:`per_sample_loop` computes, in float64 and one sample at a time with
``torch.autograd.grad``, the gradient of each sample's cross-entropy for the assignment's
MLPs, written out from their parameters (08's
:func:`~autograd_course.grading.units.u08_training.tanh_mlp`), so that the judge never has to
trust a model or a gradient that the student's kernel reports. Like everything in
:mod:`autograd_course.grading`, this module is the grader's: the student's kernel does not see
it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import torch

from autograd_course.grading.units.u08_training import tanh_mlp


def per_sample_loop(params: Mapping[str, torch.Tensor], x: torch.Tensor, y: torch.Tensor,
                    layers: Sequence[str] = ("hidden", "out")) -> dict[str, torch.Tensor]:
    """The gradient of each sample's cross-entropy alone, by a loop over the samples, in
    float64: ``{name: tensor of shape (n, *param.shape)}``."""
    p = {k: v.detach().to(torch.float64).requires_grad_(True) for k, v in params.items()}
    names = list(p)
    rows: dict[str, list[torch.Tensor]] = {k: [] for k in names}
    for xi, yi in zip(x.to(torch.float64), y, strict=True):
        logits = tanh_mlp(p, xi.unsqueeze(0), layers)
        loss = torch.nn.functional.cross_entropy(logits, yi.reshape(1))
        for k, g in zip(names, torch.autograd.grad(loss, [p[k] for k in names]), strict=True):
            rows[k].append(g)
    return {k: torch.stack(rows[k]) for k in names}


def jacobian_plan_reference(shapes: Sequence[Sequence[int]]) -> tuple[str, int]:
    """The cheaper of jacfwd (one jvp per entry of the input, the first shape) and jacrev
    (one vjp per entry of the output, the last shape), with its count; jacrev on a tie."""
    inputs = outputs = 1
    for size in shapes[0]:
        inputs *= int(size)
    for size in shapes[-1]:
        outputs *= int(size)
    return ("jacrev", outputs) if outputs <= inputs else ("jacfwd", inputs)
