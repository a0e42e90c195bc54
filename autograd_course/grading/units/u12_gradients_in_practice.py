"""The grader's own computations for assignment 12, run by the judge.

Each function computes, from the inputs alone, what a question's answer must give and what
its typical mistakes give, written independently of the reference solutions of ``source/``
(a closed form where they use autograd, exact decimal arithmetic where they use float64, a
loop of plain rules where they use ``GradScaler``), so that the judge never trusts a number
the student's kernel reports:

- question 1: :func:`penalised_gradient` (the exact gradient of the classifier's loss, in
  float64 from its closed form), :func:`penalised_mistakes`, :func:`saturated_row` (a row
  whose logits differ by a given gap) and :func:`underflows` (which probabilities float32
  rounds to 0);
- question 2: :func:`bernoulli_reference`, B(x) = x / (exp(x) - 1) and B'(x) in 60-digit
  decimal arithmetic;
- question 3: :func:`scaled_sgd`, the loss-scaled, clipped SGD of the question's rules in
  float64, with the typical mistakes as options (:data:`SCALING_MISTAKES`);
- question 4: :func:`float16_kind`, what float16 makes of a number, found by converting it.

>>> bernoulli_reference(torch.tensor([0.0, -1000.0], dtype=torch.float64))
(tensor([   1., 1000.], dtype=torch.float64), tensor([-0.5000, -1.0000], dtype=torch.float64))
>>> [float16_kind(g) for g in (1e-9, 1e-6, 1.0, 70000.0)]
['zero', 'subnormal', 'normal', 'overflow']

Like everything in :mod:`autograd_course.grading`, this module is the grader's: the student's
kernel does not see it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal, localcontext

import torch

from autograd_course.grading.units.u10_functional import fingerprint

__all__ = ["FLOAT32_MAX", "SCALING_MISTAKES", "ScaledRun", "bernoulli_reference",
           "fingerprint", "float16_kind", "mse_gradient", "penalised_gradient",
           "penalised_mistakes", "saturated_row", "scaled_sgd", "underflows"]

Params = dict[str, torch.Tensor]

# --- question 1: the confidence-penalised classifier ------------------------------------------


def _log_probabilities(params: Mapping[str, torch.Tensor], x: torch.Tensor) -> torch.Tensor:
    """log softmax of the logits x W^T + b, in float64, as z - max z - log sum exp(z - max z)
    (never a log of a probability)."""
    z = x.to(torch.float64) @ params["weight"].to(torch.float64).T + params["bias"].to(
        torch.float64)
    shifted = z - z.max(dim=1, keepdim=True).values
    return shifted - torch.log(torch.exp(shifted).sum(dim=1, keepdim=True))


def penalised_gradient(params: Mapping[str, torch.Tensor], x: torch.Tensor, y: torch.Tensor,
                       beta: float, *, ce_rows: torch.Tensor | None = None,
                       rows: torch.Tensor | None = None, mean_over: int | None = None,
                       entropy_sign: float = -1.0) -> Params:
    """The gradient, in float64, of mean cross-entropy - beta * mean entropy for the linear
    classifier z = x W^T + b, from its closed form: with p = softmax(z) and H = -sum p log p,
    dL/dz = (p - onehot(y)) / n + beta * p * (log p + H) / n, dW = (dL/dz)^T x, db its sum
    over the rows.

    The options give the mistakes: ``ce_rows`` (bool per row) keeps the cross-entropy's part
    only on those rows, ``rows`` keeps those rows only, ``mean_over`` divides by another count,
    ``entropy_sign=+1.0`` adds the entropy instead of subtracting it.
    """
    log_p = _log_probabilities(params, x)
    p = torch.exp(log_p)
    n = x.shape[0]
    entropy = -(p * log_p).sum(dim=1, keepdim=True)
    onehot = torch.zeros_like(p)
    onehot[torch.arange(n), y] = 1.0
    ce_part = p - onehot
    if ce_rows is not None:
        ce_part = ce_part * ce_rows.to(torch.float64)[:, None]
    dz = ce_part - entropy_sign * beta * p * (log_p + entropy)
    if rows is not None:
        dz = dz * rows.to(torch.float64)[:, None]
    dz = dz / (mean_over or n)
    return {"weight": dz.T @ x.to(torch.float64), "bias": dz.sum(dim=0)}


def underflows(params: Mapping[str, torch.Tensor], x: torch.Tensor, y: torch.Tensor
               ) -> tuple[torch.Tensor, torch.Tensor]:
    """Per row, in float32 as the student's step computes: whether some probability of
    softmax(x W^T + b) is 0, and whether the target's is."""
    with torch.no_grad():
        p = torch.softmax(x.float() @ params["weight"].float().T + params["bias"].float(), 1)
    return (p == 0).any(dim=1), p[torch.arange(len(y)), y] == 0


