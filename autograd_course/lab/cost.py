"""Measuring what autograd costs: time (backward against forward) and memory (saved tensors).

The tools of lesson ``notebooks/06_cost.ipynb`` (assignment 06's checks are its hidden tests).

- **memory**: :class:`SavedTensorLog` records every tensor autograd saves for backward
  (``torch.autograd.graph.saved_tensors_hooks``): which operation saved it, whether it is that
  operation's input or output, and how many bytes its storage holds.
  :attr:`SavedTensorLog.total_bytes` counts each storage once (``x * x`` saves ``x`` twice,
  but keeps one storage alive); :attr:`SavedTensorLog.raw_bytes` counts every save.
- **time**: :func:`median_time` (median of repeats after a warm-up, synchronising a GPU),
  :func:`forward_backward_times` for one model and input, :func:`compare_times` for several
  functions measured in turn, :func:`mlp` (the models timed).
- **pictures and tables**: :func:`timing_table`, :func:`plot_ratios`, :func:`plot_saved_by_depth`.
- Byte counts are exact (shapes and dtypes only); times are measurements, and a lesson cell
  that prints them is tagged "measured".

>>> import torch
>>> x = torch.tensor([0.0, 1.0, 2.0], requires_grad=True)
>>> with SavedTensorLog(names={"x": x}) as log:
...     y = ((x + 2) ** 2 + 3).mean()
>>> [(r.op, r.role, r.shape, r.nbytes) for r in log.records]
[('PowBackward0', 'input', (3,), 12)]
>>> with SavedTensorLog(names={"x": x}) as log:
...     y = (x * x).sum()
>>> [(r.op, r.name) for r in log.records], log.raw_bytes, log.total_bytes
([('MulBackward0', 'x'), ('MulBackward0', 'x')], 24, 12)
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

import torch
from torch.autograd.graph import saved_tensors_hooks
from torch.overrides import TorchFunctionMode

# --- the device ----------------------------------------------------------------------------


@contextlib.contextmanager
def benchmark(doc: str, *, repeats: int, quick_repeats: int, quick: str, about: str = ""):
    """The options and frame of a lesson's benchmark script (``benchmarks/*_cost.py``):
    ``--threads`` (torch's, 1 by default), ``--repeats`` and ``--quick`` (``quick``: what it
    makes smaller; its rounds are ``quick_repeats``). Sets the threads, seeds everything with 0,
    prints the header (``about``: what else the figures depend on) and, at the end, the time
    taken. Yields the options, with ``repeats`` the rounds to use."""
    from autograd_course.kernel.lessons import seed

    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=repeats)
    parser.add_argument("--quick", action="store_true",
                        help=f"{quick} and {quick_repeats} rounds: a check that it runs, in "
                        "seconds")
    args = parser.parse_args()
    if args.quick:
        args.repeats = quick_repeats
    torch.set_num_threads(args.threads)
    seed(0)
    start = time.perf_counter()
    print(f"torch {torch.__version__}, {describe_device('cpu')}, medians of {args.repeats} "
          f"rounds{'; ' + about if about else ''}\n")
    yield args
    print(f"{time.perf_counter() - start:.1f} s in all")


def pick_device() -> torch.device:
    """The GPU (``cuda``) when there is one, else the CPU: the lesson's code runs on either."""
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def describe_device(device: torch.device | str) -> str:
    """One line that says where the measurements ran, e.g. ``cpu, 1 thread``."""
    device = torch.device(device)
    if device.type == "cuda":
        return f"cuda ({torch.cuda.get_device_name(device)})"
    threads = torch.get_num_threads()
    return f"cpu, {threads} thread{'s' if threads != 1 else ''}"


def synchronize(device: torch.device | str) -> None:
    """Wait until the device has finished its queued work (a GPU runs asynchronously)."""
    device = torch.device(device)
    if device.type == "cuda":
        torch.cuda.synchronize(device)


# --- time --------------------------------------------------------------------------------


