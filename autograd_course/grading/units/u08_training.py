"""The grader's own copy of assignment 08's model and training loop, run by the judge.

:func:`tanh_mlp` and :func:`reference_sgd` compute, in float64, what a correct training loop
does to the parameters the judge drew, so that it never has to trust a loss or a parameter
that the student's code reports. Like everything in :mod:`autograd_course.grading`, this
module is the grader's: the student's kernel does not see it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import torch


def tanh_mlp(params: Mapping[str, torch.Tensor], x: torch.Tensor,
             layers: Sequence[str] = ("hidden", "out")) -> torch.Tensor:
    """The forward pass of the assignment's MLPs, written out from their parameters:
    ``nn.Linear`` layers named ``layers`` (``params["hidden.weight"]``...), with ``tanh``
    between them and nothing after the last one."""
    h = x
    for index, name in enumerate(layers):
        h = h @ params[f"{name}.weight"].T + params[f"{name}.bias"]
        if index < len(layers) - 1:
            h = torch.tanh(h)
    return h


def reference_sgd(
    params: Mapping[str, torch.Tensor],
    x: torch.Tensor,
    y: torch.Tensor,
    lr: float,
    steps: int,
    layers: Sequence[str] = ("hidden", "out"),
    *,
    clear: bool = True,
    frozen: Iterable[str] = (),
) -> tuple[list[float], dict[str, torch.Tensor]]:
    """Full-batch SGD on the mean squared error of :func:`tanh_mlp`, in float64.

    Returns the loss before each step and the parameters after the last one (float64). With
    ``clear=False`` the gradients are never cleared, so each step uses the sum of all the
    gradients so far (a loop without ``optimizer.zero_grad()``). Parameters whose name
    starts with a layer of ``frozen`` (``"hidden."``) are left as they are.
    """
    frozen_prefixes = tuple(f"{name}." for name in frozen)
    p = {k: v.detach().to(torch.float64).clone().requires_grad_(not k.startswith(frozen_prefixes))
         for k, v in params.items()}
    trained = [k for k in p if p[k].requires_grad]
    x, y = x.to(torch.float64), y.to(torch.float64)
    sums = {k: torch.zeros_like(p[k]) for k in trained}
    losses = []
    for _ in range(steps):
        loss = ((tanh_mlp(p, x, layers) - y) ** 2).mean()
        grads = torch.autograd.grad(loss, [p[k] for k in trained])
        losses.append(loss.item())
        with torch.no_grad():
            for k, g in zip(trained, grads, strict=True):
                sums[k] = g if clear else sums[k] + g
                p[k] -= lr * sums[k]
    return losses, {k: v.detach() for k, v in p.items()}