def penalised_mistakes(params: Mapping[str, torch.Tensor], x: torch.Tensor, y: torch.Tensor,
                       beta: float) -> dict[str, Params]:
    """The gradients the typical mistakes of question 1 step with, by diagnosis."""
    saturated, target_zero = underflows(params, x, y)
    n = x.shape[0]
    right = penalised_gradient(params, x, y, beta)
    return {
        "no_entropy": penalised_gradient(params, x, y, 0.0),
        "entropy_sign": penalised_gradient(params, x, y, beta, entropy_sign=1.0),
        "lost_ce": penalised_gradient(params, x, y, beta, ce_rows=~target_zero),
        "dropped_rows": penalised_gradient(params, x, y, beta, rows=~saturated),
        "dropped_rows_mean": penalised_gradient(params, x, y, beta, rows=~saturated,
                                                mean_over=max(1, int((~saturated).sum()))),
        "summed": {k: g * n for k, g in right.items()},
        "ascent": {k: -g for k, g in right.items()},
    }


def saturated_row(weight: torch.Tensor, bias: torch.Tensor, direction: torch.Tensor,
                  gap: float, *, live: int = 1, offset: float = 0.0) -> torch.Tensor | None:
    """A row x (float32) along ``direction`` whose ``live`` largest logits (1 or 2) lead all
    the others by about ``gap`` (at least ``gap - 3``), so that the others' probabilities are
    0 in float32 and the leaders' are not; with two, the first leads the second by about
    ``offset``. None when the direction does not give such a row (draw another)."""
    W, b = weight.to(torch.float64), bias.to(torch.float64)
    u = direction.to(torch.float64)
    if live == 2:
        order = torch.argsort(W @ u, descending=True)
        top, second = int(order[0]), int(order[1])
        along = W[top] - W[second]
        u = u - (along @ u) / (along @ along) * along  # the two tie along u
    z = W @ u
    order = torch.argsort(z, descending=True)
    leaders, others = order[:live], order[live:]
    lead = z[leaders].min() - z[others].max()
    if float(lead) < 0.2 * float(u.norm()) or float(u.norm()) == 0.0:
        return None
    scale = float(((gap + 1.0 - (b[leaders].min() - b[others])) / (z[leaders].min()
                                                                  - z[others])).max())
    row = scale * u
    if live == 2:
        along = W[leaders[0]] - W[leaders[1]]
        now = float(along @ row + b[leaders[0]] - b[leaders[1]])
        row = row + (offset - now) / float(along @ along) * along
    row = row.to(torch.float32)
    # kept only if it is what it should be: the leaders ahead by the gap (within 3), and in
    # float32 the others' probabilities 0, the leaders' not
    z = row.to(torch.float64) @ W.T + b
    p = torch.softmax(row @ weight.float().T + bias.float(), dim=0)
    if float(z[leaders].min() - z[others].max()) < gap - 3.0 or bool(p[others].any()) or (
            not bool(p[leaders].all())):
        return None
    return row


# --- question 2: the Bernoulli function -------------------------------------------------------


