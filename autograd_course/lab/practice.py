"""Tools for lesson 12 (gradients in practice): non-differentiable points, NaN hunting, depth,
clipping and low precision.

The lesson (``notebooks/12_gradients_in_practice.ipynb``) writes the ideas out in its own cells;
this module holds what it repeats or what would hide them:

- **non-differentiable points**: :func:`gradient_at` (the value and the gradient autograd
  returns at given points) and :func:`gradient_table` for several functions at once;
- **NaN hunting**: :func:`first_nonfinite` runs a forward and backward pass with a hook on
  every node of the graph and names the first backward function that turned finite
  gradients into ``nan`` or ``inf`` (:class:`Origin`), with the line of the forward pass
  that made it (:func:`graph_nodes` walks the graph); :func:`nonfinite_grads` lists the
  parameters whose ``.grad`` is not finite;
- **depth**: :func:`deep_net` builds a deep stack of blocks (a ``Linear``, optionally a
  ``LayerNorm`` before it and a residual connection around it), :func:`gradient_norms`
  measures the gradient reaching each block, each block's weight gradient and the spread of
  each block's output, and :func:`plot_gradient_norms` draws them;
- **clipping**: :func:`flat_gradient`, :func:`gradient_norm`, and :func:`angle` (in degrees)
  between two gradients;
- **precision**: :func:`precision_table` (the ranges of float32, float16 and bfloat16),
  :func:`smallest_subnormal`, :func:`fate_in_float16` (what a cast to float16 does to each
  number), :func:`autocast_gradients` (a model's gradients under autocast, the loss scaled
  by hand), :func:`compare_to_reference`, :func:`plot_underflow`, :func:`saved_bytes_by_dtype`
  and :func:`cpu_features`.

>>> import torch
>>> gradient_at(torch.relu, [-1.0, 0.0, 2.0])
([0.0, 0.0, 2.0], [0.0, 0.0, 1.0])
>>> x = torch.tensor([0.0, 2.0], requires_grad=True)
>>> first_nonfinite(lambda: torch.where(x != 0, 1 / x, 0.0).sum())
Origin(node='ReciprocalBackward0', kind='nan', input=0, line='...')
>>> fate_in_float16(torch.tensor([2.0 ** -30, 2.0 ** -20, 1.0, 2.0 ** 17]))
{'zero': 1, 'subnormal': 1, 'normal': 1, 'overflow': 1}
"""

from __future__ import annotations

import functools
import math
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import torch

# --- non-differentiable points ---------------------------------------------------------------


def gradient_at(fn: Callable[[torch.Tensor], torch.Tensor],
                points: Sequence[float]) -> tuple[list[float], list[float]]:
    """The values ``fn(x)`` and the gradient autograd returns, at each of ``points``.

    ``x`` is a float32 tensor of the points; the gradient is that of ``fn(x).sum()``, so for
    an elementwise ``fn`` entry ``i`` is the derivative at ``points[i]``.

    >>> import torch
    >>> gradient_at(torch.abs, [-2.0, 0.0, 3.0])
    ([2.0, 0.0, 3.0], [-1.0, 0.0, 1.0])
    """
    x = torch.tensor(points, dtype=torch.float32, requires_grad=True)
    y = fn(x)
    y.sum().backward()
    return y.detach().flatten().tolist(), x.grad.tolist()


def gradient_table(cases: Mapping[str, Callable[[torch.Tensor], torch.Tensor]],
                   points: Sequence[float]) -> str:
    """One line per function of ``cases`` (label -> function): the gradient autograd returns
    at each of ``points`` (:func:`gradient_at`).

    >>> import torch
    >>> print(gradient_table({"relu(x)": torch.relu}, [-1.0, 0.0, 1.0]))
    gradient at x =        -1         0         1
    relu(x)                 0         0         1
    """
    width = max(len(label) for label in cases)
    width = max(width, 15)
    header = "gradient at x =".ljust(width) + "".join(f"{p:>10.4g}" for p in points)
    lines = [header]
    for label, fn in cases.items():
        _, grads = gradient_at(fn, points)
        lines.append(label.ljust(width) + "".join(f"{g:>10.4g}" for g in grads))
    return "\n".join(lines)


# --- NaN hunting --------------------------------------------------------------------------


