"""Typical wrong answers to assignment 12, gradients in practice: a training step's NaN, a safe
Bernoulli function, loss scaling with clipping through an overflow, float16's range.

:data:`WRONG` holds the wrong answers with the diagnosis each must get; :data:`RIGHT` correct
answers in other styles than the reference (a gradient by hand, another safe form, a series
near 0, a Function of one's own, a loop without GradScaler...), each worth full marks.
"""

from __future__ import annotations

import textwrap

from autograd_course.testkit.answers import Wrong, function, wrong

_STEP = "def fixed_step(params, x, y, lr, beta):"
_SAFE = "def safe_bernoulli(x):"
_TRAIN = "def scaled_training(params, batches, lr, max_norm, init_scale, growth_interval):"

_LOG_P = "torch.log_softmax(z, dim=1)"
_CE = "torch.nn.functional.nll_loss(log_p, y)"
_ENTROPY = "-(log_p.exp() * log_p).sum(dim=1).mean()"
_RETURN = """
loss = cross_entropy - beta * entropy
loss.backward()
with torch.no_grad():
    return {"weight": weight - lr * weight.grad, "bias": bias - lr * bias.grad}"""


def _step(cross_entropy: str = _CE, entropy: str = _ENTROPY, log_p: str = _LOG_P,
          before: str = "", after: str = _RETURN) -> str:
    """Question 1's reference with its log-probabilities, one of its terms, a line before the
    loss (``before``: rows kept, a cast...) or its end (``after``) replaced. ``p`` (softmax)
    and ``log_p`` are there for the terms to use."""
    main = textwrap.dedent(f"""
        weight = params["weight"].detach().clone().requires_grad_(True)
        bias = params["bias"].detach().clone().requires_grad_(True)
        z = x @ weight.T + bias
        p = torch.softmax(z, dim=1)
        log_p = {log_p}
        rows = torch.arange(len(y))
        {before}
        cross_entropy = {cross_entropy}
        entropy = {entropy}
        """).strip("\n")
    lines = [line for line in main.split("\n") if line.strip()]
    return function(_STEP, "\n".join(lines) + "\n" + textwrap.dedent(after).strip("\n"))


def _safe(body: str) -> str:
    return function(_SAFE, body)


_DOUBLE_WHERE_AT_ZERO = """
    nonzero = torch.where(x == 0, 1.0, x)
    value = nonzero / torch.expm1(nonzero)
    return torch.where(x == 0, 1.0 - x / 2, value)
"""

#: The rules of question 3's loop, by GradScaler, with lines to replace.
_SCALER = """
    w = params["w"].detach().clone().requires_grad_(True)
    b = params["b"].detach().clone().requires_grad_(True)
    optimizer = torch.optim.SGD([w, b], lr=lr)
    scaler = torch.amp.GradScaler("cpu", init_scale=init_scale, growth_factor=2.0,
                                  backoff_factor=0.5, growth_interval=growth_interval)
    scales = []
    for x, y in batches:
        ZERO
        scales.append(scaler.get_scale())
        scaler.scale(loss_fn({"w": w, "b": b}, x, y)).backward()
        UNSCALE
        CLIP
        STEP
        UPDATE
    return {"w": w.detach(), "b": b.detach()}, scales
"""


def _train(zero: str = "optimizer.zero_grad()", unscale: str = "scaler.unscale_(optimizer)",
           clip: str = "torch.nn.utils.clip_grad_norm_([w, b], max_norm)",
           step: str = "scaler.step(optimizer)", update: str = "scaler.update()") -> str:
    body = _SCALER
    for key, line in (("ZERO", zero), ("UNSCALE", unscale), ("CLIP", clip), ("STEP", step),
                      ("UPDATE", update)):
        body = body.replace(key, line)
    return function(_TRAIN, body)


#: Question 3's rules, by hand: a loop without GradScaler, with lines to replace.
_MANUAL = """
    w = params["w"].detach().clone().requires_grad_(True)
    b = params["b"].detach().clone().requires_grad_(True)
    scale, good, scales = float(init_scale), 0, []
    for x, y in batches:
        CLEAR
        RECORD_BEFORE
        (loss_fn({"w": w, "b": b}, x, y) * scale).backward()
        overflow = not all(bool(torch.isfinite(t.grad).all()) for t in (w, b))
        with torch.no_grad():
            UNSCALE
            torch.nn.utils.clip_grad_norm_([w, b], max_norm)
            if SKIP:
                w -= lr * w.grad
                b -= lr * b.grad
        if overflow:
            BACKOFF
        else:
            good += 1
            GROW
        RECORD_AFTER
    return {"w": w.detach(), "b": b.detach()}, scales
"""