def bernoulli_reference(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """B(x) = x / (exp(x) - 1) and B'(x) = (exp(x) - 1 - x exp(x)) / (exp(x) - 1)**2,
    elementwise, in 60-digit decimal arithmetic (then rounded to float64); B(0) = 1 and
    B'(0) = -1/2, their limits."""
    values, slopes = [], []
    with localcontext() as context:
        context.prec = 60
        for t in x.to(torch.float64).reshape(-1).tolist():
            if t == 0:
                values.append(1.0)
                slopes.append(-0.5)
                continue
            d = Decimal(t)
            e = d.exp()
            below = e - 1
            values.append(float(d / below))
            slopes.append(float((below - d * e) / (below * below)))
    shape = x.shape
    return (torch.tensor(values, dtype=torch.float64).reshape(shape),
            torch.tensor(slopes, dtype=torch.float64).reshape(shape))


# --- question 3: loss scaling and clipping ----------------------------------------------------

#: float32's largest number: a scaled gradient beyond it is inf.
FLOAT32_MAX = float(torch.finfo(torch.float32).max)

#: The mistakes :func:`scaled_sgd` can make, by diagnosis.
SCALING_MISTAKES = ("clip_before_unscale", "no_unscale", "no_clip", "unscaled_twice",
                    "clip_value", "clip_each", "clip_inf", "no_backoff", "no_update",
                    "grow_on_overflow", "count_kept", "accumulated")


def mse_gradient(w: torch.Tensor, b: torch.Tensor, x: torch.Tensor, y: torch.Tensor
                  ) -> tuple[torch.Tensor, torch.Tensor, float]:
    """The gradient of mean((x w + b - y)**2) for w and b, in float64, and the largest number
    the scaled backward meets per unit of scale: 2 |r_i| / n and the gradients themselves."""
    n = x.shape[0]
    r = x @ w + b - y
    gw, gb = 2.0 * x.T @ r / n, 2.0 * r.sum() / n
    largest = max(float((2.0 * r.abs() / n).max()), float(gw.abs().max()), abs(float(gb)))
    return gw, gb, largest


@dataclass
class ScaledRun:
    """What :func:`scaled_sgd` computed: the parameters after the last batch (float64), the
    scale recorded for each batch and the one after the last update, how many steps were
    clipped and how many skipped, and the margin: the smallest factor by which a batch's
    largest scaled number stays away from float32's largest (below it or beyond)."""

    params: Params
    scales: list[float] = field(default_factory=list)
    final_scale: float = 0.0
    clipped: int = 0
    skipped: int = 0
    margin: float = math.inf


def scaled_sgd(params: Mapping[str, torch.Tensor],
               batches: Sequence[tuple[torch.Tensor, torch.Tensor]], lr: float,
               max_norm: float, init_scale: float, growth_interval: int,
               mistake: str | None = None) -> ScaledRun:
    """SGD on mean((x w + b - y)**2) with a dynamic loss scale, in float64, by the rules of
    question 3: per batch, record the scale s; a batch overflows when s times a number its
    backward meets is beyond float32's range; an overflowing batch takes no step, halves s
    and restarts the count of good steps; a good one clips the unscaled gradient of w and b
    together to ``max_norm`` (clip_grad_norm_'s factor max_norm / (norm + 1e-6)), steps, and
    doubles s when the count reaches ``growth_interval``.

    ``mistake`` (one of :data:`SCALING_MISTAKES`) computes what that mistake gives instead.
    """
    w = params["w"].to(torch.float64).clone()
    b = params["b"].to(torch.float64).clone()
    run = ScaledRun(params={})
    scale, count = float(init_scale), 0
    kept_w, kept_b = torch.zeros_like(w), torch.zeros_like(b)  # .grad never cleared
    for x, y in batches:
        x, y = x.to(torch.float64), y.to(torch.float64)
        run.scales.append(scale)
        gw, gb, largest = mse_gradient(w, b, x, y)
        scaled = largest * scale
        if mistake == "accumulated":  # .grad held the last step's gradient, unscaled
            gw, gb = gw + kept_w / scale, gb + kept_b / scale
            scaled = max(scaled, scale * float(gw.abs().max()), scale * abs(float(gb)))
            if not (bool(torch.isfinite(gw).all()) and math.isfinite(float(gb))):
                scaled = math.nan
        overflow = not scaled < FLOAT32_MAX  # NaN too
        if math.isfinite(scaled) and scaled > 0:
            run.margin = min(run.margin, FLOAT32_MAX / scaled if not overflow
                             else scaled / FLOAT32_MAX)
        if overflow:
            run.skipped += 1
            if mistake == "accumulated":
                kept_w, kept_b = torch.full_like(w, math.nan), torch.full_like(b, math.nan)
            if mistake not in ("no_backoff", "no_update", "grow_on_overflow"):
                scale *= 0.5
            if mistake == "grow_on_overflow":
                count += 1
                if count == growth_interval:
                    scale, count = scale * 2.0, 0
            elif mistake != "count_kept":
                count = 0
            continue
        if mistake == "unscaled_twice":
            gw, gb = gw / scale, gb / scale
        before = (gw.clone(), gb.clone())
        if mistake in ("clip_before_unscale", "no_unscale"):
            gw, gb = _clipped(gw * scale, gb * scale, max_norm)
            if mistake == "clip_before_unscale":
                gw, gb = gw / scale, gb / scale
        elif mistake == "clip_value":
            gw, gb = gw.clamp(-max_norm, max_norm), gb.clamp(-max_norm, max_norm)
        elif mistake == "clip_each":
            gw = _clipped(gw, torch.zeros(()), max_norm)[0]
            gb = _clipped(gb, torch.zeros(()), max_norm)[0]
        elif mistake == "clip_inf":  # norm_type=inf: the largest entry's size as the norm
            largest_entry = max(float(gw.abs().max()), abs(float(gb)))
            factor = min(1.0, max_norm / (largest_entry + 1e-6))
            gw, gb = gw * factor, gb * factor
        elif mistake != "no_clip":
            gw, gb = _clipped(gw, gb, max_norm)
        run.clipped += int(not (torch.equal(gw, before[0]) and torch.equal(gb, before[1])))
        w, b = w - lr * gw, b - lr * gb
        if mistake == "accumulated":
            kept_w, kept_b = gw, gb
        if mistake != "no_update":
            count += 1
            if count == growth_interval:
                scale, count = scale * 2.0, 0
    run.params, run.final_scale = {"w": w, "b": b}, scale
    return run


def _clipped(gw: torch.Tensor, gb: torch.Tensor, max_norm: float
             ) -> tuple[torch.Tensor, torch.Tensor]:
    """gw and gb times clip_grad_norm_'s factor, min(1, max_norm / (their norm + 1e-6))."""
    norm = math.sqrt(float((gw * gw).sum()) + float((gb * gb).sum()))
    factor = min(1.0, max_norm / (norm + 1e-6))
    return gw * factor, gb * factor


# --- question 4: float16's range ----------------------------------------------------------------


def float16_kind(value: float) -> str:
    """What float16 makes of ``value``, rounded once from float64: "zero", "subnormal" (not 0,
    below float16's smallest normal number), "normal" or "overflow" (inf)."""
    stored = float(torch.tensor(value, dtype=torch.float64).to(torch.float16))
    if stored == 0.0:
        return "zero"
    if math.isinf(stored):
        return "overflow"
    return "subnormal" if abs(stored) < float(torch.finfo(torch.float16).tiny) else "normal"
