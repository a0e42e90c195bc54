"""The grader's own copy of assignment 08's model and training loop, run by the judge.

:func:`tanh_mlp` and :func:`reference_sgd` compute, in float64, what a correct training loop
does to the parameters the judge drew, so that it never has to trust a loss or a parameter
that the student's code reports. Like everything in :mod:`autograd_course.grading`, this
module is the grader's: the student's kernel does not see it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

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
) -> tuple[list[float], dict[str, torch.Tensor]]:
    """Full-batch SGD on the mean squared error of :func:`tanh_mlp`, in float64.

    Returns the loss before each step and the parameters after the last one (float64). With
    ``clear=False`` the gradients are never cleared, so each step uses the sum of all the
    gradients so far (a loop without ``optimizer.zero_grad()``): the velocity of momentum 1.
    """
    return _descend(params, x, y, lr, steps, layers, momentum=0.0 if clear else 1.0)


def reference_momentum(
    params: Mapping[str, torch.Tensor],
    x: torch.Tensor,
    y: torch.Tensor,
    lr: float,
    steps: int,
    layers: Sequence[str],
    *,
    momentum: float = 0.9,
    frozen: str | None = None,
    freeze_at: int = 0,
    effect: str = "none",
) -> dict[str, torch.Tensor]:
    """SGD with momentum on the mean squared error of :func:`tanh_mlp`, in float64, as
    ``torch.optim.SGD`` runs it when each step clears the gradients with
    ``zero_grad(set_to_none=False)``: the parameters after ``steps`` steps.

    The layer ``frozen`` is frozen between ``backward()`` and ``step()`` of step
    ``freeze_at`` (counted from 0), by an answer whose ``effect`` on its parameters is:
    ``"none"``, their ``.grad`` emptied and no gradient after (SGD skips them from then on);
    ``"kept"``, the gradient of that step kept in ``.grad`` and zeros after it; ``"zeros"``,
    zeros from that step on; ``"once"``, ``.grad`` emptied at that step only (requires_grad
    left on); ``"live"``, not frozen at all.
    """
    return _descend(params, x, y, lr, steps, layers, momentum=momentum, frozen=frozen,
                    freeze_at=freeze_at, effect=effect)[1]


def _descend(params, x, y, lr, steps, layers, *, momentum, frozen=None, freeze_at=0,
             effect="live") -> tuple[list[float], dict[str, torch.Tensor]]:
    """The loop of :func:`reference_sgd` and :func:`reference_momentum`: torch.optim.SGD's
    update (the velocity ``momentum * v + g``, ``v = g`` at a parameter's first step), with
    the frozen layer's gradients as ``effect`` leaves them; the losses and the parameters."""
    p = {k: v.detach().to(torch.float64).clone().requires_grad_(True) for k, v in params.items()}
    x, y = x.to(torch.float64), y.to(torch.float64)
    inside = {k for k in p if frozen is not None and k.startswith(f"{frozen}.")}
    buffers: dict[str, torch.Tensor] = {}
    losses = []
    for step in range(steps):
        loss = ((tanh_mlp(p, x, layers) - y) ** 2).mean()
        grads = dict(zip(p, torch.autograd.grad(loss, list(p.values())), strict=True))
        losses.append(loss.item())
        for k in inside if step >= freeze_at and effect != "live" else ():
            if effect == "none" or (effect == "once" and step == freeze_at):
                grads[k] = None
            elif effect == "zeros" or (effect == "kept" and step > freeze_at):
                grads[k] = torch.zeros_like(grads[k])
        with torch.no_grad():
            for k, g in grads.items():
                if g is None:
                    continue
                buffers[k] = g.clone() if k not in buffers else momentum * buffers[k] + g
                p[k] -= lr * buffers[k]
    return losses, {k: v.detach() for k, v in p.items()}