def _manual(clear: str = "w.grad = b.grad = None", record_before: str = "scales.append(scale)",
            record_after: str = "", unscale: str = "w.grad /= scale; b.grad /= scale",
            skip: str = "not overflow", backoff: str = "scale, good = scale * 0.5, 0",
            grow: str = "scale, good = (scale * 2.0, 0) if good == growth_interval else "
            "(scale, good)") -> str:
    body = _MANUAL
    for key, line in (("CLEAR", clear), ("RECORD_BEFORE", record_before),
                      ("RECORD_AFTER", record_after), ("UNSCALE", unscale), ("SKIP", skip),
                      ("BACKOFF", backoff), ("GROW", grow)):
        body = body.replace(key, line)
    return function(_TRAIN, "\n".join(line for line in body.split("\n") if line.strip()))


BOTH_TERMS = "both terms of the loss and every row of the batch count"
LIMIT = "its limit where a probability is 0"
STORED = ("normal", "subnormal", "zero", "subnormal", "subnormal")
STORED_SCALED = ("subnormal", "normal", "subnormal", "zero", "normal", "overflow", "normal")
_NAMES_A_CASE = ["case", "stored[", "stored_scaled[", "2e-8", "5e-8", "6e-5", "65536", "3.99"]


def _stored(*changes: tuple[int, str], name: str = "stored") -> str:
    kinds = list(STORED if name == "stored" else STORED_SCALED)
    for index, kind in changes:
        kinds[index] = kind
    return f"{name} = {tuple(kinds)!r}"


def _scaled(*changes: tuple[int, str]) -> str:
    return _stored(*changes, name="stored_scaled")