def median_time(
    fn: Callable,
    *,
    setup: Callable | None = None,
    repeats: int = 5,
    warmup: int = 1,
    device: torch.device | str = "cpu",
) -> float:
    """The median wall-clock time of ``fn`` in seconds, over ``repeats`` timed calls.

    ``warmup`` untimed calls come first (the first call pays one-time costs: memory
    allocation, lazy initialisation). With ``setup``, each call is ``fn(setup())`` and
    ``setup()`` is not timed (e.g. a forward pass that builds the graph a timed
    ``backward()`` needs). On a GPU the device is synchronised before the clock starts and
    before it stops, because CUDA calls return before the work is done. The median, unlike
    the mean, ignores a few calls slowed down by something else on the machine.
    """
    times = []
    for i in range(warmup + repeats):
        argument = setup() if setup is not None else None
        synchronize(device)
        start = time.perf_counter()
        fn(argument) if setup is not None else fn()
        synchronize(device)
        if i >= warmup:
            times.append(time.perf_counter() - start)
    return statistics.median(times)


def mlp(depth: int, width: int, *, activation: type[torch.nn.Module] = torch.nn.Tanh,
        device: torch.device | str = "cpu") -> torch.nn.Sequential:
    """A multilayer perceptron: ``depth`` times (Linear(width, width), activation)."""
    layers: list[torch.nn.Module] = []
    for _ in range(depth):
        layers += [torch.nn.Linear(width, width), activation()]
    return torch.nn.Sequential(*layers).to(device)


def forward_backward_times(model: torch.nn.Module, x: torch.Tensor, *, repeats: int = 5,
                           warmup: int = 1) -> tuple[float, float]:
    """Median times (seconds) of a recorded forward pass ``model(x).sum()`` and of the
    ``backward()`` through the graph it built.

    Each round times one forward pass, then the backward pass of that same graph, from
    cleared gradients (``.grad`` is None), like a training step. The two are measured in
    turn, so a slowdown of the machine hits both alike. ``warmup`` rounds come first,
    untimed; the device is synchronised before each clock reading.
    """
    device = x.device
    forward_times, backward_times = [], []
    for i in range(warmup + repeats):
        model.zero_grad(set_to_none=True)
        synchronize(device)
        start = time.perf_counter()
        loss = model(x).sum()
        synchronize(device)
        middle = time.perf_counter()
        loss.backward()
        synchronize(device)
        end = time.perf_counter()
        if i >= warmup:
            forward_times.append(middle - start)
            backward_times.append(end - middle)
    model.zero_grad(set_to_none=True)
    return statistics.median(forward_times), statistics.median(backward_times)


def compare_times(fns: Mapping[str, Callable], *, repeats: int = 5, warmup: int = 1,
                  device: torch.device | str = "cpu") -> dict[str, float]:
    """Median times (seconds) of several functions, measured in turn (round after round).

    Measuring the candidates alternately, rather than one after the other, spreads a
    slowdown of the machine over all of them, so that their ratios stay fair.
    """
    times: dict[str, list[float]] = {label: [] for label in fns}
    for i in range(warmup + repeats):
        for label, fn in fns.items():
            synchronize(device)
            start = time.perf_counter()
            fn()
            synchronize(device)
            if i >= warmup:
                times[label].append(time.perf_counter() - start)
    return {label: statistics.median(t) for label, t in times.items()}


@dataclass(frozen=True)
class Timing:
    """One row of a timing sweep: the model's depth and width, and the median times (s)."""

    depth: int
    width: int
    forward: float
    backward: float

    @property
    def ratio(self) -> float:
        return self.backward / self.forward


def time_mlps(shapes: Iterable[tuple[int, int]], *, batch: int = 64, repeats: int = 5,
              warmup: int = 1, device: torch.device | str = "cpu") -> list[Timing]:
    """Time forward and backward of ``mlp(depth, width)`` on a batch, for each (depth, width)."""
    rows = []
    for depth, width in shapes:
        model = mlp(depth, width, device=device)
        x = torch.randn(batch, width, device=device)
        forward_s, backward_s = forward_backward_times(model, x, repeats=repeats,
                                                       warmup=warmup)
        rows.append(Timing(depth, width, forward_s, backward_s))
    return rows


