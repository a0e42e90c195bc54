"""The grader's own computations for assignment 11, run by the judge.

Each function computes, in float64 and from the inputs alone, what a question's answer must
give and what its typical mistakes give, so that the judge never trusts a gradient that the
student's kernel reports. The right values come from torch's autograd on forward passes
written with PyTorch's own layers (``layer_norm``, ``cross_entropy``, ``embedding``), with
the activations' true forms (:data:`ACTIVATIONS`): not from a backward written by hand, as
the reference solutions are. The mistakes are backward passes by hand with one step wrong.

- question 1: :func:`mlp_grads` (the network's gradients), :func:`mlp_mistakes`,
  :func:`fingerprint`;
- question 2: :func:`broadcast_grads`, :func:`broadcast_mistakes`;
- question 3: :func:`embedding_grad` (its mistakes are told apart by their structure, in the
  test cell: a repeated row holding one contribution, the padding row alone wrong...);
- question 4: :func:`saved_and_shapes`, the truth of the predictions, from a run of the chain
  with ``saved_tensors_hooks``.

>>> generator = torch.Generator().manual_seed(0)
>>> def draw(*shape, low, high):
...     return low + (high - low) * torch.rand(shape, generator=generator, dtype=torch.float64)
>>> params = random_params(3, 4, 3, draw=draw)
>>> x, y = draw(5, 3, low=-2.0, high=2.0), torch.tensor([0, 2, 1, 1, 0])
>>> true, slope = ACTIVATIONS["softsign"]
>>> right = mlp_grads(params, x, y, true)
>>> hand = mlp_hand(params, x, y, true, slope)
>>> all(torch.allclose(right[k], hand[k], rtol=1e-10, atol=1e-12) for k in NAMES)
True

Like everything in :mod:`autograd_course.grading`, this module is the grader's: the student's
kernel does not see it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import torch
import torch.nn.functional as F

from autograd_course.grading.units.u10_functional import fingerprint as _fingerprint

Grads = dict[str, torch.Tensor]
Activation = Callable[[torch.Tensor], torch.Tensor]

#: Layer norm's epsilon, as torch.nn.functional.layer_norm's default.
EPS = 1e-5
#: The parameters of question 1's network, in the order of the forward pass.
NAMES = ("W1", "b1", "W2", "b2", "gamma", "beta", "W3", "b3")

#: The activations of question 1, by name: (the true function, its derivative). The student
#: gets a forward whose autograd slope is 1 and the derivative; the grader uses these.
ACTIVATIONS: dict[str, tuple[Activation, Activation]] = {
    "softsign": (lambda z: z / (1 + z.abs()), lambda z: 1 / (1 + z.abs()) ** 2),
    "wave": (lambda z: torch.sin(z) + z / 2, lambda z: torch.cos(z) + 0.5),
    "softplus": (F.softplus, torch.sigmoid),
}


# --- question 1: the network's backward ------------------------------------------------------


def random_params(inputs: int, hidden: int, classes: int, *, draw) -> Grads:
    """Parameters of question 1's network (float64), drawn by ``draw(*shape, low, high)``:
    uniform in [-1, 1), gamma in [0.5, 1.5)."""
    shapes = {"W1": (hidden, inputs), "b1": (hidden,), "W2": (hidden, hidden), "b2": (hidden,),
              "gamma": (hidden,), "beta": (hidden,), "W3": (classes, hidden),
              "b3": (classes,)}
    params = {}
    for name, shape in shapes.items():
        low, high = (0.5, 1.5) if name == "gamma" else (-1.0, 1.0)
        params[name] = draw(*shape, low=low, high=high).to(torch.float64)
    return params


def mlp_loss(params: Mapping[str, torch.Tensor], x: torch.Tensor, y: torch.Tensor,
             act: Activation) -> torch.Tensor:
    """Question 1's loss, with PyTorch's layers: a linear layer, ``act``, a residual block,
    layer norm with gamma and beta, a linear layer to the logits, mean cross-entropy."""
    p = params
    z = x @ p["W1"].T + p["b1"]
    r = z + act(z) @ p["W2"].T + p["b2"]
    u = F.layer_norm(r, r.shape[-1:], p["gamma"], p["beta"], eps=EPS)
    return F.cross_entropy(u @ p["W3"].T + p["b3"], y)


def mlp_grads(params: Mapping[str, torch.Tensor], x: torch.Tensor, y: torch.Tensor,
              act: Activation) -> Grads:
    """The gradients of :func:`mlp_loss` by autograd, in float64, by parameter name."""
    p = {k: params[k].detach().to(torch.float64).requires_grad_(True) for k in NAMES}
    loss = mlp_loss(p, x.detach().to(torch.float64), y, act)
    return dict(zip(NAMES, torch.autograd.grad(loss, [p[k] for k in NAMES]), strict=True))


def mlp_hand(params: Mapping[str, torch.Tensor], x: torch.Tensor, y: torch.Tensor,
             act: Activation, slope: Activation, mistake: str = "") -> Grads:
    """The backward pass of question 1's network by hand, in float64, with one step done as
    the ``mistake`` of that name does it ("" for none)."""
    p = {k: v.detach().to(torch.float64) for k, v in params.items()}
    x = x.detach().to(torch.float64)
    n = x.shape[0]
    z = x @ p["W1"].T + p["b1"]
    h = act(z)
    r = z + h @ p["W2"].T + p["b2"]
    mu = r.mean(-1, keepdim=True)
    divisor = r.shape[-1] - 1 if mistake == "ln_unbiased" else r.shape[-1]
    sigma = ((r - mu) ** 2).sum(-1, keepdim=True).div(divisor).add(EPS).sqrt()
    normed = (r - mu) / sigma
    u = p["gamma"] * normed + p["beta"]
    logits = u @ p["W3"].T + p["b3"]
    probs = torch.softmax(logits, -1)
    onehot = F.one_hot(y, logits.shape[-1]).to(torch.float64)
    d_logits = (probs if mistake == "no_onehot" else probs - onehot)
    d_logits = d_logits if mistake == "no_mean" else d_logits / n
    g = {"W3": d_logits.T @ u, "b3": d_logits.sum(0)}
    d_u = d_logits @ p["W3"]
    g["gamma"] = (d_u * (r if mistake == "gamma_from_r" else normed)).sum(0)
    g["beta"] = d_u.sum(0)
    d_n = d_u if mistake == "gamma_missing" else d_u * p["gamma"]
    mean_term = d_n.mean(-1, keepdim=True)
    variance_term = normed * (d_n * normed).mean(-1, keepdim=True)
    if mistake == "ln_scale_only":
        d_r = d_n / sigma
    elif mistake == "ln_no_variance":
        d_r = (d_n - mean_term) / sigma
    elif mistake == "ln_no_mean":
        d_r = (d_n - variance_term) / sigma
    else:
        d_r = (d_n - mean_term - variance_term) / sigma
    g["W2"] = d_r.T @ h
    g["b2"] = d_r.sum(0)
    if mistake == "w2_transposed":
        g["W2"] = g["W2"].T
    d_h = d_r @ p["W2"]
    if mistake == "slope_one":
        d_branch = d_h
    elif mistake == "slope_of_output":
        d_branch = d_h * slope(h)
    else:
        d_branch = d_h * slope(z)
    d_z = d_branch if mistake == "no_residual" else d_r + d_branch
    g["W1"] = d_z.T @ x
    g["b1"] = d_z.sum(0)
    if mistake == "bias_mean":
        for k in ("b1", "b2", "b3", "beta"):
            g[k] = g[k] / n
    return {k: g[k] for k in NAMES}


#: The mistakes of question 1 that :func:`mlp_hand` makes, by diagnosis.
MLP_MISTAKES = ("no_mean", "no_onehot", "gamma_from_r", "gamma_missing", "ln_scale_only",
                "ln_no_variance", "ln_no_mean", "w2_transposed", "slope_one",
                "slope_of_output", "no_residual", "bias_mean", "ln_unbiased")
#: The mistakes of the forward pass among them: told apart by b3's gradient alone, which only
#: the forward pass sets ((softmax(logits) - onehot) / N, summed), whatever the backward does.
FORWARD_MISTAKES = ("ln_unbiased",)


def mlp_mistakes(params: Mapping[str, torch.Tensor], x: torch.Tensor, y: torch.Tensor,
                 act: Activation, slope: Activation,
                 other: tuple[Activation, Activation] | None = None) -> dict[str, Grads]:
    """What the typical mistakes of question 1 give, by diagnosis; with ``other`` (an
    activation and its derivative) also "fixed_act": the network's gradients with ``other``
    in place of ``act``, as an answer that ignores the activation it is given computes. A
    mistake of the forward pass (:data:`FORWARD_MISTAKES`: layer norm's variance divided by
    H - 1) gives b3's gradient alone."""
    found = {m: mlp_hand(params, x, y, act, slope, m) for m in MLP_MISTAKES}
    for m in FORWARD_MISTAKES:
        found[m] = {"b3": found[m]["b3"]}
    if other is not None:
        found["fixed_act"] = mlp_grads(params, x, y, other[0])
    return found


