"""The grader's own computations for assignment 10, run by the judge.

Each function computes, in float64 and from the inputs alone, what a question's answer must
give and what its typical mistakes give, so that the judge never has to trust a model, a
gradient or a derivative that the student's kernel reports:

- question 1: :func:`per_sample_loop` (each sample's gradient by a loop with
  ``torch.autograd.grad``, of the MLPs written out from their parameters, 08's
  :func:`~autograd_course.grading.units.u08_training.tanh_mlp`), :func:`clipped_mean` (the
  DP-SGD step), :func:`clipping_mistakes` and :func:`fingerprint`;
- question 2: :func:`running_lse_derivatives`, the closed forms of the running log-sum-exp;
- question 3: :func:`gauss_newton_forms`, from a Jacobian and the second-order term;
- question 4: :func:`jacobian_plan_reference`.

Like everything in :mod:`autograd_course.grading`, this module is the grader's: the student's
kernel does not see it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import torch

from autograd_course.grading.units.u08_training import tanh_mlp

Grads = dict[str, torch.Tensor]


def per_sample_loop(params: Mapping[str, torch.Tensor], x: torch.Tensor, y: torch.Tensor,
                    layers: Sequence[str] = ("hidden", "out")) -> Grads:
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


def sample_norms(each: Mapping[str, torch.Tensor]) -> torch.Tensor:
    """The norm of each sample's gradient over all parameters together: shape (n,)."""
    return torch.stack([g.flatten(1).pow(2).sum(1) for g in each.values()]).sum(0).sqrt()


def _scaled_mean(each: Mapping[str, torch.Tensor], factor: torch.Tensor) -> Grads:
    """The mean over the samples of each sample's gradient times its factor (shape (n,))."""
    return {k: (g * factor.reshape(-1, *[1] * (g.dim() - 1))).mean(0) for k, g in each.items()}


def clipped_mean(each: Mapping[str, torch.Tensor], max_norm: float) -> Grads:
    """The DP-SGD step: each sample's gradient scaled by min(1, max_norm / its norm over all
    parameters), then the mean over the samples."""
    return _scaled_mean(each, (max_norm / sample_norms(each)).clamp(max=1.0))


def clipping_mistakes(each: Mapping[str, torch.Tensor], max_norm: float,
                      layers: Sequence[str]) -> dict[str, Grads]:
    """What the typical mistakes of question 1 give, by diagnosis, from the per-sample
    gradients ``each`` (float64)."""
    n = next(iter(each.values())).shape[0]
    norms = sample_norms(each)
    mean = {k: g.mean(0) for k, g in each.items()}
    mean_norm = sample_norms({k: g.unsqueeze(0) for k, g in mean.items()})[0]
    whole = torch.sqrt(sum(g.pow(2).sum() for g in each.values()))

    def per_group(groups: Sequence[Sequence[str]]) -> Grads:
        out = {}
        for group in groups:
            part = {k: each[k] for k in group}
            out.update(clipped_mean(part, max_norm))
        return out

    return {
        "no_clipping": mean,
        "clipped_mean": {k: g * min(1.0, max_norm / float(mean_norm)) for k, g in mean.items()},
        "per_parameter": per_group([[k] for k in each]),
        "per_layer": per_group([[f"{name}.weight", f"{name}.bias"] for name in layers]),
        "summed": {k: g * n for k, g in clipped_mean(each, max_norm).items()},
        "scaled_up": _scaled_mean(each, max_norm / norms),
        "one_norm": _scaled_mean(each, torch.full((n,), min(1.0, max_norm / float(whole)),
                                                  dtype=norms.dtype)),
        "squared_norm": _scaled_mean(each, (max_norm / norms**2).clamp(max=1.0)),
        "divided_by_n": clipped_mean({k: g / n for k, g in each.items()}, max_norm),
        "accumulated": clipped_mean({k: g.cumsum(0) for k, g in each.items()}, max_norm),
        "last_repeated": clipped_mean({k: g[-1:].expand_as(g) for k, g in each.items()},
                                      max_norm),
    }


def fingerprint(grads: Mapping[str, torch.Tensor]) -> tuple[float, float]:
    """Two numbers that tell dicts of gradients apart, both of the gradients' scale: the norm
    over all their entries, and their sum weighted by their places (1, 2, ... over the
    parameters in name order), divided by the norm of those weights."""
    flat = torch.cat([grads[k].detach().to(torch.float64).reshape(-1) for k in sorted(grads)])
    places = torch.arange(1, flat.numel() + 1, dtype=torch.float64)
    return float(flat.norm()), float((flat * places).sum() / places.norm())


def running_lse_derivatives(x: torch.Tensor, t: torch.Tensor, w: torch.Tensor
                            ) -> dict[str, torch.Tensor]:
    """For y_k = log sum_{j <= k} exp(x_j) (1-D x, float64): the Jacobian J, J t, J^T t,
    the diagonal of J times t, J t without its factor exp(-y) ("unscaled"), and the Hessian
    of w . y with respect to x."""
    x, t, w = (a.to(torch.float64) for a in (x, t, w))
    y = torch.logcumsumexp(x, 0)
    n = x.shape[0]
    lower = torch.tril(torch.ones(n, n, dtype=torch.float64))
    p = torch.exp(x[None, :] - y[:, None]) * lower  # p[k, j] = exp(x_j - y_k), j <= k
    hessian = torch.diag((w[:, None] * p).sum(0)) - torch.einsum("k,ki,kj->ij", w, p, p)
    return {"value": y, "jacobian": p, "jvp": p @ t, "transposed": p.T @ t,
            "diagonal": p.diagonal() * t, "unscaled": torch.cumsum(torch.exp(x) * t, 0),
            "hessian": hessian}


def gauss_newton_forms(jacobian: torch.Tensor, v: torch.Tensor,
                       second_order: torch.Tensor | None = None) -> dict[str, torch.Tensor]:
    """J^T J v and what the typical mistakes give, from the Jacobian (m x n, float64): J v,
    J^T v and J J^T v where the shapes allow, and with ``second_order`` (sum_i f_i times the
    Hessian of f_i, n x n) the Hessian of |f|^2 / 2 times v."""
    J = jacobian.to(torch.float64)
    forms = {"right": J.T @ (J @ v), "jv": J @ v}
    if J.shape[0] == J.shape[1]:
        forms["transposed"] = J.T @ v
        forms["j_jt"] = J @ (J.T @ v)
    if second_order is not None:
        forms["full_hessian"] = forms["right"] + second_order.to(torch.float64) @ v
    return forms


def jacobian_plan_reference(shapes: Sequence[Sequence[int]]) -> tuple[str, int]:
    """The cheaper of jacfwd (one jvp per entry of the input, the first shape) and jacrev
    (one vjp per entry of the output, the last shape), with its count; jacrev on a tie."""
    inputs = outputs = 1
    for size in shapes[0]:
        inputs *= int(size)
    for size in shapes[-1]:
        outputs *= int(size)
    return ("jacrev", outputs) if outputs <= inputs else ("jacfwd", inputs)