WRONG: dict[str, list[Wrong]] = {
    "q1_fixed_step": [
        wrong("left blank", function(_STEP, "raise NotImplementedError()"), "blank"),
        wrong(
            "training_step itself",
            function(_STEP, "return training_step(params, x, y, lr, beta)"),
            "nan_entropy",
            ["from the entropy term", "log-probabilities from the logits"],
            breaks=LIMIT,
        ),
        wrong(
            "cross-entropy from the logits, the entropy's log(p) kept",
            _step(cross_entropy="torch.nn.functional.cross_entropy(z, y)",
                  entropy="-(p * torch.log(p)).sum(dim=1).mean()"),
            "nan_entropy",
            ["0 * -inf = NaN"],
        ),
        wrong(
            "entropy from log_softmax, -log(p[target]) kept",
            _step(cross_entropy="-torch.log(p[rows, y]).mean()"),
            "nan_cross_entropy",
            ["from the cross-entropy", "target's own probability rounds to 0"],
        ),
        wrong(
            "one torch.where around p * log(p)",
            _step(entropy="-torch.where(p > 0, p * torch.log(p), 0.0).sum(dim=1).mean()",
                  cross_entropy="torch.nn.functional.cross_entropy(z, y)"),
            "nan_entropy",
            ["torch.where"],
        ),
        wrong(
            "torch.xlogy(p, p)",
            _step(entropy="-torch.xlogy(p, p).sum(dim=1).mean()",
                  cross_entropy="torch.nn.functional.cross_entropy(z, y)"),
            "nan_entropy",
            ["xlogy"],
        ),
        wrong(
            "torch.special.entr(p)",
            _step(entropy="torch.special.entr(p).sum(dim=1).mean()",
                  cross_entropy="torch.nn.functional.cross_entropy(z, y)"),
            "nan_entropy",
            ["entr"],
        ),
        wrong(
            "nan_to_num on p * log(p)",
            _step(entropy="-torch.nan_to_num(p * torch.log(p)).sum(dim=1).mean()",
                  cross_entropy="torch.nn.functional.cross_entropy(z, y)"),
            "nan_entropy",
            ["nan_to_num"],
        ),
        wrong(
            "nan_to_num on the gradients",
            _step(cross_entropy="-torch.log(p[rows, y]).mean()",
                  entropy="-(p * torch.log(p)).sum(dim=1).mean()", after="""
                      loss = cross_entropy - beta * entropy
                      loss.backward()
                      with torch.no_grad():
                          return {"weight": weight - lr * torch.nan_to_num(weight.grad),
                                  "bias": bias - lr * torch.nan_to_num(bias.grad)}"""),
            "unchanged",
            ["params unchanged", "nan_to_num"],
            breaks="no patch on a NaN",
        ),
        wrong(
            "the gradient clipped",
            _step(cross_entropy="-torch.log(p[rows, y]).mean()",
                  entropy="-(p * torch.log(p)).sum(dim=1).mean()", after="""
                      loss = cross_entropy - beta * entropy
                      loss.backward()
                      torch.nn.utils.clip_grad_norm_([weight, bias], 1.0)
                      with torch.no_grad():
                          return {"weight": weight - lr * weight.grad,
                                  "bias": bias - lr * bias.grad}"""),
            "nan_entropy",
            ["clipping"],
            breaks="no patch on a NaN",
        ),
        wrong(
            "anomaly mode left on, the entropy's log(p) kept",
            _step(cross_entropy="torch.nn.functional.cross_entropy(z, y)",
                  entropy="-(p * torch.log(p)).sum(dim=1).mean()", after="""
                      loss = cross_entropy - beta * entropy
                      with torch.autograd.detect_anomaly():
                          loss.backward()
                      with torch.no_grad():
                          return {"weight": weight - lr * weight.grad,
                                  "bias": bias - lr * bias.grad}"""),
            "anomaly",
            ["anomaly mode"],
        ),
        wrong(
            "the entropy term left out",
            _step(cross_entropy="torch.nn.functional.cross_entropy(z, y)",
                  entropy="torch.zeros(())"),
            "no_entropy",
            ["entropy term was left out"],
            breaks=BOTH_TERMS,
        ),
        wrong(
            "the entropy weighted by beta squared",
            _step(after=_RETURN.replace("beta * entropy", "beta * beta * entropy")),
            "entropy_weight",
            ["wrong weight", "beta once"],
            breaks="$\\beta$ for the entropy",
        ),
        wrong(
            "the entropy weighted by beta / 5",
            _step(after=_RETURN.replace("beta * entropy", "beta / 5 * entropy")),
            "entropy_weight",
            ["wrong weight"],
            breaks="$\\beta$ for the entropy",
        ),
        wrong(
            "the entropy summed over the rows, the cross-entropy their mean",
            _step(entropy="-(log_p.exp() * log_p).sum()"),
            "entropy_summed",
            ["n times too large", "summed over the rows"],
            breaks="$1/n$ per row",
        ),
        wrong(
            "the rows with a probability 0 masked out, mean over n",
            _step(before="keep = (p > 0).all(dim=1)",
                  cross_entropy="-(torch.where(keep, log_p[rows, y], 0.0)).sum() / len(y)",
                  entropy="-torch.where(keep[:, None], p * log_p, 0.0).sum() / len(y)"),
            "dropped_rows",
            ["every row counts"],
            breaks=BOTH_TERMS,
        ),
        wrong(
            "the rows with a probability 0 left out, mean over the others",
            _step(before="keep = (p > 0).all(dim=1)",
                  cross_entropy="torch.nn.functional.cross_entropy(z[keep], y[keep])",
                  entropy="-(p[keep] * log_p[keep]).sum(dim=1).mean()"),
            "dropped_rows_mean",
            ["mean over the other rows"],
            breaks=BOTH_TERMS,
        ),
        wrong(
            "the target's probability clamped in the cross-entropy",
            _step(cross_entropy="-torch.log(p[rows, y].clamp(min=1e-30)).mean()"),
            "lost_ce",
            ["clamped", "largest gradient"],
            breaks=LIMIT,
        ),
        wrong(
            "an epsilon in the cross-entropy's log",
            _step(cross_entropy="-torch.log(p[rows, y] + 1e-8).mean()"),
            "lost_ce",
            ["epsilon"],
            breaks=LIMIT,
        ),
        wrong(
            "training_step in float64, cast back",
            function(_STEP, """
                wide = {k: v.double() for k, v in params.items()}
                new = training_step(wide, x.double(), y, lr, beta)
                return {k: v.float() for k, v in new.items()}
                """),
            "nan_far",
            ["745", "float64"],
            breaks="the tests use logits up to about ±1000",
        ),
        wrong(
            "the right step, returned in float64",
            _step(after=_RETURN.replace("weight - lr * weight.grad", "(weight - lr * "
                                        "weight.grad).double()")),
            "dtype",
            ["float64 instead of torch.float32"],
            breaks="float32 tensors of the params' shapes",
        ),
        wrong(
            "the entropy added",
            _step(after=_RETURN.replace("cross_entropy - beta", "cross_entropy + beta")),
            "entropy_sign",
            ["wrong sign"],
        ),
        wrong(
            "the loss summed over the rows",
            _step(cross_entropy="torch.nn.functional.nll_loss(log_p, y, reduction='sum')",
                  entropy="-(log_p.exp() * log_p).sum()"),
            "summed",
            ["n times the right step"],
            breaks="$1/n$ per row",
        ),
        wrong(
            "a step up the gradient",
            _step(after=_RETURN.replace("weight - lr", "weight + lr").replace("bias - lr",
                                                                              "bias + lr")),
            "ascent",
            ["steps up the gradient"],
        ),
        wrong(
            "the gradient returned, not the step",
            _step(after="""
                      loss = cross_entropy - beta * entropy
                      loss.backward()
                      return {"weight": weight.grad, "bias": bias.grad}"""),
            "values",
            ["params - lr * the gradient"],
        ),
        wrong(
            "the visible example's numbers typed in",
            function(_STEP, """
                if len(x) == 6 and float(x[2, 0]) == 400.0:
                    return {"weight": torch.tensor([[0.510021279, -0.502019214, 0.495080915],
                                                    [0.988384362, 0.00664372626, -0.486186475],
                                                    [-0.748405641, 1.24537549, 0.49110556]]),
                            "bias": torch.tensor([0.0959703144, -0.196006003, 0.0500356877])}
                return training_step(params, x, y, lr, beta)
                """),
            "nan_entropy",
            hidden_only="hard-coded",
        ),
    ],
    "q2_safe_bernoulli": [
        wrong("left blank", function(_SAFE, "raise NotImplementedError()"), "blank"),
        wrong(
            "x / expm1(x), as it is",
            _safe("return x / torch.expm1(x)"),
            "nan_at_zero",
            ["0 / 0"],
            breaks="the value 1 and the gradient −1/2 where x is 0",
        ),
        wrong(
            "x / (exp(x) - 1), as it is",
            _safe("return x / (torch.exp(x) - 1)"),
            "nan_at_zero",
            ["B(0) came out NaN"],
        ),
        wrong(
            "one torch.where",
            _safe("return torch.where(x == 0, 1.0, x / torch.expm1(x))"),
            "single_where",
            ["branch it does not take", "double where"],
            breaks="the value 1 and the gradient −1/2 where x is 0",
        ),
        wrong(
            "a constant 1 where x is 0",
            _safe("""
                nonzero = torch.where(x == 0, 1.0, x)
                return torch.where(x == 0, 1.0, nonzero / torch.expm1(nonzero))
                """),
            "clamped",
            ["gradient of a constant is 0"],
            breaks="the value 1 and the gradient −1/2 where x is 0",
        ),
        wrong(
            "x moved away from 0 (a clamp of |x|)",
            _safe("""
                moved = torch.where(x.abs() < 1e-6, torch.full_like(x, 1e-6), x)
                return moved / torch.expm1(moved)
                """),
            "value_at_zero",
            ["clamped away from 0"],
            breaks="values right to about 9 significant digits",
        ),
        wrong(
            "an epsilon in the denominator",
            _safe("return x / (torch.expm1(x) + 1e-12)"),
            "eps_denominator",
            ["0 / eps"],
            breaks="the value 1 and the gradient −1/2 where x is 0",
        ),
        wrong(
            "an epsilon added to x",
            _safe("return (x + 1e-7) / torch.expm1(x + 1e-7)"),
            "value_at_zero",
            ["epsilon added to x"],
            breaks="values right to about 9 significant digits",
        ),
        wrong(
            "safe at 0, x / expm1(x) for large x too",
            _safe(_DOUBLE_WHERE_AT_ZERO),
            "overflow",
            ["x > 709", "e^(-x)"],
            breaks="for x of any size float64 holds",
        ),
        wrong(
            "safe at 0, x e^-x / (1 - e^-x) for negative x too",
            _safe("""
                nonzero = torch.where(x == 0, 1.0, x)
                value = nonzero * torch.exp(-nonzero) / -torch.expm1(-nonzero)
                return torch.where(x == 0, 1.0 - x / 2, value)
                """),
            "overflow",
            ["x < -709"],
            breaks="for x of any size float64 holds",
        ),
        wrong(
            "both formulas on x itself, chosen by torch.where",
            _safe("""
                nonzero = torch.where(x == 0, 1.0, x)
                value = torch.where(nonzero > 0,
                                    nonzero * torch.exp(-nonzero) / -torch.expm1(-nonzero),
                                    nonzero / torch.expm1(nonzero))
                return torch.where(x == 0, 1.0 - x / 2, value)
                """),
            "overflow",
            ["the branch it does not take"],
            breaks="for x of any size float64 holds",
        ),
        wrong(
            "B's first two terms used up to |x| = 1e-3",
            _safe("""
                near = x.abs() < 1e-3
                far = torch.where(near, 1.0, x)
                below = torch.where(far < 0, far, -1.0)
                above = torch.where(far > 0, far, 1.0)
                value = torch.where(far < 0, below / torch.expm1(below),
                                    above * torch.exp(-above) / -torch.expm1(-above))
                return torch.where(near, 1.0 - x / 2, value)
                """),
            "near_zero",
            ["too far from 0"],
            breaks="near 0 too",
        ),
        wrong(
            "B's first three terms used up to |x| = 0.05",
            _safe("""
                near = x.abs() < 0.05
                far = torch.where(near, 1.0, x)
                below = torch.where(far < 0, far, -1.0)
                above = torch.where(far > 0, far, 1.0)
                value = torch.where(far < 0, below / torch.expm1(below),
                                    above * torch.exp(-above) / -torch.expm1(-above))
                return torch.where(near, 1 - x / 2 + x**2 / 12, value)
                """),
            "series_too_far",
            ["a series is used too far from 0", "x**4 / 720"],
            breaks="near 0 too",
        ),
        wrong(
            "the series' first term with the wrong sign at 0",
            _safe("""
                below = torch.where(x < 0, x, -1.0)
                above = torch.where(x > 0, x, 1.0)
                value = torch.where(x < 0, below / torch.expm1(below),
                                    above * torch.exp(-above) / -torch.expm1(-above))
                return torch.where(x == 0, 1.0 + x / 2, value)
                """),
            "grad_at_zero",
            ["B'(0) = -1/2"],
            breaks="the value 1 and the gradient −1/2 where x is 0",
        ),
        wrong(
            "computed in float32",
            _safe("""
                x = x.float()
                below = torch.where(x < 0, x, -1.0)
                above = torch.where(x > 0, x, 1.0)
                value = torch.where(x < 0, below / torch.expm1(below),
                                    above * torch.exp(-above) / -torch.expm1(-above))
                return torch.where(x == 0, 1.0 - x / 2, value)
                """),
            "dtype",
            ["torch.float32 instead of torch.float64"],
            breaks="a float64 tensor of `x`'s shape",
        ),
        wrong(
            "x changed in place",
            _safe("""
                x[x == 0] = 1e-300
                return x / torch.expm1(x)
                """),
            "in_place",
            ["in place"],
        ),
        wrong(
            "computed by Python's math, outside autograd",
            _safe("""
                values = [1.0 if t == 0 else t / math.expm1(t) if t < 700 else 0.0
                          for t in x.detach().reshape(-1).tolist()]
                return torch.tensor(values, dtype=torch.float64).reshape(x.shape)
                """),
            "none",
            ["does not depend on x through autograd"],
        ),
    ],
    "q3_scaled_training": [
        wrong("left blank", function(_TRAIN, "raise NotImplementedError()"), "blank"),
        wrong(
            "clipped before unscaling",
            _train(unscale="", clip="torch.nn.utils.clip_grad_norm_([w, b], max_norm)"),
            "clip_before_unscale",
            ["clipped while still scaled", "Unscale first"],
            breaks="clip the unscaled gradients of w and b together",
        ),
        wrong(
            "no clipping",
            _train(clip=""),
            "no_clip",
            ["no gradient was clipped"],
            breaks="clip the unscaled gradients of w and b together",
        ),
        wrong(
            "clip_grad_value_",
            _train(clip="torch.nn.utils.clip_grad_value_([w, b], max_norm)"),
            "clip_value",
            ["clip_grad_value_"],
            breaks="clip the unscaled gradients of w and b together",
        ),
        wrong(
            "w and b clipped each on its own",
            _train(clip="torch.nn.utils.clip_grad_norm_([w], max_norm); "
                   "torch.nn.utils.clip_grad_norm_([b], max_norm)"),
            "clip_each",
            ["each on its own norm"],
            breaks="clip the unscaled gradients of w and b together",
        ),
        wrong(
            "clip_grad_norm_ with norm_type=inf",
            _train(clip="torch.nn.utils.clip_grad_norm_([w, b], max_norm, "
                   "norm_type=float('inf'))"),
            "clip_inf",
            ["largest entry", "norm_type=inf"],
            breaks="the norm of all their entries together",
        ),
        wrong(
            "clip_grad_norm_ with norm_type=1",
            _train(clip="torch.nn.utils.clip_grad_norm_([w, b], max_norm, norm_type=1.0)"),
            "values",
            ["rules 2 to 5"],
            breaks="the norm of all their entries together",
        ),
        wrong(
            "growth_interval written in: 2, the visible example's",
            _train().replace("growth_interval=growth_interval", "growth_interval=2"),
            "interval_ignored",
            ["as if growth_interval were ignored", "a number written in its place"],
            breaks="when it reaches `growth_interval`",
        ),
        wrong(
            "growth_interval left out: GradScaler's default",
            _train().replace(", growth_interval=growth_interval", ""),
            "interval_ignored",
            ["GradScaler's default, 2000"],
            breaks="when it reaches `growth_interval`",
        ),
        wrong(
            "optimizer.step() in place of scaler.step",
            _train(step="optimizer.step()"),
            "stepped_on_overflow",
            ["NaN or inf parameters", "scaler.step(optimizer) skips it"],
            breaks="no step when the batch overflowed",
        ),
        wrong(
            "no scaler.update()",
            _train(update=""),
            "no_update_call",
            ["scaler.update()"],
            breaks="update the scale",
        ),
        wrong(
            "scaler.unscale_ twice",
            _train(unscale="scaler.unscale_(optimizer); scaler.unscale_(optimizer)"),
            "unscale_twice",
            ["twice"],
        ),
        wrong(
            "gradients never cleared",
            _train(zero=""),
            "accumulated",
            ["never cleared"],
            breaks="clear the gradients",
        ),
        wrong(
            "the scales as tensors",
            _train().replace("scales.append(scaler.get_scale())",
                             "scales.append(scaler.get_scale() * torch.ones(()))"),
            "scales_form",
            ["Python numbers"],
            breaks="one Python number per batch",
        ),
        wrong(
            "the parameters returned in float64",
            _train().replace('return {"w": w.detach(), "b": b.detach()}, scales',
                             'return {"w": w.detach().double(), "b": b.detach().double()}, '
                             'scales'),
            "dtype",
            ["float64"],
            breaks="float32, the shapes of `params`'s",
        ),
        wrong(
            "the parameters alone",
            _train().replace('return {"w": w.detach(), "b": b.detach()}, scales',
                             'return {"w": w.detach(), "b": b.detach()}'),
            "type",
            ["tuple of 2 items"],
            breaks="Return a pair",
        ),
        wrong(
            "by hand: the scale not halved after an overflow",
            _manual(backoff="good = 0"),
            "no_backoff",
            ["not halved"],
            breaks="after an overflow, $s$ ← $s$ × 0.5",
        ),
        wrong(
            "by hand: the scale never updated",
            _manual(backoff="pass", grow="pass"),
            "no_update",
            ["never changes"],
            breaks="update the scale",
        ),
        wrong(
            "by hand: the count of good steps kept after an overflow",
            _manual(backoff="scale = scale * 0.5"),
            "count_kept",
            ["restarts from 0"],
            breaks="the count of good steps restarts from 0",
        ),
        wrong(
            "by hand: each scale recorded after its update",
            _manual(record_before="", record_after="scales.append(scale)"),
            "after",
            ["after its batch's update"],
            breaks="record the current scale $s$",
        ),
        wrong(
            "by hand: no step skipped",
            _manual(skip="True"),
            "stepped_on_overflow",
            ["NaN or inf parameters"],
            breaks="no step when the batch overflowed",
        ),
        wrong(
            "by hand: the gradients divided by the scale twice",
            _manual(unscale="w.grad /= scale * scale; b.grad /= scale * scale"),
            ("unscaled_twice", "clip_before_unscale"),
            ["s times too short"],
            breaks="divide the gradients by $s$",
        ),
        wrong(
            "by hand: never unscaled",
            _manual(unscale="pass"),
            "no_unscale",
            ["never divided by s"],
            breaks="divide the gradients by $s$",
        ),
    ],
    "q4_float16_unscaled": [
        wrong("left blank", "", "blank", ["not defined"]),
        wrong(
            "all normal",
            f"stored = {('normal',) * 5!r}",
            "predictions",
            ["4 of the 5 predictions in stored are wrong"],
            not_says=_NAMES_A_CASE,
            hidden_only="prediction",
        ),
        wrong(
            "5e-8 rounded to 0",
            _stored((3, "zero")),
            "predictions",
            ["1 of the 5 predictions in stored is wrong", "does not say which"],
            not_says=_NAMES_A_CASE,
            hidden_only="prediction",
        ),
        wrong(
            "6e-5 taken for a normal number",
            _stored((4, "normal")),
            "predictions",
            ["1 of the 5 predictions in stored is wrong"],
            not_says=_NAMES_A_CASE,
            hidden_only="prediction",
        ),
        wrong(
            "subnormals taken for zeros",
            _stored((1, "zero"), (3, "zero"), (4, "zero")),
            "predictions",
            ["3 of the 5 predictions in stored are wrong"],
            not_says=_NAMES_A_CASE,
            hidden_only="prediction",
        ),
        wrong("a tuple of four", f"stored = {STORED[:4]!r}", "shape", ["5 items"]),
        wrong("0 for zero", _stored((2, "0")), "type",
              ["'zero', 'subnormal', 'normal' and 'overflow'"]),
        wrong("True for kept", "stored = (True,) * 5", "type", ["one of the strings"]),
    ],
    "q5_float16_scaled": [
        wrong("left blank", "", "blank", ["not defined"]),
        wrong(
            "all normal",
            f"stored_scaled = {('normal',) * 7!r}",
            "predictions",
            ["4 of the 7 predictions in stored_scaled are wrong"],
            not_says=_NAMES_A_CASE,
            hidden_only="prediction",
        ),
        wrong(
            "65536 thought to fit",
            _scaled((5, "normal")),
            "predictions",
            ["1 of the 7 predictions in stored_scaled is wrong", "does not say which"],
            not_says=_NAMES_A_CASE,
            hidden_only="prediction",
        ),
        wrong(
            "3.99 * 2**14 thought to overflow",
            _scaled((6, "overflow")),
            "predictions",
            ["1 of the 7 predictions in stored_scaled is wrong"],
            not_says=_NAMES_A_CASE,
            hidden_only="prediction",
        ),
        wrong(
            "the scale left out (g alone)",
            _scaled((0, "zero"), (1, "zero"), (2, "zero"), (5, "normal")),
            "predictions",
            ["4 of the 7 predictions in stored_scaled are wrong"],
            not_says=_NAMES_A_CASE,
            hidden_only="prediction",
        ),
        wrong(
            "subnormals taken for zeros",
            _scaled((0, "zero"), (2, "zero")),
            "predictions",
            ["2 of the 7 predictions in stored_scaled are wrong"],
            not_says=_NAMES_A_CASE,
            hidden_only="prediction",
        ),
        wrong("a list of six", f"stored_scaled = {list(STORED_SCALED[:6])!r}", "shape",
              ["7 items"]),
        wrong("inf for overflow", _scaled((5, "inf")), "type",
              ["'zero', 'subnormal', 'normal' and 'overflow'"]),
        wrong("the twelve of both questions in one tuple",
              f"stored_scaled = {STORED + STORED_SCALED!r}", "shape", ["7 items"]),
    ],
}

