"""Lesson 11's tools (``notebooks/11_backprop_by_hand.ipynb``): a backward written by hand,
checked against autograd; what each keeps for its backward; and two pictures.

- **checking**: :func:`autograd_gradients` runs a function under autograd with a given
  upstream gradient (``out.backward(G)``, lesson 02's vector-Jacobian product) and returns
  the gradient of each input; :func:`compare` prints, name by name, whether a gradient
  written by hand has its tensor's shape and how far it is from autograd's;
- **what is kept**: :func:`saved_table` runs each operation inside
  :class:`autograd_course.lab.cost.SavedTensorLog` and says what autograd saved for its
  backward, and how many *new* numbers (results of the forward pass, not the inputs or
  weights, which exist anyway); :func:`numbers` counts the entries of tensors;
  :func:`tensors_written` lists the operations that wrote a tensor of a given shape (each
  a pass over that many numbers);
- **the chain of the lesson's last section** as functions (the benchmark times them):
  :func:`two_layer_params`, :func:`two_layer_by_hand` (forward, what its backward keeps,
  backward, no autograd) and :func:`two_layer_by_autograd`;
- **pictures**: :func:`plot_matmul_shapes` (the shapes of a matrix product's backward) and
  :func:`plot_bias_gradient` (a bias's gradient as a sum over the batch).

Counts are exact and the same on every machine; times are measurements (a lesson cell that
prints them is tagged "measured").

>>> import torch
>>> X, W = torch.ones(2, 3), torch.ones(3, 4)
>>> G = torch.ones(2, 4)
>>> grads = autograd_gradients(lambda X, W: X @ W, G, X=X, W=W)
>>> print(compare({"X": G @ W.T, "W": X.T @ G}, grads))
dX  shape (2, 3)  max |by hand - autograd| 0.0e+00  allclose: True
dW  shape (3, 4)  max |by hand - autograd| 0.0e+00  allclose: True
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import torch
import torch.nn.functional as F
from torch.utils._python_dispatch import TorchDispatchMode

from autograd_course.lab.cost import SavedTensorLog

Tensors = Mapping[str, torch.Tensor]

# --- checking a backward written by hand ---------------------------------------------------


def autograd_gradients(fn: Callable, upstream: torch.Tensor | None = None,
                       **inputs: torch.Tensor) -> dict[str, torch.Tensor]:
    """The gradients autograd gives for ``fn(**inputs)`` with ``upstream`` as the gradient
    of its output: ``out.backward(upstream)`` (``upstream=None``: ``out`` is a scalar loss).

    Each floating-point input is copied into a fresh leaf that requires grad (the inputs
    themselves are left alone); integer inputs (indices, targets) are passed as they are and
    get no gradient. Returns ``{name: gradient}`` for the floating-point inputs.

    >>> import torch
    >>> autograd_gradients(lambda x, i: x[i].sum(), x=torch.zeros(3), i=torch.tensor([2, 2]))
    {'x': tensor([0., 0., 2.])}
    """
    leaves = {name: t.detach().clone().requires_grad_() if t.is_floating_point() else t
              for name, t in inputs.items()}
    out = fn(**leaves)
    out.backward(upstream)
    return {name: t.grad for name, t in leaves.items() if t.is_floating_point()}


def compare(mine: Tensors, reference: Tensors, **tolerances) -> str:
    """One line per name: the shape of the gradient written by hand (``mine[name]``) and
    whether it is the shape of autograd's (``reference[name]``, the shape of its tensor),
    the largest difference between the two and ``torch.allclose`` (``tolerances``: its
    ``rtol`` and ``atol``). The names are those of the tensors; a line shows ``d`` + name.

    >>> import torch
    >>> print(compare({"b": torch.ones(2, 3)}, {"b": torch.ones(3)}))
    db  shape (2, 3), autograd's (3,): not the shape of its tensor
    >>> print(compare({"b": torch.tensor([1.0, 2.0])}, {"b": torch.tensor([1.0, 2.5])}))
    db  shape (2,)  max |by hand - autograd| 5.0e-01  allclose: False
    """
    width = max(len(name) for name in reference) + 1
    lines = []
    for name, expected in reference.items():
        got, label = mine[name], f"d{name}".ljust(width)
        if got.shape != expected.shape:
            lines.append(f"{label}  shape {tuple(got.shape)}, autograd's "
                         f"{tuple(expected.shape)}: not the shape of its tensor")
            continue
        worst = (got - expected).abs().max().item() if got.numel() else 0.0
        close = torch.allclose(got, expected, **tolerances)
        lines.append(f"{label}  shape {tuple(got.shape)}  max |by hand - autograd| "
                     f"{worst:.1e}  allclose: {close}")
    return "\n".join(lines)


# --- what is kept for backward ---------------------------------------------------------------


def numbers(*tensors: torch.Tensor) -> int:
    """The entries of ``tensors``, summed: the numbers a backward keeps when it keeps them.

    >>> import torch
    >>> numbers(torch.ones(4, 3), torch.ones(4))
    16
    """
    return sum(t.numel() for t in tensors)


def _describe(record) -> str:
    what = record.name or ("its output" if record.role == "output" else "a result")
    dtype = "" if record.dtype == torch.get_default_dtype() else (
        " " + str(record.dtype).removeprefix("torch."))
    return f"{what} {record.shape}{dtype}"


def saved_log(fn: Callable[[], object], names: Tensors) -> SavedTensorLog:
    """Run ``fn()`` inside a :class:`~autograd_course.lab.cost.SavedTensorLog` that knows
    ``names``, and return the log (what autograd saved for the backward of ``fn()``)."""
    with SavedTensorLog(names=names) as log:
        fn()
    return log


def new_numbers(log: SavedTensorLog) -> int:
    """The numbers of the storages ``log`` saw saved that have no name: results of the
    forward pass, which only the backward keeps alive (inputs and weights exist anyway)."""
    kept = {r.storage: r for r in log.records if r.name is None}
    return sum(r.nbytes // r.dtype.itemsize for r in kept.values())


def saved_table(cases: Mapping[str, Callable[[], object]], names: Tensors) -> str:
    """One line per operation: the new numbers kept (:func:`new_numbers`), and what autograd
    saved for its backward (each storage once: a named tensor, ``its output`` or ``a
    result`` computed inside the operation, with its shape, and its dtype where it is not
    the default one).

    >>> import torch
    >>> x = torch.zeros(2, 3, requires_grad=True)
    >>> print(saved_table({"x.exp()": lambda: x.exp(), "x + 1": lambda: x + 1}, {"x": x}))
    operation  new numbers   saves for backward
    x.exp()              6   its output (2, 3)
    x + 1                0   nothing
    """
    rows = []
    for label, fn in cases.items():
        log = saved_log(fn, names)
        unique = {r.storage: r for r in log.records}.values()
        rows.append((label, ", ".join(_describe(r) for r in unique) or "nothing",
                     new_numbers(log)))
    first = max(len("operation"), *(len(label) for label, _, _ in rows)) + 2
    lines = [f"{'operation':<{first}}new numbers   saves for backward"]
    lines += [f"{label:<{first}}{count:>11}   {what}" for label, what, count in rows]
    return "\n".join(lines)


class _Writes(TorchDispatchMode):
    """Counts the operations that write a new tensor (or one in place) of a given shape."""

    def __init__(self, shape: tuple[int, ...]):
        super().__init__()
        self.shape, self.operations = tuple(shape), []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        outputs = out if isinstance(out, tuple | list) else (out,)
        for tensor, returned in zip(outputs, func._schema.returns, strict=False):
            alias = returned.alias_info  # a view (not written) or an in-place result (written)
            if (isinstance(tensor, torch.Tensor) and tuple(tensor.shape) == self.shape
                    and (alias is None or alias.is_write)):
                self.operations.append(func.__name__.split(".")[0])
        return out


def tensors_written(fn: Callable, *args, shape: tuple[int, ...]) -> list[str]:
    """Call ``fn(*args)`` once and list the operations that wrote a tensor of ``shape``
    (a new one, or one changed in place; views write nothing): each a pass over that many
    numbers. The operations are those PyTorch's dispatcher runs, autograd's backward
    kernels included.

    >>> import torch
    >>> y = torch.tanh(torch.ones(2, 3, requires_grad=True))
    >>> G = torch.ones(2, 3)
    >>> tensors_written(lambda: G * (1 - y.detach() * y.detach()), shape=(2, 3))
    ['mul', 'rsub', 'mul']
    >>> tensors_written(lambda: y.backward(G), shape=(2, 3))
    ['tanh_backward']
    """
    with _Writes(shape) as log:
        fn(*args)
    return log.operations


# --- the two-layer chain: linear, tanh, linear, cross-entropy ------------------------------


def two_layer_params(d_in: int, hidden: int, classes: int, *,
                     dtype: torch.dtype = torch.float32) -> dict[str, torch.Tensor]:
    """Random weights and zero biases for ``x @ W1 + b1 -> tanh -> @ W2 + b2``, as plain
    tensors (no ``requires_grad``); the weights are scaled by ``1 / sqrt(fan_in)``."""
    return {"W1": torch.randn(d_in, hidden, dtype=dtype) / d_in**0.5,
            "b1": torch.zeros(hidden, dtype=dtype),
            "W2": torch.randn(hidden, classes, dtype=dtype) / hidden**0.5,
            "b2": torch.zeros(classes, dtype=dtype)}


def two_layer_by_hand(params: Tensors, x: torch.Tensor, target: torch.Tensor):
    """The mean cross-entropy of ``tanh(x @ W1 + b1) @ W2 + b2`` against ``target``, and
    the gradients of the four parameters, by hand: no autograd records anything.

    Returns ``(loss, grads, kept)``: ``kept`` is what the backward reads besides the
    parameters' shapes: ``x``, ``W2`` and ``target`` (which exist anyway), ``h`` (the tanh
    output) and ``p`` (the probabilities), results kept only for the backward.

    >>> import torch
    >>> params = two_layer_params(3, 4, 2)
    >>> x, target = torch.randn(5, 3), torch.tensor([0, 1, 1, 0, 1])
    >>> loss, grads, kept = two_layer_by_hand(params, x, target)
    >>> loss_a, grads_a = two_layer_by_autograd(params, x, target)
    >>> all(torch.allclose(grads[k], grads_a[k], atol=1e-6) for k in params), sorted(kept)
    (True, ['W2', 'h', 'p', 'target', 'x'])
    """
    W1, b1, W2, b2 = params["W1"], params["b1"], params["W2"], params["b2"]
    h = torch.tanh(x @ W1 + b1)
    log_p = torch.log_softmax(h @ W2 + b2, dim=1)
    rows = torch.arange(len(target))
    loss = -log_p[rows, target].mean()
    kept = {"x": x, "W2": W2, "target": target, "h": h, "p": log_p.exp()}
    # backward, from the loss down, each line a formula of the lesson
    dz = kept["p"].clone()
    dz[rows, target] -= 1
    dz /= len(target)  # (p - onehot) / N
    dW2, db2 = h.T @ dz, dz.sum(0)  # X^T G, and a broadcast's sum
    da = (dz @ W2.T) * (1 - h * h)  # G W^T, then tanh' from its output
    dW1, db1 = x.T @ da, da.sum(0)
    return loss, {"W1": dW1, "b1": db1, "W2": dW2, "b2": db2}, kept


def two_layer_by_autograd(params: Tensors, x: torch.Tensor, target: torch.Tensor):
    """The same loss and gradients as :func:`two_layer_by_hand`, by autograd: ``(loss,
    grads)``. Each parameter is used through a leaf that requires grad (``detach()``: the
    same memory), so that ``params`` themselves are left as they were."""
    leaves = [params[k].detach().requires_grad_() for k in ("W1", "b1", "W2", "b2")]
    W1, b1, W2, b2 = leaves
    loss = F.cross_entropy(torch.tanh(x @ W1 + b1) @ W2 + b2, target)
    grads = torch.autograd.grad(loss, leaves)
    return loss.detach(), dict(zip(("W1", "b1", "W2", "b2"), grads, strict=True))


# --- pictures ---------------------------------------------------------------------------------


def _matrix(ax, left: float, shape: str, name: str, color: str, sizes: Mapping[str, int]
            ) -> float:
    """Draw a matrix of ``shape`` (two letters, such as ``"nm"``: rows, columns, whose sizes
    are ``sizes``) as a rectangle whose top edge is at y = 0, starting at ``left``; label it
    with its name and shape; return its right edge."""
    from matplotlib.patches import Rectangle

    rows, cols = sizes[shape[0]], sizes[shape[1]]
    ax.add_patch(Rectangle((left, -rows), cols, rows, facecolor=color, edgecolor="black",
                           alpha=0.8))
    ax.text(left + cols / 2, -rows / 2, name, ha="center", va="center", fontsize=11)
    ax.text(left + cols / 2, 0.35, f"{shape[0]}×{shape[1]} = {rows}×{cols}", ha="center",
            va="bottom", fontsize=9)
    return left + cols


def plot_matmul_shapes(n: int, k: int, m: int):
    """The backward of ``Y = X @ W`` (X: n×k, W: k×m, G = dY: n×m), drawn to scale: each
    matrix a rectangle of its rows and columns, both products on one scale. The gradient's
    shape (the shape of its tensor) leaves one way to multiply G with the other factor; the
    dimension m of G, summed over, is the one the two factors share."""
    import matplotlib.pyplot as plt

    colors = {"G": "tab:red", "X": "tab:blue", "W": "tab:green"}
    fig, ax = plt.subplots(figsize=(8.5, 2.4))
    sizes = {"n": n, "k": k, "m": m}
    equations = (("dX = G Wᵀ  (sums over m)", [("G", "nm"), ("Wᵀ", "mk"), ("dX", "nk")]),
                 ("dW = Xᵀ G  (sums over n)", [("Xᵀ", "kn"), ("G", "nm"), ("dW", "km")]))
    left = 0.0
    for title, matrices in equations:
        start = left
        for i, (name, shape) in enumerate(matrices):
            right = _matrix(ax, left, shape, name, colors[name.strip("dᵀ")], sizes)
            if i < 2:
                ax.text(right + 0.6, -1.5, "@" if i == 0 else "=", ha="center", va="center",
                        fontsize=13)
            left = right + 1.2
        ax.text((start + left - 1.2) / 2, 1.6, title, ha="center", va="bottom", fontsize=11)
        left += 2.0
    ax.set_xlim(-0.3, left - 3.0)
    ax.set_ylim(-max(n, k, m) - 0.3, 2.8)
    ax.set_aspect("equal")
    ax.axis("off")
    fig.tight_layout()
    return fig


def plot_bias_gradient(G: torch.Tensor):
    """``G`` (N×C, the gradient of ``X + b``'s output) above ``db = G.sum(0)``: the bias's
    gradient collects, for each column, what all N rows received from that bias entry."""
    import matplotlib.pyplot as plt

    g = G.detach().cpu()
    db = g.sum(0)
    rows, cols = g.shape
    limit = float(max(g.abs().max(), db.abs().max()))
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(0.75 * cols + 2.6, 0.45 * (rows + 1) + 1.2),
                                      gridspec_kw={"height_ratios": [rows, 1]})
    for ax, values, label in ((top, g, "G = dY"), (bottom, db[None], "db = G.sum(0)")):
        ax.imshow(values, cmap="coolwarm", vmin=-limit, vmax=limit, aspect="auto")
        for r in range(values.shape[0]):
            for c in range(cols):
                v = values[r, c].item()
                ax.text(c, r, f"{v:.2f}", ha="center", va="center", fontsize=8,
                        color="white" if abs(v) > 0.6 * limit else "black")
        ax.set_xticks([])
        ax.set_yticks([])
        ax.set_ylabel(label, rotation=0, ha="right", va="center", fontsize=10)
    top.set_title("each column of G, summed: one entry of db", fontsize=10)
    fig.tight_layout()
    return fig