@dataclass(frozen=True)
class Origin:
    """Where a non-finite gradient first appeared in a backward pass.

    ``node`` is the backward function (``DivBackward0``) that received finite gradients and
    returned ``nan`` or ``inf`` (``kind``: ``"nan"`` where it returned a nan, else ``"inf"``)
    for its input number ``input``; ``line`` is the line of code of the forward pass that
    made the node (``None`` where it is not known).
    """

    node: str
    kind: str
    input: int
    line: str | None

    def __str__(self) -> str:
        made_by = f", made by: {self.line}" if self.line else ""
        return f"{self.node} returned {self.kind} for its input {self.input}{made_by}"


_TORCH_DIR = str(Path(torch.__file__).parent)


def _forward_line(node) -> str | None:
    """The last line of the forward traceback that anomaly mode recorded for ``node`` that is
    not inside PyTorch's own files: the line of the caller's code that made the node."""
    frames = node.metadata.get("traceback_") if hasattr(node, "metadata") else None
    for frame in reversed(frames or []):
        where, _, code = frame.strip().partition("\n")
        if _TORCH_DIR not in where and code.strip():
            return code.strip()
    return None


def _nonfinite_kind(tensors) -> tuple[str, int] | None:
    """(``"nan"`` or ``"inf"``, position) of the first tensor of ``tensors`` that is not
    finite, ``nan`` taking precedence; ``None`` if all are finite (``None`` entries count as
    finite)."""
    found = None
    for position, t in enumerate(tensors):
        if t is None or bool(torch.isfinite(t).all()):
            continue
        if bool(torch.isnan(t).any()):
            return "nan", position
        found = found or ("inf", position)
    return found


def graph_nodes(root) -> list:
    """Every node of the graph that ends in ``root`` (a ``grad_fn``), each once, found through
    ``next_functions``.

    >>> import torch
    >>> x = torch.ones(2, requires_grad=True)
    >>> sorted(node.name() for node in graph_nodes((x * 2).sum().grad_fn))
    ['MulBackward0', 'SumBackward0', 'torch::autograd::AccumulateGrad']
    """
    seen, stack, nodes = set(), [root], []
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        nodes.append(node)
        stack.extend(child for child, _ in node.next_functions)
    return nodes


def nonfinite_origins(compute_loss: Callable[[], torch.Tensor]) -> list[Origin]:
    """Every node of a backward pass that turned finite gradients into non-finite ones, in
    the order the backward pass ran them.

    ``compute_loss()`` runs the forward pass and returns a scalar loss. It runs in anomaly
    mode without its nan check (``detect_anomaly(check_nan=False)``, its warning silenced),
    which only records where each node was made. Then a hook on every node of the graph
    (``node.register_hook``) compares the gradients a node receives (``grad_outputs``) with
    those it returns (``grad_inputs``) while ``loss.backward()`` runs; the hooks are removed
    afterwards. Unlike anomaly mode's check, it also reports ``inf``.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "Anomaly Detection has been enabled..."
        with torch.autograd.detect_anomaly(check_nan=False):
            loss = compute_loss()
    found: list[Origin] = []

    def check(node, grad_inputs, grad_outputs):
        if _nonfinite_kind(grad_outputs) is not None:
            return  # received a non-finite gradient: it only passes it on
        bad = _nonfinite_kind(grad_inputs)
        if bad is not None:
            found.append(Origin(node.name(), bad[0], bad[1], _forward_line(node)))

    nodes = graph_nodes(loss.grad_fn)
    handles = [node.register_hook(functools.partial(check, node)) for node in nodes]
    try:
        loss.backward()
    finally:
        for handle in handles:
            handle.remove()
    return found


def first_nonfinite(compute_loss: Callable[[], torch.Tensor]) -> Origin | None:
    """The first :class:`Origin` of :func:`nonfinite_origins`, or ``None`` if every gradient
    of the backward pass was finite.

    >>> import torch
    >>> x = torch.tensor([1e-30, 1.0], requires_grad=True)
    >>> print(first_nonfinite(lambda: (1 / x).sum()))
    ReciprocalBackward0 returned inf for its input 0, made by: ...
    >>> first_nonfinite(lambda: (x * 2).sum()) is None
    True
    """
    origins = nonfinite_origins(compute_loss)
    return origins[0] if origins else None


def nonfinite_grads(module: torch.nn.Module) -> dict[str, str]:
    """The parameters of ``module`` whose ``.grad`` is not finite: name -> how many entries
    are ``nan`` and how many infinite.

    >>> import torch
    >>> layer = torch.nn.Linear(2, 1)
    >>> layer.weight.grad = torch.tensor([[float("nan"), 1.0]])
    >>> layer.bias.grad = torch.tensor([0.5])
    >>> nonfinite_grads(layer)
    {'weight': '1 nan, 0 inf of 2'}
    """
    report = {}
    for name, p in module.named_parameters():
        if p.grad is None or bool(torch.isfinite(p.grad).all()):
            continue
        nans = int(torch.isnan(p.grad).sum())
        infs = int(torch.isinf(p.grad).sum())
        report[name] = f"{nans} nan, {infs} inf of {p.grad.numel()}"
    return report


# --- depth: vanishing and exploding gradients ------------------------------------------------


class Block(torch.nn.Module):
    """``activation(Linear(x))``, with a ``LayerNorm`` before the ``Linear`` if ``norm``, and
    ``x + ...`` around it all if ``residual`` (a pre-norm residual block when both)."""

    def __init__(self, width: int, activation: type[torch.nn.Module], *, residual: bool,
                 norm: bool):
        super().__init__()
        self.norm = torch.nn.LayerNorm(width) if norm else None
        self.linear = torch.nn.Linear(width, width)
        self.activation = activation()
        self.residual = residual

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.norm(x) if self.norm is not None else x
        h = self.activation(self.linear(h))
        return x + h if self.residual else h


def deep_net(depth: int, width: int, activation: type[torch.nn.Module], *,
             std: float | None = None, residual: bool = False, norm: bool = False,
             seed: int = 0) -> torch.nn.Sequential:
    """``depth`` blocks (:class:`Block`) of ``width`` units, made after ``torch.manual_seed``.

    ``std=None`` keeps PyTorch's default initialisation of ``Linear`` (weights uniform in
    ``±1/sqrt(width)``, so of standard deviation ``1/sqrt(3 width)``, and biases likewise);
    a number draws the weights from a normal distribution of standard deviation
    ``std / sqrt(width)`` and sets the biases to 0.

    >>> import torch
    >>> net = deep_net(3, 8, torch.nn.Tanh, std=1.0)
    >>> len(net), net(torch.ones(2, 8)).shape
    (3, torch.Size([2, 8]))
    """
    torch.manual_seed(seed)
    blocks = [Block(width, activation, residual=residual, norm=norm) for _ in range(depth)]
    if std is not None:
        for block in blocks:
            torch.nn.init.normal_(block.linear.weight, 0.0, std / math.sqrt(width))
            torch.nn.init.zeros_(block.linear.bias)
    return torch.nn.Sequential(*blocks)


@dataclass(frozen=True)
class Norms:
    """Per block, from the input side (block 1) to the output side: ``signal``, the norm of
    the gradient of the loss with respect to the block's output; ``weight``, the norm of its
    ``Linear`` layer's weight gradient; ``activation``, the standard deviation of the block's
    output in the forward pass (all its entries, over the batch)."""

    signal: list[float]
    weight: list[float]
    activation: list[float]


def gradient_norms(net: torch.nn.Sequential, x: torch.Tensor, target: torch.Tensor) -> Norms:
    """One backward pass of ``mse_loss(net(x), target)``, and the :class:`Norms` it gives.

    The gradient with respect to each block's output is read with a tensor hook; the
    network's ``.grad`` are cleared before and after.

    >>> import torch
    >>> net = deep_net(2, 4, torch.nn.Tanh, std=1.0)
    >>> norms = gradient_norms(net, torch.ones(3, 4), torch.zeros(3, 4))
    >>> len(norms.signal), len(norms.weight), len(norms.activation)
    (2, 2, 2)
    >>> net[0].linear.weight.grad is None
    True
    """
    net.zero_grad(set_to_none=True)
    signal: list[float] = [0.0] * len(net)
    activation: list[float] = []
    h = x
    for i, block in enumerate(net):
        h = block(h)
        activation.append(h.detach().std().item())
        h.register_hook(lambda grad, i=i: signal.__setitem__(i, grad.norm().item()))
    torch.nn.functional.mse_loss(h, target).backward()
    weight = [block.linear.weight.grad.norm().item() for block in net]
    net.zero_grad(set_to_none=True)
    return Norms(signal, weight, activation)


def plot_gradient_norms(panels: Mapping[str, Mapping[str, Sequence[float]]], *,
                        ylabel: str = "‖∂L/∂ output of block‖"):
    """One panel per entry of ``panels`` (title -> {label: one norm per block}), the norms
    against the block's number on a log scale (block 1 is next to the input)."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(panels), figsize=(4.6 * len(panels), 3.4), squeeze=False)
    for ax, (title, curves) in zip(axes[0], panels.items(), strict=True):
        for label, values in curves.items():
            finite = [v if math.isfinite(v) and v > 0 else float("nan") for v in values]
            ax.plot(range(1, len(values) + 1), finite, marker=".", label=label)
        ax.set_yscale("log")
        ax.set_xlabel("block (1 = next to the input)")
        ax.set_title(title, fontsize=10)
        ax.legend(fontsize=7)
    axes[0][0].set_ylabel(ylabel)
    fig.tight_layout()
    return fig


# --- clipping --------------------------------------------------------------------------------


def flat_gradient(parameters: Iterable[torch.Tensor]) -> torch.Tensor:
    """The ``.grad`` of all ``parameters`` as one vector (a copy), in their order."""
    return torch.cat([p.grad.detach().flatten().clone() for p in parameters])


def gradient_norm(parameters: Iterable[torch.Tensor]) -> float:
    """The 2-norm of the ``.grad`` of all ``parameters`` together, as one vector: what
    ``clip_grad_norm_`` returns, up to rounding (it takes the 2-norm of the per-tensor
    norms, which is the same number).

    >>> import torch
    >>> p = torch.nn.Parameter(torch.zeros(2))
    >>> p.grad = torch.tensor([3.0, 4.0])
    >>> gradient_norm([p])
    5.0
    """
    return flat_gradient(parameters).norm().item()


def angle(a: torch.Tensor, b: torch.Tensor) -> float:
    """The angle between two vectors, in degrees, computed in float64.

    >>> import torch
    >>> round(angle(torch.tensor([1.0, 0.0]), torch.tensor([1.0, 1.0])), 6)
    45.0
    >>> angle(torch.tensor([3.0, 4.0]), torch.tensor([0.75, 1.0]))
    0.0
    """
    a, b = a.double().flatten(), b.double().flatten()
    a, b = a / a.norm(), b / b.norm()
    # 2 atan2(|a - b|, |a + b|): accurate near 0 and 180 degrees, where acos of the cosine
    # is not
    return math.degrees(2 * math.atan2((a - b).norm().item(), (a + b).norm().item()))


# --- precision -------------------------------------------------------------------------------


def smallest_subnormal(dtype: torch.dtype) -> float:
    """The smallest positive number of a floating dtype: the smallest normal number times
    the machine epsilon (``2**-24`` for float16).

    >>> smallest_subnormal(torch.float16) == 2.0 ** -24
    True
    """
    info = torch.finfo(dtype)
    return info.smallest_normal * info.eps


def precision_table(dtypes: Sequence[torch.dtype] = (torch.float32, torch.float16,
                                                     torch.bfloat16)) -> str:
    """One line per dtype: its largest number, smallest normal and smallest subnormal
    number, and ``eps`` (the gap between 1 and the next number), from ``torch.finfo``.

    >>> print(precision_table([torch.float16]))
    dtype        largest   smallest normal   smallest subnormal   eps (gap after 1)
    float16      6.6e+04           6.1e-05              6.0e-08             0.00098
    """
    lines = [f"{'dtype':<10} {'largest':>9} {'smallest normal':>17} "
             f"{'smallest subnormal':>20} {'eps (gap after 1)':>19}"]
    for dtype in dtypes:
        info = torch.finfo(dtype)
        name = str(dtype).removeprefix("torch.")
        lines.append(f"{name:<10} {info.max:>9.1e} {info.smallest_normal:>17.1e} "
                     f"{smallest_subnormal(dtype):>20.1e} {info.eps:>19.2g}")
    return "\n".join(lines)


def fate_in_float16(values: torch.Tensor) -> dict[str, int]:
    """What a cast to float16 does to each number of ``values``, counted: ``zero`` (a non-zero
    number that became 0), ``subnormal`` (kept with fewer significant bits), ``normal`` (kept
    to float16's full precision) and ``overflow`` (became ``inf``). Zeros of ``values``
    count nowhere.

    >>> import torch
    >>> fate_in_float16(torch.tensor([0.0, 2.0 ** -26, 2.0 ** -20, 2.0 ** -10, 7e4]))
    {'zero': 1, 'subnormal': 1, 'normal': 1, 'overflow': 1}
    """
    values = values.detach().float().flatten()
    values = values[values != 0]
    cast = values.half().float().abs()
    tiny = torch.finfo(torch.float16).smallest_normal
    return {
        "zero": int((cast == 0).sum()),
        "subnormal": int(((cast > 0) & (cast < tiny)).sum()),
        "normal": int(((cast >= tiny) & torch.isfinite(cast)).sum()),
        "overflow": int(torch.isinf(cast).sum()),
    }


def autocast_gradients(model: torch.nn.Module, loss_fn: Callable[[torch.Tensor], torch.Tensor],
                       x: torch.Tensor, *, dtype: torch.dtype | None = None,
                       scale: float = 1.0) -> torch.Tensor:
    """The gradient of ``loss_fn(model(x))`` over all parameters, as one float32 vector.

    With a ``dtype``, the forward pass runs under ``torch.autocast("cpu", dtype)`` and the
    backward pass follows it; the loss is multiplied by ``scale`` before ``backward()`` and
    the gradients divided by ``scale`` afterwards, in float32 (loss scaling by hand). The
    model's ``.grad`` are cleared before and after.

    >>> import torch
    >>> layer = torch.nn.Linear(2, 1)
    >>> g = autocast_gradients(layer, lambda out: out.sum(), torch.ones(4, 2),
    ...                        dtype=torch.bfloat16, scale=8.0)
    >>> g.dtype, g.tolist()
    (torch.float32, [4.0, 4.0, 4.0])
    """
    model.zero_grad(set_to_none=True)
    if dtype is None:
        loss = loss_fn(model(x))
    else:
        with torch.autocast("cpu", dtype=dtype):
            loss = loss_fn(model(x))
    (loss * scale).backward()
    grads = torch.cat([p.grad.flatten() / scale for p in model.parameters()])
    model.zero_grad(set_to_none=True)
    return grads


@dataclass(frozen=True)
class Comparison:
    """Low-precision gradients against float32 ones: ``zeros`` (entries that are 0 but not
    in the reference), ``nonfinite`` (``inf`` or ``nan``), and ``median_error`` (the median
    relative error over the entries that are finite here and non-zero in the reference,
    those that became 0 included, at 1; the lower median for an even count)."""

    zeros: int
    nonfinite: int
    median_error: float


def compare_to_reference(low: torch.Tensor, reference: torch.Tensor) -> Comparison:
    """:class:`Comparison` of gradient vector ``low`` with ``reference``.

    >>> import torch
    >>> low = torch.tensor([0.0, 1.5, 2.0, float("inf")])
    >>> compare_to_reference(low, torch.tensor([1e-9, 1.0, 2.0, 2.0]))
    Comparison(zeros=1, nonfinite=1, median_error=0.5)
    """
    zeros = int(((low == 0) & (reference != 0)).sum())
    nonfinite = int((~torch.isfinite(low)).sum())
    kept = torch.isfinite(low) & (reference != 0)
    errors = ((low - reference).abs() / reference.abs())[kept]
    median = errors.median().item() if errors.numel() else float("nan")
    return Comparison(zeros, nonfinite, median)


def plot_underflow(reference: torch.Tensor, cases: Mapping[str, torch.Tensor]):
    """Histograms of the magnitudes of the float32 gradient ``reference`` (one bin per power
    of 2), one panel per entry of ``cases`` (title -> the same gradient computed in low
    precision), each bin split by what became of its entries there: 0, kept with a
    relative error above 1%, kept. Dashed lines mark float16's smallest subnormal and
    smallest normal number."""
    import matplotlib.pyplot as plt
    import numpy as np

    ref = reference.detach().double()
    nonzero = ref != 0
    exponent = torch.floor(torch.log2(ref[nonzero].abs())).numpy()
    bins = np.arange(exponent.min(), exponent.max() + 2)
    fig, axes = plt.subplots(1, len(cases), figsize=(4.6 * len(cases), 3.3), squeeze=False,
                             sharey=True)
    for ax, (title, low) in zip(axes[0], cases.items(), strict=True):
        low = low.detach().double()[nonzero]
        error = (low - ref[nonzero]).abs() / ref[nonzero].abs()
        fates = {"became 0": (low == 0).numpy(),
                 "kept, error > 1%": ((low != 0) & (error > 0.01)).numpy(),
                 "kept": ((low != 0) & (error <= 0.01)).numpy()}
        ax.hist([exponent[mask] for mask in fates.values()], bins=bins, stacked=True,
                label=list(fates), color=["tab:red", "tab:orange", "tab:green"])
        for value, name in ((smallest_subnormal(torch.float16), "smallest subnormal"),
                            (torch.finfo(torch.float16).smallest_normal, "smallest normal")):
            ax.axvline(math.log2(value), color="black", linestyle="--", linewidth=1)
            ax.text(math.log2(value) + 0.3, ax.get_ylim()[1] * 0.95, name, rotation=90,
                    va="top", fontsize=7)
        ax.set_xlabel("log₂ |gradient| (float32)")
        ax.set_title(title, fontsize=10)
    axes[0][0].set_ylabel("entries")
    axes[0][-1].legend(fontsize=8, loc="upper left")
    fig.tight_layout()
    return fig


def saved_bytes_by_dtype(fn: Callable[..., object], *args,
                         exclude: Iterable[torch.Tensor] = ()) -> dict[str, int]:
    """Run ``fn(*args)`` and count the bytes of the tensors autograd saves for backward, per
    dtype, each storage once (``torch.autograd.graph.saved_tensors_hooks``); storages of
    ``exclude`` (tensors that exist anyway: inputs, parameters) are left out.

    >>> import torch
    >>> x, w = torch.ones(2, 3, requires_grad=True), torch.ones(3, 4, requires_grad=True)
    >>> saved_bytes_by_dtype(lambda: (x @ w).sum())
    {'float32': 72}
    >>> saved_bytes_by_dtype(lambda: (x @ w).sum(), exclude=[w])
    {'float32': 24}
    """
    storages: dict[int, tuple[str, int]] = {}
    kept: list[torch.Tensor] = []
    left_out = {t.untyped_storage().data_ptr() for t in exclude}

    def pack(t: torch.Tensor) -> torch.Tensor:
        kept.append(t)  # keep it alive while counting, so that no storage is reused
        storage = t.untyped_storage()
        if storage.data_ptr() not in left_out:
            storages[storage.data_ptr()] = (str(t.dtype).removeprefix("torch."),
                                            storage.nbytes())
        return t.detach()

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        fn(*args)
    totals: dict[str, int] = {}
    for dtype, nbytes in storages.values():
        totals[dtype] = totals.get(dtype, 0) + nbytes
    return dict(sorted(totals.items()))


def cpu_features() -> str:
    """Which low-precision instructions this CPU has, as PyTorch detects them: AVX-512 BF16
    (bfloat16 dot products) and AMX (matrix tiles for bfloat16 and, on newer CPUs, float16),
    each 1 (yes) or 0 (no), or ``?`` where this build of PyTorch cannot say. The answers
    come from private helpers of ``torch.cpu``. They are printed as numbers so that a
    lesson's comparison of outputs, which masks the numbers of measured cells, does not
    depend on the machine.

    >>> cpu_features().startswith("AVX-512 BF16: ")
    True
    """

    def ask(name: str) -> str:
        helper = getattr(torch.cpu, name, None)
        return "?" if helper is None else str(int(bool(helper())))

    return (f"AVX-512 BF16: {ask('_is_avx512_bf16_supported')}, "
            f"AMX tiles: {ask('_is_amx_tile_supported')}, "
            f"AMX float16: {ask('_is_amx_fp16_supported')} (1: yes, 0: no)")
