"""Pictures for the gradient-descent lesson: a function with the SGD iterates marked.

>>> from autograd_course.kernel.plots import sgd_trajectory
>>> [round(x, 6) for x in sgd_trajectory(lambda x: x**4 + x**2 + 10 * x, lr=0.05, steps=3)]
[0.0, -0.5, -0.925, -1.174209]

``plot_iterates`` draws one run on the curve, ``plot_steps`` the same run against the step
number, ``plot_lr_comparison`` several learning rates side by side (a static picture that
reads without widgets), and ``lr_slider`` one run with an ipywidgets slider for the
learning rate.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import matplotlib.pyplot as plt
import numpy as np
import torch

Function = Callable[[torch.Tensor], torch.Tensor]

#: The x range the lesson plots f(x) = x^4 + x^2 + 10x on (the seed's ``np.linspace(-2.5, 1.5)``).
X_RANGE = (-2.5, 1.5)

#: Learning rates of the static comparison: slow, the seed's, overshooting, diverging.
COMPARISON_LRS = (0.01, 0.05, 0.09, 0.2)


def sgd_trajectory(
    function: Function, x0: float = 0.0, lr: float = 0.05, steps: int = 10
) -> list[float]:
    """Run ``steps`` steps of ``torch.optim.SGD`` on ``function`` from ``x0``.

    Returns the iterates ``[x0, x1, ..., x_steps]`` as Python floats. The loop is the
    lesson's: float32 ``x``, ``zero_grad()``, ``backward()``, ``step()``, so with the
    defaults it reproduces the seed's table. A run that diverges ends in ``inf``/``nan``
    values rather than raising.
    """
    x = torch.tensor(x0, requires_grad=True)
    optimizer = torch.optim.SGD([x], lr=lr)
    xs = [x.item()]
    for _ in range(steps):
        optimizer.zero_grad()
        function(x).backward()
        optimizer.step()
        xs.append(x.item())
    return xs


def iterates_inside(xs: Sequence[float], x_range: tuple[float, float]) -> list[float]:
    """The iterates up to (not including) the first one outside ``x_range`` or not finite."""
    inside = []
    for x in xs:
        if not (math.isfinite(x) and x_range[0] <= x <= x_range[1]):
            break
        inside.append(x)
    return inside


def plot_iterates(
    function: Function,
    xs: Sequence[float],
    ax=None,
    title: str | None = None,
    x_range: tuple[float, float] = X_RANGE,
    legend: bool = True,
):
    """Plot ``function`` on ``x_range`` and mark the iterates ``xs`` on its curve.

    The start is a hollow circle, the iterates are red dots joined in order, the last one
    shown is a star. Iterates outside ``x_range`` (or not finite) and all after them are
    left out, and the title says so. Returns the matplotlib ``Axes``.
    """
    if ax is None:
        _, ax = plt.subplots(figsize=(6, 4))
    t = np.linspace(*x_range, 200)
    inside = iterates_inside(xs, x_range)
    with torch.no_grad():
        ax.plot(t, function(torch.tensor(t)).numpy(), color="tab:blue", label="f(x)")
        fx = [function(torch.tensor(x, dtype=torch.float64)).item() for x in inside]
    if inside:
        ax.plot(inside, fx, color="tab:red", lw=0.8, alpha=0.6)
        ax.plot(inside, fx, "o", color="tab:red", ms=4, label="iterates")
        ax.plot(inside[:1], fx[:1], "o", mfc="white", mec="black", ms=7, label="start")
        ax.plot(inside[-1:], fx[-1:], "*", color="black", ms=11, label="last shown")
    note = ""
    if len(inside) < len(xs):
        note = f"\nx{len(inside)} leaves the plot: diverges"
    ax.set_title((title or "") + note, fontsize=10)
    ax.set_xlabel("x")
    ax.set_ylabel("f(x)")
    if legend:
        ax.legend(fontsize=8, loc="upper center")
    return ax


def plot_steps(
    xs: Sequence[float],
    ax=None,
    minimum: float | None = None,
    x_range: tuple[float, float] = X_RANGE,
):
    """Plot the iterates ``xs`` against the step number, to show how they approach a minimum.

    A dashed line marks ``minimum`` when it is given. Iterates outside ``x_range`` (or not
    finite) and all after them are left out. Returns the matplotlib ``Axes``.
    """
    if ax is None:
        _, ax = plt.subplots(figsize=(6, 3))
    inside = iterates_inside(xs, x_range)
    if minimum is not None:
        ax.axhline(minimum, color="gray", ls="--", lw=1, label="minimum")
    ax.plot(range(len(inside)), inside, "o-", color="tab:red", ms=4, lw=1)
    ax.set_xlim(-0.5, len(xs) - 0.5)
    ax.set_ylim(*x_range)
    ax.set_xlabel("step k")
    ax.set_ylabel("x_k")
    return ax


def plot_lr_comparison(
    function: Function,
    lrs: Sequence[float] = COMPARISON_LRS,
    x0: float = 0.0,
    steps: int = 10,
    minimum: float | None = None,
):
    """Draw one column per learning rate: the same ``steps`` SGD steps from ``x0``.

    The top row shows the iterates on the curve (:func:`plot_iterates`), the bottom row
    ``x_k`` against the step ``k`` (:func:`plot_steps`, with ``minimum`` dashed when given).
    With the default rates the columns show a rate that is too small (slow), the seed's
    0.05 (fast), one that overshoots (the iterates zig-zag around the minimum) and one
    that is too large (the iterates run away). Returns the matplotlib ``Figure``.
    """
    fig, axes = plt.subplots(
        2, len(lrs), figsize=(2.3 * len(lrs), 5.2), squeeze=False, height_ratios=(3, 2)
    )
    for column, lr in enumerate(lrs):
        xs = sgd_trajectory(function, x0=x0, lr=lr, steps=steps)
        title = f"lr = {lr}: x{steps} = {xs[-1]:.4g}"
        plot_iterates(function, xs, ax=axes[0, column], title=title, legend=column == 0)
        plot_steps(xs, ax=axes[1, column], minimum=minimum)
    fig.tight_layout()
    return fig


def lr_slider(
    function: Function,
    x0: float = 0.0,
    steps: int = 10,
    lr: float = 0.05,
    lr_range: tuple[float, float, float] = (0.005, 0.2, 0.005),
    minimum: float | None = None,
):
    """Return an ipywidgets ``interactive`` with a learning-rate slider.

    Moving the slider reruns :func:`sgd_trajectory` with that learning rate and redraws
    :func:`plot_iterates` and :func:`plot_steps` side by side. ``lr_range`` is
    ``(min, max, step)`` of the slider. Display the result (make it the last line of a
    cell) to see it; it needs a live kernel.
    """
    import ipywidgets

    low, high, step = lr_range
    slider = ipywidgets.FloatSlider(
        value=lr,
        min=low,
        max=high,
        step=step,
        description="lr",
        readout_format=".3f",
        continuous_update=False,
    )

    def draw(lr: float) -> None:
        xs = sgd_trajectory(function, x0=x0, lr=lr, steps=steps)
        fig, (left, right) = plt.subplots(1, 2, figsize=(9.2, 3.4))
        plot_iterates(function, xs, ax=left, title=f"lr = {lr:.3f}: x{steps} = {xs[-1]:.4g}")
        plot_steps(xs, ax=right, minimum=minimum)
        fig.tight_layout()
        plt.show()

    return ipywidgets.interactive(draw, lr=slider)