def timing_table(rows: Sequence[Timing], vary: str):
    """A table (rendered Markdown) of a timing sweep: ``vary`` is "depth" or "width".

    A Markdown table needs no padding to line up, so the text of the cell that shows it is
    the same from run to run except for the numbers (what the "measured" tag masks).
    """
    from IPython.display import Markdown

    lines = [f"| {vary} | forward (ms) | backward (ms) | backward / forward |",
             "|---:|---:|---:|---:|"]
    for row in rows:
        lines.append(f"| {getattr(row, vary)} | {1e3 * row.forward:.3f} | "
                     f"{1e3 * row.backward:.3f} | {row.ratio:.2f} |")
    return Markdown("\n".join(lines))


def plot_ratios(by_depth: Sequence[Timing], by_width: Sequence[Timing]):
    """Two panels: backward / forward time against depth, and against width."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(9, 3.4), sharey=True)
    for ax, rows, vary in ((axes[0], by_depth, "depth"), (axes[1], by_width, "width")):
        ax.plot([getattr(r, vary) for r in rows], [r.ratio for r in rows], "o-",
                color="tab:red")
        ax.axhline(1.0, color="gray", lw=0.8, ls="--")
        ax.set_xlabel(vary)
        fixed = "width" if vary == "depth" else "depth"
        ax.set_title(f"{fixed} {getattr(rows[0], fixed)}, {vary} varies", fontsize=10)
        if vary == "width":
            ax.set_xscale("log", base=2)
            ax.set_xticks([r.width for r in rows], [str(r.width) for r in rows])
            ax.minorticks_off()
    axes[0].set_ylabel("backward time / forward time")
    axes[0].set_ylim(bottom=0)
    fig.tight_layout()
    return fig


# --- memory: what autograd saves ---------------------------------------------------------


def storage_key(t: torch.Tensor) -> int:
    """What identifies the memory a tensor views: the address of its storage."""
    return t.untyped_storage().data_ptr()


def storage_nbytes(t: torch.Tensor) -> int:
    """The bytes of the whole storage ``t`` views (a slice keeps all of it alive)."""
    return t.untyped_storage().nbytes()


@dataclass
class Saved:
    """One tensor autograd saved for backward (one call of the pack hook).

    ``op``: the class of the graph node that saved it (``MulBackward0``...); ``role``:
    "input" or "output" of that operation; ``name``: the name given to :class:`SavedTensorLog`
    for its storage, or None; ``nbytes``: the bytes of its whole storage; ``storage``: what
    identifies that storage (:func:`storage_key`).
    """

    op: str
    role: str
    shape: tuple[int, ...]
    dtype: torch.dtype
    nbytes: int
    storage: int
    name: str | None = None



class _Operations(TorchFunctionMode):
    """Tells a :class:`SavedTensorLog` which operation is running, and its outputs."""

    def __init__(self, log: SavedTensorLog):
        super().__init__()
        self.log = log

    def __torch_function__(self, func, types, args=(), kwargs=None):
        start = len(self.log._pending)
        self.log._depth += 1
        try:
            out = func(*args, **(kwargs or {}))
        finally:
            self.log._depth -= 1
        if len(self.log._pending) > start:
            self.log._attribute(start, func, out)
        return out


def _in_checkpoint() -> bool:
    frame = sys._getframe(2)
    for _ in range(40):
        if frame is None:
            return False
        if frame.f_code.co_filename.replace("\\", "/").endswith("torch/utils/checkpoint.py"):
            return True
        frame = frame.f_back
    return False


class SavedTensorLog:
    """Record the tensors autograd saves for backward inside a ``with`` block.

    It installs ``torch.autograd.graph.saved_tensors_hooks``: autograd calls the pack hook
    with every tensor an operation saves for its backward formula, and the unpack hook when
    backward needs it again (:attr:`unpacked` counts those calls). Inside the block the log
    keeps each saved tensor, so that no storage is freed and reused while it counts; what it
    learnt about each one is in :attr:`records` (:class:`Saved`). ``names`` maps names to
    tensors, so that a saved tensor whose storage is one of theirs gets that name (a view of
    a weight, such as ``W.t()``, gets the weight's name).

    The operation that saved a tensor is found with a ``TorchFunctionMode`` that sees every
    torch function called in the block: it is the graph node (``grad_fn``) of that
    function's result. Tensors that ``torch.utils.checkpoint`` saves (a segment's inputs)
    have the operation ``checkpoint``. After the block the log holds numbers and names
    only, no tensor, and what autograd stored is a detached tensor (the same storage), so it
    keeps no memory alive, even where backward never runs.
    """

    def __init__(self, names: Mapping[str, torch.Tensor] | None = None):
        self._names = {storage_key(t): n for n, t in (names or {}).items() if t.numel()}
        self.records: list[Saved] = []
        self.unpacked = 0
        self._pending: list[torch.Tensor] = []
        self._kept: list[torch.Tensor] = []
        self._depth = 0
        self._hooks: saved_tensors_hooks | None = None
        self._mode: _Operations | None = None

    def __enter__(self) -> SavedTensorLog:
        self._hooks = saved_tensors_hooks(self._pack, self._unpack)
        self._mode = _Operations(self)
        self._hooks.__enter__()
        self._mode.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self._mode.__exit__(*exc)
        self._hooks.__exit__(*exc)
        for t in self._pending:  # left by a torch function that raised
            self._add(t, "?", "input")
        self._pending.clear()
        self._kept.clear()  # the tensors were kept only while counting
        self._hooks = self._mode = None

    # the hooks
    def _pack(self, t: torch.Tensor) -> torch.Tensor:
        self._kept.append(t)
        if self._depth:
            self._pending.append(t)
        else:
            self._add(t, "checkpoint" if _in_checkpoint() else "?", "input")
        # The same storage without the tensor's graph: an operation that saves its own output
        # (exp, tanh) would otherwise hold its output, which holds it, a cycle that only
        # backward() breaks, so the graph would outlive the block.
        return t.detach()

    def _unpack(self, t: torch.Tensor) -> torch.Tensor:
        self.unpacked += 1
        return t

    def _attribute(self, start: int, func, out) -> None:
        outputs = [o for o in (out if isinstance(out, tuple | list) else (out,))
                   if isinstance(o, torch.Tensor)]
        node = next((o.grad_fn for o in outputs if o.grad_fn is not None), None)
        op = type(node).__name__ if node is not None else getattr(func, "__name__", "?")
        produced = {storage_key(o) for o in outputs if o.numel()}
        for t in self._pending[start:]:
            self._add(t, op, "output" if storage_key(t) in produced else "input")
        del self._pending[start:]

    def _add(self, t: torch.Tensor, op: str, role: str) -> None:
        key = storage_key(t)
        self.records.append(Saved(op, role, tuple(t.shape), t.dtype, storage_nbytes(t), key,
                                  self._names.get(key)))

    # the counts
    @property
    def raw_bytes(self) -> int:
        """Bytes summed over every save: a storage saved twice counts twice (wrong)."""
        return sum(r.nbytes for r in self.records)

    @property
    def total_bytes(self) -> int:
        """Bytes of the unique storages saved: the memory the graph keeps alive."""
        return sum(self.storages().values())

    def storages(self) -> dict[int, int]:
        """The unique storages saved: their key and their bytes."""
        return {r.storage: r.nbytes for r in self.records}

    def bytes_by(self, named: bool) -> int:
        """Bytes of the unique storages that have a name (``named=True``: the tensors you
        passed, such as inputs and weights, which exist anyway) or none (results the forward
        pass made, kept alive only for backward)."""
        return sum(r.nbytes for r in {r.storage: r for r in self.records}.values()
                   if (r.name is not None) == named)

    def saved_names(self) -> set[str]:
        """The names (given to the log) of the saved storages."""
        return {r.name for r in self.records if r.name is not None}

    def table(self) -> str:
        """One line per save: the operation, input or output, name, shape, dtype and bytes;
        a storage saved before is marked ``(again)``, and the last line gives both totals."""
        lines, seen = [f"{'operation':<16} {'saves':<6} {'name':<9} {'shape':<10} "
                             f"{'dtype':<8} {'storage':>13}"], set()
        for r in self.records:
            again = "  (again)" if r.storage in seen else ""
            seen.add(r.storage)
            dtype = str(r.dtype).removeprefix("torch.")
            lines.append(f"{r.op:<16} {r.role:<6} {r.name or '-':<9} {str(r.shape):<10} "
                         f"{dtype:<8} {r.nbytes:>7} bytes{again}")
        lines.append(f"{len(self.records)} saves, {len(self.storages())} storages: "
                     f"{self.raw_bytes} bytes counted per save, {self.total_bytes} bytes "
                     "in unique storages")
        return "\n".join(lines)


def mlp_names(model: torch.nn.Sequential, x: torch.Tensor) -> dict[str, torch.Tensor]:
    """Names for :class:`SavedTensorLog`: ``x``, and ``W1``, ``b1``, ``W2``... for the weights
    and biases of the Linear layers of ``model`` (counted from 1)."""
    names = {"x": x}
    linears = [m for m in model if isinstance(m, torch.nn.Linear)]
    for i, layer in enumerate(linears, start=1):
        names[f"W{i}"], names[f"b{i}"] = layer.weight, layer.bias
    return names


def record_saved(fn: Callable, *inputs, names: Mapping[str, torch.Tensor] | None = None
                 ) -> SavedTensorLog:
    """Run ``fn(*inputs)`` inside a :class:`SavedTensorLog` and return the log."""
    with SavedTensorLog(names=names) as log:
        fn(*inputs)
    return log


def what_is_saved(cases: Mapping[str, Callable], *inputs, names=None) -> str:
    """One line per operation: what it saves for backward, and the bytes.

    ``cases`` maps a label (the code, e.g. ``"x.exp()"``) to a function of ``inputs``.
    """
    lines = []
    for label, fn in cases.items():
        log = record_saved(fn, *inputs, names=names)
        if not log.records:
            what = "nothing"
        else:
            what = ", ".join(f"{r.name or 'its ' + r.role}" for r in log.records)
        lines.append(f"{label:<18} saves {what:<18} {log.total_bytes:>4} bytes")
    return "\n".join(lines)


# --- memory against depth, and checkpointing ---------------------------------------------


@dataclass(frozen=True)
class SavedRow:
    """Saved bytes of one forward pass: all unique storages, and the part that is results of
    the forward pass (not the input or a weight, which exist anyway)."""

    depth: int
    total: int
    results: int

    @property
    def leaves(self) -> int:
        return self.total - self.results


def saved_by_depth(depths: Iterable[int], width: int, batch: int, *,
                   device: torch.device | str = "cpu") -> list[SavedRow]:
    """Saved bytes of ``mlp(depth, width)(x).sum()`` for each depth (x: batch x width)."""
    rows = []
    for depth in depths:
        model = mlp(depth, width, device=device)
        x = torch.randn(batch, width, device=device)
        with SavedTensorLog(names=mlp_names(model, x)) as log:
            model(x).sum()
        rows.append(SavedRow(depth, log.total_bytes, log.bytes_by(named=False)))
    return rows


def saved_table(rows: Sequence[SavedRow]) -> str:
    """The rows of :func:`saved_by_depth` as a text table (exact numbers)."""
    lines = ["depth   saved bytes   of which results   of which input and weights"]
    for r in rows:
        lines.append(f"{r.depth:>5} {r.total:>13} {r.results:>18} {r.leaves:>28}")
    return "\n".join(lines)


def plot_saved_by_depth(rows: Sequence[SavedRow]):
    """Saved kilobytes against depth: all of them, and the results of the forward pass."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.5, 3.4))
    depths = [r.depth for r in rows]
    ax.plot(depths, [r.total / 1024 for r in rows], "o-", label="all saved storages")
    ax.plot(depths, [r.results / 1024 for r in rows], "s-",
            label="results of the forward pass")
    ax.set_xlabel("depth (Linear + Tanh layers)")
    ax.set_ylabel("saved for backward (KiB)")
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig
