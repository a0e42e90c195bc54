"""Helpers for lesson 08 (a real training loop): data, graph measures, Newton vs SGD, pictures.

The lesson's training loop and Newton's method are written out in the notebook; this module
holds the rest: making the data, measuring how much of the autograd graph a tensor keeps
alive, and drawing. Measures are exact counts (autograd nodes, bytes of saved tensors), never
process memory readings. The grader's own copy of the assignment's model and training loop is
in :mod:`autograd_course.grading.units.u08_training`.

>>> import torch
>>> from autograd_course.lab.training import graph_size, saved_bytes
>>> w = torch.ones(3, requires_grad=True)
>>> total = 0.0
>>> for _ in range(2):
...     total += (w * w).sum()   # the history bug: total is a tensor with a graph
>>> graph_size(total), saved_bytes(total)
(7, 12)
>>> graph_size(0.0 + (w * w).sum().item())
0
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence

import torch

Function = Callable[[torch.Tensor], torch.Tensor]

# --- data ------------------------------------------------------------------------------------


def two_moons(
    n: int, noise: float = 0.2, generator: torch.Generator | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """``n`` points of two interleaving half circles ("moons"), with Gaussian noise.

    Returns ``(x, y)``: ``x`` of shape ``(n, 2)`` and labels ``y`` of shape ``(n, 1)``, both
    float32; even rows are class 0 (the upper moon), odd rows class 1 (the lower one). The
    randomness comes from ``generator`` (PyTorch's global generator when None), so after
    ``seed(0)`` the same points come out every time. No classifier with a straight boundary
    separates the classes; a small MLP does.
    """
    labels = torch.arange(n) % 2
    angle = torch.rand(n, generator=generator) * math.pi
    upper = torch.stack([torch.cos(angle), torch.sin(angle)], dim=1)
    lower = torch.stack([1.0 - torch.cos(angle), 0.5 - torch.sin(angle)], dim=1)
    x = torch.where(labels[:, None] == 0, upper, lower)
    x = x + noise * torch.randn(n, 2, generator=generator)
    return x - torch.tensor([0.5, 0.25]), labels.float().unsqueeze(1)


# --- what a graph keeps alive ---------------------------------------------------------------------


def autograd_nodes(t) -> list:
    """The autograd nodes reachable from ``t.grad_fn``, each once (an empty list when ``t`` is
    not a tensor or has no ``grad_fn``).

    The nodes are the backward functions (``AddBackward0``, ``AddmmBackward0``...) and the
    ``AccumulateGrad`` nodes of the leaves: the graph that ``t.backward()`` would walk. As long
    as ``t`` is alive, all of them are.
    """
    start = getattr(t, "grad_fn", None)
    seen: set = set()
    order = []
    stack = [start] if start is not None else []
    while stack:
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        order.append(node)
        stack.extend(child for child, _ in reversed(node.next_functions))
    return order


def graph_size(t) -> int:
    """The number of autograd nodes that ``t`` keeps alive (0 for a number or a tensor
    without ``grad_fn``). It grows with every step when a loop does ``total += loss``."""
    return len(autograd_nodes(t))


def _saved_tensors(node) -> Iterable[torch.Tensor]:
    for attribute in dir(node):
        if not attribute.startswith("_saved_"):
            continue
        try:
            value = getattr(node, attribute)
        except RuntimeError:  # already freed by a backward() pass
            continue
        for item in value if isinstance(value, tuple | list) else (value,):
            if isinstance(item, torch.Tensor):
                yield item


def saved_bytes(t) -> int:
    """Bytes of memory held by the tensors that the graph of ``t`` saved for ``backward()``.

    Each graph node keeps the tensors its derivative needs (the input of a ReLU, the two
    matrices of a product...), until ``backward()`` frees them. This counts the memory
    (storages) of those still held, each storage once; a storage shared with a tensor that
    is alive anyway (a weight, the input batch) counts as well. 0 when ``t`` has no graph,
    or when ``backward()`` has freed everything its graph saved.
    """
    storages: dict[int, int] = {}
    for node in autograd_nodes(t):
        for saved in _saved_tensors(node):
            storage = saved.untyped_storage()
            storages[storage.data_ptr()] = storage.nbytes()
    return sum(storages.values())


# --- Newton vs SGD ----------------------------------------------------------------------------


def steps_to_converge(xs: Sequence[float], minimum: float, tol: float = 1e-6) -> int | None:
    """The first step ``k`` with ``|xs[k] - minimum| < tol`` (``xs[0]`` is the start, step 0),
    or None when no iterate gets that close (too few steps, or a run that diverges)."""
    for k, x in enumerate(xs):
        if math.isfinite(x) and abs(x - minimum) < tol:
            return k
    return None


def _value(function: Function, x: float) -> float:
    with torch.no_grad():
        return float(function(torch.tensor(x, dtype=torch.float64)))


def plot_newton_vs_sgd(
    function: Function,
    runs: Mapping[float, tuple[Sequence[float], Sequence[float]]],
    minimum: float,
    x_range: tuple[float, float] = (-5.5, 3.5),
    y_max: float = 700.0,
):
    """One row per start ``x0`` of ``runs`` (``{x0: (newton_xs, sgd_xs)}``): on the left both
    paths on the curve of ``function``, on the right ``x_k`` against the step ``k``.

    Newton's iterates are orange circles, SGD's are blue squares; the dotted line is
    ``minimum``. Iterates that leave ``x_range`` (a diverging run) are cut off, and the legend
    says so. Returns the matplotlib ``Figure``.
    """
    import matplotlib.pyplot as plt
    import numpy as np

    from autograd_course.kernel.plots import iterates_inside

    fig, axes = plt.subplots(len(runs), 2, figsize=(9.2, 3.0 * len(runs)), squeeze=False,
                             width_ratios=(3, 2))
    t = np.linspace(*x_range, 400)
    with torch.no_grad():
        curve = function(torch.tensor(t)).numpy()
    styles = (("Newton", "o-", "tab:orange"), ("SGD, lr = 0.05", "s--", "tab:blue"))
    for row, (x0, paths) in enumerate(runs.items()):
        on_curve, against_step = axes[row]
        on_curve.plot(t, curve, color="gray", lw=1)
        longest = 1
        for (label, style, color), xs in zip(styles, paths, strict=True):
            shown = iterates_inside(xs, x_range)
            if len(shown) < len(xs):
                label += f" (leaves the plot at step {len(shown)}: diverges)"
            values = [_value(function, x) for x in shown]
            on_curve.plot(shown, values, style, color=color, ms=5, lw=1, label=label)
            against_step.plot(range(len(shown)), shown, style, color=color, ms=5, lw=1)
            longest = max(longest, len(xs))
        on_curve.set_ylim(min(curve.min(), 0.0) - 20.0, y_max)
        on_curve.set_xlabel("x")
        on_curve.set_ylabel("f(x)")
        on_curve.set_title(f"from x0 = {x0:g}", fontsize=10)
        on_curve.legend(fontsize=8, loc="upper center")
        against_step.axhline(minimum, color="gray", ls=":", lw=1)
        against_step.set_xlim(-0.5, longest - 0.5)
        against_step.set_ylim(*x_range)
        against_step.set_xlabel("step k")
        against_step.set_ylabel("x_k")
    fig.tight_layout()
    return fig


# --- pictures of a training run ---------------------------------------------------------------


def plot_training(
    model: torch.nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    losses: Sequence[float],
    accuracies: Sequence[float],
):
    """Left: the mean training loss and the test accuracy per epoch. Right: the points ``x``
    coloured by their label ``y``, over the model's predicted probability of class 1.

    The model runs in evaluation mode under ``torch.no_grad()`` here, and is put back in
    the mode it was in. Returns the matplotlib ``Figure``.
    """
    import matplotlib.pyplot as plt
    import numpy as np

    fig, (curves, picture) = plt.subplots(1, 2, figsize=(9.2, 3.6))
    epochs = range(1, len(losses) + 1)
    curves.plot(epochs, losses, "o-", ms=3, color="tab:red", label="mean training loss")
    curves.set_xlabel("epoch")
    curves.set_ylabel("loss")
    other = curves.twinx()
    other.plot(epochs, accuracies, "s-", ms=3, color="tab:green", label="test accuracy")
    other.set_ylabel("accuracy")
    other.set_ylim(0.4, 1.02)
    lines = curves.get_lines() + other.get_lines()
    curves.legend(lines, [line.get_label() for line in lines], loc="center right", fontsize=8)

    low = x.min(dim=0).values - 0.5
    high = x.max(dim=0).values + 0.5
    g0, g1 = torch.meshgrid(torch.linspace(low[0], high[0], 150),
                            torch.linspace(low[1], high[1], 150), indexing="xy")
    grid = torch.stack([g0.reshape(-1), g1.reshape(-1)], dim=1)
    was_training = model.training
    model.eval()
    with torch.no_grad():
        probability = torch.sigmoid(model(grid)).reshape(g0.shape)
    model.train(was_training)
    picture.contourf(g0.numpy(), g1.numpy(), probability.numpy(), levels=np.linspace(0, 1, 11),
                     cmap="RdBu_r", alpha=0.5)
    picture.contour(g0.numpy(), g1.numpy(), probability.numpy(), levels=[0.5], colors="black",
                    linewidths=1)
    labels = y.reshape(-1).numpy()
    picture.scatter(x[:, 0].numpy(), x[:, 1].numpy(), c=labels, cmap="RdBu_r", s=12,
                    edgecolors="black", linewidths=0.3)
    picture.set_title("test points and the predicted probability of class 1 (line: 0.5)",
                      fontsize=10)
    fig.tight_layout()
    return fig


__all__ = ["autograd_nodes", "graph_size", "plot_newton_vs_sgd", "plot_training",
           "saved_bytes", "steps_to_converge", "two_moons"]