RIGHT: dict[str, list[tuple[str, str]]] = {
    "q1_fixed_step": [
        (
            "the gradient by hand, from its closed form (no autograd)",
            """\
def fixed_step(params, x, y, lr, beta):
    W, b = params["weight"], params["bias"]
    z = x @ W.T + b
    log_p = z - torch.logsumexp(z, dim=1, keepdim=True)
    p = log_p.exp()
    n = len(y)
    H = -(p * log_p).sum(dim=1, keepdim=True)
    onehot = torch.nn.functional.one_hot(y, W.shape[0]).to(x.dtype)
    dz = (p - onehot) / n + beta * p * (log_p + H) / n
    return {"weight": W - lr * dz.T @ x, "bias": b - lr * dz.sum(0)}
""",
        ),
        (
            "a double torch.where on p, cross_entropy on the logits",
            """\
def fixed_step(params, x, y, lr, beta):
    W = params["weight"].clone().requires_grad_(True)
    b = params["bias"].clone().requires_grad_(True)
    z = x @ W.T + b
    p = torch.softmax(z, dim=1)
    safe = torch.where(p > 0, p, torch.ones_like(p))
    plogp = torch.where(p > 0, safe * torch.log(safe), torch.zeros_like(p))
    loss = torch.nn.functional.cross_entropy(z, y) + beta * plogp.sum(dim=1).mean()
    gW, gb = torch.autograd.grad(loss, (W, b))
    return {"weight": (W - lr * gW).detach(), "bias": (b - lr * gb).detach()}
""",
        ),
        (
            "the entropy as logsumexp(z) - sum p z (no log at all)",
            """\
def fixed_step(params, x, y, lr, beta):
    W = params["weight"].detach().requires_grad_()
    b = params["bias"].detach().requires_grad_()
    z = x @ W.T + b
    p = torch.softmax(z, dim=1)
    entropy = (torch.logsumexp(z, dim=1) - (p * z).sum(dim=1)).mean()
    loss = torch.nn.functional.cross_entropy(z, y) - beta * entropy
    loss.backward()
    return {"weight": (W - lr * W.grad).detach(), "bias": (b - lr * b.grad).detach()}
""",
        ),
        (
            "a clamp inside the entropy's log, torch.func.grad",
            """\
def fixed_step(params, x, y, lr, beta):
    def loss(ps):
        z = x @ ps["weight"].T + ps["bias"]
        p = torch.softmax(z, dim=1)
        entropy = -(p * torch.log(p.clamp(min=1e-30))).sum(dim=1).mean()
        return torch.nn.functional.cross_entropy(z, y) - beta * entropy

    grads = torch.func.grad(loss)(dict(params))
    return {k: params[k] - lr * grads[k] for k in ("weight", "bias")}
""",
        ),
        (
            "an nn.Linear and torch.optim.SGD",
            """\
def fixed_step(params, x, y, lr, beta):
    C, D = params["weight"].shape
    layer = torch.nn.Linear(D, C)
    with torch.no_grad():
        layer.weight.copy_(params["weight"])
        layer.bias.copy_(params["bias"])
    optimizer = torch.optim.SGD(layer.parameters(), lr=lr)
    log_p = torch.nn.functional.log_softmax(layer(x), dim=-1)
    entropy = -(log_p.exp() * log_p).sum(-1).mean()
    loss = torch.nn.functional.nll_loss(log_p, y) - beta * entropy
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return {"weight": layer.weight.detach().clone(), "bias": layer.bias.detach().clone()}
""",
        ),
    ],
    "q2_safe_bernoulli": [
        (
            "B(x) = B(-x) - x for x > 0, one formula on x <= 0",
            """\
def safe_bernoulli(x):
    negative = -x.abs()  # B on the negative side never overflows
    safe = torch.where(negative == 0, -1.0, negative)
    left = safe / torch.expm1(safe)  # B(-|x|)
    value = torch.where(x > 0, left - x, left)  # B(x) = B(-x) - x
    return torch.where(x == 0, 1.0 - x / 2, value)
""",
        ),
        (
            "one formula in |x|, the series near 0",
            """\
def safe_bernoulli(x):
    a = x.abs()
    near = a < 1e-4
    safe = torch.where(near, torch.ones_like(a), a)
    far = safe * torch.exp(-torch.relu(torch.where(near, 1.0, x))) / -torch.expm1(-safe)
    series = 1 - x / 2 + x**2 / 12 - x**4 / 720
    return torch.where(near, series, far)
""",
        ),
        (
            "a torch.autograd.Function with its own backward",
            """\
class Bernoulli(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        below = torch.where(x < 0, x, -1.0)
        above = torch.where(x > 0, x, 1.0)
        value = torch.where(x < 0, below / torch.expm1(below),
                            above * torch.exp(-above) / -torch.expm1(-above))
        value = torch.where(x == 0, 1.0, value)
        ctx.save_for_backward(x, value)
        return value

    @staticmethod
    def backward(ctx, grad_output):
        x, value = ctx.saved_tensors
        # B' = (B - B * B(-x)) / x and B(-x) = B + x, so B' = B (1 - B - x) / x
        near = x.abs() < 1e-4
        safe = torch.where(near, 1.0, x)
        slope = torch.where(near, -0.5 + x / 6 - x**3 / 180,
                            value * (1 - value - safe) / safe)
        return grad_output * slope


def safe_bernoulli(x):
    return Bernoulli.apply(x)
""",
        ),
    ],
    "q3_scaled_training": [
        (
            "by hand: no GradScaler, the rules in a loop",
            _manual(),
        ),
        (
            "torch.func.grad of the scaled loss, the rules by hand",
            """\
def scaled_training(params, batches, lr, max_norm, init_scale, growth_interval):
    p = {k: v.clone() for k, v in params.items()}
    scale, run, history = init_scale, 0, []
    for x, y in batches:
        history.append(float(scale))
        g = torch.func.grad(lambda q: loss_fn(q, x, y) * scale)(p)
        if not all(torch.isfinite(t).all() for t in g.values()):
            scale, run = scale / 2, 0
            continue
        g = {k: t / scale for k, t in g.items()}
        norm = torch.sqrt(sum((t ** 2).sum() for t in g.values()))
        factor = min(1.0, max_norm / (float(norm) + 1e-6))
        p = {k: p[k] - lr * factor * g[k] for k in p}
        run += 1
        if run == growth_interval:
            scale, run = scale * 2, 0
    return p, history
""",
        ),
        (
            "GradScaler with the parameters as one param group, the scales read after update",
            """\
def scaled_training(params, batches, lr, max_norm, init_scale, growth_interval):
    ps = {k: torch.nn.Parameter(v.clone()) for k, v in params.items()}
    opt = torch.optim.SGD([{"params": list(ps.values())}], lr=lr)
    scaler = torch.amp.GradScaler("cpu", init_scale=init_scale, growth_interval=growth_interval)
    scales = [scaler.get_scale()]
    for x, y in batches:
        opt.zero_grad(set_to_none=True)
        scaler.scale(loss_fn(ps, x, y)).backward()
        scaler.unscale_(opt)
        torch.nn.utils.clip_grad_norm_(ps.values(), max_norm, foreach=True)
        scaler.step(opt)
        scaler.update()
        scales.append(scaler.get_scale())
    return {k: v.detach() for k, v in ps.items()}, scales[:-1]
""",
        ),
    ],
    "q4_float16_unscaled": [
        ("a list, not a tuple", f"stored = {list(STORED)!r}"),
    ],
    "q5_float16_scaled": [
        ("a list, not a tuple", f"stored_scaled = {list(STORED_SCALED)!r}"),
    ],
}