def fingerprint(grads: Mapping[str, torch.Tensor]) -> tuple[float, float]:
    """Two numbers that tell dicts of gradients apart (10's: the norm of all their entries,
    and their sum weighted by place in name order over the norm of the weights)."""
    return _fingerprint(grads)


# --- question 2: a scale and a bias that broadcast --------------------------------------------


def broadcast_grads(x: torch.Tensor, g: torch.Tensor, b: torch.Tensor, grad_y: torch.Tensor
                    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The gradients of x, g and b for y = x * g + b (broadcast) given grad_y, by autograd in
    float64, returned in the inputs' dtype."""
    leaves = [t.detach().to(torch.float64).requires_grad_(True) for t in (x, g, b)]
    y = leaves[0] * leaves[1] + leaves[2]
    grads = torch.autograd.grad(y, leaves, grad_y.detach().to(torch.float64))
    return tuple(d.to(t.dtype) for d, t in zip(grads, (x, g, b), strict=True))


def _reduced(t: torch.Tensor, shape: Sequence[int], how: str = "sum") -> torch.Tensor:
    """``t`` summed (or averaged) down to ``shape``: over its leading dims that ``shape``
    lacks, and where ``shape`` has size 1 and ``t`` does not."""
    lead = t.dim() - len(shape)
    reduce = getattr(torch, how)
    if lead:
        t = reduce(t, dim=tuple(range(lead)))
    dims = tuple(i for i, size in enumerate(shape) if size == 1 and t.shape[i] != 1)
    return reduce(t, dim=dims, keepdim=True) if dims else t


def broadcast_mistakes(x: torch.Tensor, g: torch.Tensor, b: torch.Tensor,
                       grad_y: torch.Tensor) -> dict[str, tuple[torch.Tensor, ...]]:
    """What question 2's typical mistakes give, by diagnosis: a mean over the broadcast dims
    in place of their sum, g's gradient without its factor x, x's without g."""
    d = grad_y.detach().to(torch.float64)
    xs, gs, bs = (t.detach().to(torch.float64) for t in (x, g, b))
    right = [_reduced(d * gs, x.shape), _reduced(d * xs, g.shape), _reduced(d, b.shape)]
    mean = [_reduced(d * gs, x.shape, "mean"), _reduced(d * xs, g.shape, "mean"),
            _reduced(d, b.shape, "mean")]
    found = {"mean": mean,
             "no_x": [right[0], _reduced(d, g.shape), right[2]],
             "no_g": [_reduced(d, x.shape), right[1], right[2]]}
    return {k: tuple(v.to(t.dtype) for v, t in zip(vs, (x, g, b), strict=True))
            for k, vs in found.items()}


# --- question 3: an embedding with repeated indices and padding -------------------------------


def embedding_grad(indices: torch.Tensor, weight_shape: Sequence[int], grad_out: torch.Tensor,
                   padding_idx: int | None) -> torch.Tensor:
    """The gradient of the weight of ``F.embedding(indices, weight, padding_idx)`` given the
    gradient of its output, by autograd in float64, returned in grad_out's dtype."""
    weight = torch.zeros(tuple(weight_shape), dtype=torch.float64, requires_grad=True)
    out = F.embedding(indices, weight, padding_idx=padding_idx)
    (grad,) = torch.autograd.grad(out, weight, grad_out.detach().to(torch.float64))
    return grad.to(grad_out.dtype)


# --- question 4: what a chain saves, and the shapes of gradients -----------------------------


def _same_tensor(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Whether two tensors are the same numbers in memory (the same storage, offset, shape
    and strides): what a pack hook received and a tensor of the chain."""
    return (a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()
            and a.storage_offset() == b.storage_offset() and a.shape == b.shape
            and a.stride() == b.stride())


def saved_and_shapes(x: torch.Tensor, W: torch.Tensor, b: torch.Tensor, t: torch.Tensor
                     ) -> tuple[dict[str, bool], dict[str, tuple[int, ...]]]:
    """Run question 4's chain on these inputs (W and b made leaves that require grad) under
    ``saved_tensors_hooks``: which named tensors autograd saved for backward, and the shapes
    of the gradients of Wt, s and b."""
    W = W.detach().clone().requires_grad_(True)
    b = b.detach().clone().requires_grad_(True)
    packed: list[torch.Tensor] = []

    def pack(tensor):
        packed.append(tensor)
        return tensor

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
        Wt = W.T
        z = x @ Wt + b
        h = torch.tanh(z)
        s = h.sum(dim=1, keepdim=True)
        q = h / s
        e = torch.exp(q)
        loss = (e * t).mean()
    named = {"x": x, "Wt": Wt, "z": z, "h": h, "s": s, "q": q, "e": e, "t": t}
    saved = {k: any(_same_tensor(p, v) for p in packed) for k, v in named.items()}
    grads = torch.autograd.grad(loss, [Wt, s, b])
    shapes = {k: tuple(d.shape) for k, d in zip(("Wt", "s", "b"), grads, strict=True)}
    return saved, shapes
