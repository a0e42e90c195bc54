"""Measurements and pictures for lesson 10 (``torch.func``): per-sample gradients, Jacobians.

The lesson (``notebooks/10_functional.ipynb``) writes the transforms out in its own cells; this
module holds the timing and drawing:

- **comparing values**: :func:`max_difference` and :func:`all_close` for two dicts of
  tensors (name -> tensor), such as per-sample gradients computed two ways;
- **per-sample gradients, timed**: :func:`per_sample_speed` times a loop and a vectorised
  version on batches of several sizes (medians, measured in turn with
  :func:`autograd_course.lab.cost.compare_times`), :func:`speed_table` shows the result;
- **Jacobians, timed**: :func:`jacobian_sweep` times ``torch.func.jacrev`` and
  ``torch.func.jacfwd`` over a grid of input sizes ``n`` and output sizes ``m``;
  :func:`jacobian_table` and :func:`plot_jacobian_sweep` show it;
- **the work, counted**: :func:`count_work` runs a call once and counts what it did
  (:class:`Work`: the operations dispatched, the multiply-adds of its matrix products, the
  numbers its operations wrote, and the largest single tensor among them);
  :func:`compare_work` does it for several calls. Counts are exact and the same on every
  machine: they explain the times, which are measurements;
- times are measurements: a lesson cell that prints them is tagged "measured".

>>> import torch
>>> a = {"w": torch.tensor([1.0, 2.0]), "b": torch.tensor([0.5])}
>>> b = {"w": torch.tensor([1.0, 2.25]), "b": torch.tensor([0.5])}
>>> max_difference(a, b), all_close(a, b), all_close(a, a)
(0.25, False, True)
>>> row = SpeedRow(batch=32, loop=0.010, vectorised=0.002)
>>> round(row.speed_up, 6)
5.0
>>> count_work(torch.mm, torch.ones(2, 3), torch.ones(3, 4))
Work(operations=1, multiply_adds=24, numbers_written=8, largest=8)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

from autograd_course.lab.cost import compare_times

Tensors = Mapping[str, torch.Tensor]

# --- comparing values ------------------------------------------------------------------------


def max_difference(a: Tensors, b: Tensors) -> float:
    """The largest absolute difference between ``a[name]`` and ``b[name]``, over all names.

    Both dicts must have the same names and, name by name, the same shapes.

    >>> import torch
    >>> max_difference({"x": torch.zeros(2)}, {"x": torch.tensor([0.0, -0.5])})
    0.5
    """
    if set(a) != set(b):
        raise ValueError(f"different names: {sorted(a)} and {sorted(b)}")
    worst = 0.0
    for name in a:
        if a[name].shape != b[name].shape:
            raise ValueError(f"{name}: shapes {tuple(a[name].shape)} and {tuple(b[name].shape)}")
        if a[name].numel():
            worst = max(worst, (a[name] - b[name]).abs().max().item())
    return worst


def all_close(a: Tensors, b: Tensors, **tolerances) -> bool:
    """Whether ``torch.allclose(a[name], b[name])`` for every name (same names required).

    ``tolerances`` (``rtol``, ``atol``) are passed on to ``torch.allclose``.
    """
    return set(a) == set(b) and all(torch.allclose(a[n], b[n], **tolerances) for n in a)


# --- the work, counted ------------------------------------------------------------------------


@dataclass(frozen=True)
class Work:
    """What one call did, counted rather than timed (the same on every machine).

    - ``operations``: the ATen operations it dispatched (views included), each a trip
      through PyTorch's dispatcher: the fixed cost a call pays per operation;
    - ``multiply_adds``: those of its matrix products (``mm``, ``bmm``, ``mv``, ``addmm``,
      ``dot``, ...); elementwise operations are not in it;
    - ``numbers_written``: the entries of every output of every operation: the elementwise
      work, and the memory traffic;
    - ``largest``: the entries of the largest single output: a bound on the memory that one
      intermediate needs (what ``chunk_size`` lowers).
    """

    operations: int
    multiply_adds: int
    numbers_written: int
    largest: int


#: The matrix products, and the position of their first factor among the arguments
#: (``addmm(c, a, b)`` computes ``c + a @ b``).
_PRODUCTS = {"mm": 0, "bmm": 0, "mv": 0, "dot": 0, "vdot": 0,
             "addmm": 1, "baddbmm": 1, "addmv": 1}


def _multiply_adds(name: str, args) -> int:
    """The multiply-adds of one matrix product ``a @ b``: a's entries times b's columns."""
    first = _PRODUCTS.get(name)
    if first is None:
        return 0
    a, b = args[first], args[first + 1]
    return a.numel() * (b.shape[-1] if b.dim() >= 2 else 1)


class _OperationLog(TorchDispatchMode):
    """Counts the operations that reach the dispatcher, their products and their outputs."""

    def __init__(self):
        super().__init__()
        self.operations = self.multiply_adds = self.numbers_written = self.largest = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        self.operations += 1
        self.multiply_adds += _multiply_adds(func.overloadpacket.__name__, args)
        for leaf in tree_leaves(out):
            if isinstance(leaf, torch.Tensor):
                self.numbers_written += leaf.numel()
                self.largest = max(self.largest, leaf.numel())
        return out


def count_work(fn: Callable, *args, **kwargs) -> Work:
    """Call ``fn(*args, **kwargs)`` once and count its :class:`Work`.

    The operations are seen below ``torch.func``'s transforms (a
    ``torch.utils._python_dispatch.TorchDispatchMode``): under ``vmap`` an operation counts
    once, with the batched shapes of its tensors.

    >>> import torch
    >>> count_work(torch.mv, torch.ones(3, 4), torch.ones(4))
    Work(operations=1, multiply_adds=12, numbers_written=3, largest=3)
    """
    with _OperationLog() as log:
        fn(*args, **kwargs)
    return Work(log.operations, log.multiply_adds, log.numbers_written, log.largest)


def compare_work(fns: Mapping[str, Callable], *args, **kwargs) -> dict[str, Work]:
    """:func:`count_work` of several functions called on the same arguments: label -> Work.

    >>> import torch
    >>> work = compare_work({"a @ a": lambda a: a @ a, "a * a": lambda a: a * a}, torch.ones(4, 4))
    >>> work["a @ a"].multiply_adds, work["a * a"].multiply_adds, work["a * a"].largest
    (64, 0, 16)
    """
    return {label: count_work(fn, *args, **kwargs) for label, fn in fns.items()}


# --- per-sample gradients: a loop against vmap ----------------------------------------------


@dataclass(frozen=True)
class SpeedRow:
    """One batch size: the median times (s) of the loop and of the vectorised version."""

    batch: int
    loop: float
    vectorised: float

    @property
    def speed_up(self) -> float:
        """How many times faster the vectorised version is (loop time / its time)."""
        return self.loop / self.vectorised


def per_sample_speed(
    loop: Callable, vectorised: Callable, make_batch: Callable[[int], tuple],
    batch_sizes: Iterable[int], *, repeats: int = 5, warmup: int = 1,
) -> list[SpeedRow]:
    """Time ``loop(*batch)`` and ``vectorised(*batch)`` for batches of each size.

    ``make_batch(size)`` returns the arguments, e.g. ``(x, y)``. For each size the two are
    measured in turn, round after round (:func:`autograd_course.lab.cost.compare_times`), and
    the medians of ``repeats`` rounds after ``warmup`` untimed ones are kept.
    """
    rows = []
    for size in batch_sizes:
        batch = make_batch(size)
        times = compare_times({"loop": lambda batch=batch: loop(*batch),
                               "vectorised": lambda batch=batch: vectorised(*batch)},
                              repeats=repeats, warmup=warmup)
        rows.append(SpeedRow(size, times["loop"], times["vectorised"]))
    return rows


def speed_table(rows: Sequence[SpeedRow]):
    """A table (rendered Markdown) of :func:`per_sample_speed`: one line per batch size.

    A Markdown table needs no padding to line up, so only its numbers change from run to
    run (what the "measured" tag masks).
    """
    from IPython.display import Markdown

    lines = ["| batch size | Python loop (ms) | vmap (ms) | speed-up |", "|---:|---:|---:|---:|"]
    for row in rows:
        lines.append(f"| {row.batch} | {1e3 * row.loop:.2f} | {1e3 * row.vectorised:.2f} | "
                     f"{row.speed_up:.1f} x |")
    return Markdown("\n".join(lines))


# --- Jacobians: jacrev against jacfwd ---------------------------------------------------------


@dataclass(frozen=True)
class JacobianTiming:
    """One point of the grid: input size ``n``, output size ``m``, median times (s)."""

    n: int
    m: int
    jacrev: float
    jacfwd: float

    @property
    def ratio(self) -> float:
        """jacrev's time / jacfwd's: above 1, jacfwd was faster; below 1, jacrev was."""
        return self.jacrev / self.jacfwd


def jacobian_sweep(
    make_function: Callable[[int, int], tuple[Callable, torch.Tensor]],
    sizes: Sequence[int], *, repeats: int = 5, warmup: int = 1,
) -> list[JacobianTiming]:
    """Time ``jacrev(f)(x)`` and ``jacfwd(f)(x)`` for every input size n and output size m.

    ``make_function(n, m)`` returns ``(f, x)``: a function from ``n`` numbers to ``m``
    numbers and an input of shape ``(n,)``. The two transforms are measured in turn
    (:func:`autograd_course.lab.cost.compare_times`), medians of ``repeats`` rounds; the rows
    come out n by n, and within one n, m by m.
    """
    from torch.func import jacfwd, jacrev

    rows = []
    for n in sizes:
        for m in sizes:
            f, x = make_function(n, m)
            times = compare_times({"jacrev": lambda f=f, x=x: jacrev(f)(x),
                                   "jacfwd": lambda f=f, x=x: jacfwd(f)(x)},
                                  repeats=repeats, warmup=warmup)
            rows.append(JacobianTiming(n, m, times["jacrev"], times["jacfwd"]))
    return rows


def jacobian_table(rows: Sequence[JacobianTiming]):
    """A grid (rendered Markdown) of :func:`jacobian_sweep`: a row per n, a column per m.

    Each cell is ``jacrev ms / jacfwd ms``. Only the numbers vary from run to run.

    >>> rows = [JacobianTiming(4, 4, 0.001, 0.002), JacobianTiming(4, 64, 0.004, 0.001)]
    >>> print(jacobian_table(rows).data)
    | n \\ m | 4 | 64 |
    |---:|---:|---:|
    | 4 | 1.00 / 2.00 | 4.00 / 1.00 |
    """
    from IPython.display import Markdown

    ns = sorted({r.n for r in rows})
    ms = sorted({r.m for r in rows})
    cell = {(r.n, r.m): r for r in rows}
    lines = ["| n \\ m | " + " | ".join(str(m) for m in ms) + " |",
             "|---:|" + "---:|" * len(ms)]
    for n in ns:
        entries = [f"{1e3 * cell[n, m].jacrev:.2f} / {1e3 * cell[n, m].jacfwd:.2f}"
                   for m in ms]
        lines.append(f"| {n} | " + " | ".join(entries) + " |")
    return Markdown("\n".join(lines))


def plot_jacobian_sweep(rows: Sequence[JacobianTiming], fixed: int):
    """Three panels: the times against n at m = ``fixed``, against m at n = ``fixed``, and
    the ratio jacrev / jacfwd over the whole grid (log colour scale: red where jacfwd was
    faster, blue where jacrev was)."""
    import matplotlib.pyplot as plt
    import numpy as np
    from matplotlib import ticker

    ns = sorted({r.n for r in rows})
    ms = sorted({r.m for r in rows})
    cell = {(r.n, r.m): r for r in rows}
    fig, axes = plt.subplots(1, 3, figsize=(9.2, 3.3), width_ratios=(1, 1, 1.15))
    panels = ((axes[0], ns, lambda k: cell[k, fixed], "input size n", f"m = {fixed} outputs"),
              (axes[1], ms, lambda k: cell[fixed, k], "output size m", f"n = {fixed} inputs"))
    for ax, sizes, pick, label, title in panels:
        ax.plot(sizes, [1e3 * pick(k).jacrev for k in sizes], "o-", color="tab:blue",
                label="jacrev")
        ax.plot(sizes, [1e3 * pick(k).jacfwd for k in sizes], "s-", color="tab:red",
                label="jacfwd")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.yaxis.set_major_formatter(ticker.FuncFormatter(lambda value, _: f"{value:g}"))
        ax.set_xticks(sizes, [str(k) for k in sizes], rotation=90)  # 1024 and 2048 fit
        ax.minorticks_off()
        ax.set_xlabel(label)
        ax.set_title(title, fontsize=10)
        ax.legend(fontsize=8)
    axes[0].set_ylabel("median time (ms)")
    ratios = np.array([[math.log2(cell[n, m].ratio) for m in ms] for n in ns])
    limit = max(1.0, float(np.abs(ratios).max()))
    image = axes[2].imshow(ratios, cmap="coolwarm", vmin=-limit, vmax=limit, origin="lower")
    axes[2].set_xticks(range(len(ms)), [str(m) for m in ms], rotation=90)
    axes[2].set_yticks(range(len(ns)), [str(n) for n in ns])
    axes[2].set_xlabel("output size m")
    axes[2].set_ylabel("input size n")
    axes[2].set_title("jacrev time / jacfwd time", fontsize=10)
    for i, n in enumerate(ns):
        for j, m in enumerate(ms):
            axes[2].text(j, i, f"{cell[n, m].ratio:.2g}", ha="center", va="center", fontsize=7)
    bar = fig.colorbar(image, ax=axes[2], fraction=0.046, pad=0.04)
    step = 1 if limit <= 4 else 2
    top = math.floor(limit) // step * step
    ticks = list(range(-top, top + 1, step))
    bar.set_ticks(ticks, labels=[f"{2.0 ** t:g}" for t in ticks])
    fig.tight_layout()
    return fig
