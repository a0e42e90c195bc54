"""Typical wrong answers to assignment 10 torch.func: a clipped mean of per-sample gradients, a
forward-mode rule for a custom Function, a Gauss-Newton product, a Jacobian plan.

:data:`WRONG` holds the wrong answers with the diagnosis each must get; :data:`RIGHT` correct
answers in other styles than the reference (a loop, batched weights, dual tensors, linearize,
NumPy's integers...), each worth full marks.
"""

from __future__ import annotations

import textwrap

from autograd_course.testkit.answers import Wrong, function, wrong

_CLIP = "def clipped_mean_grad(model, x, y, max_norm):"
_GN = "def gauss_newton_product(f, x, v):"
_PLAN = "def jacobian_plan(shapes):"

_EACH = "torch.func.vmap(torch.func.grad(loss_of_one), in_dims=(None, 0, 0))(params, x, y)"
_NORMS = "torch.stack([g.flatten(1).pow(2).sum(1) for g in each.values()]).sum(0).sqrt()"
_MEAN = "{name: torch.einsum('i,i...->...', factor, g) / len(x) for name, g in each.items()}"


def _clip(loss: str = "torch.nn.functional.cross_entropy(logits, label)",
          logits: str = "torch.func.functional_call(model, params, (sample,))",
          each: str = _EACH, norms: str = _NORMS,
          factor: str = "(max_norm / norms).clamp(max=1.0)", result: str = _MEAN) -> str:
    """The reference of question 1 with one of its steps replaced: the loss of one sample,
    its logits, the per-sample gradients, their norms, the clipping factors or the result."""
    return function(
        _CLIP,
        f"""
        params = {{name: p.detach() for name, p in model.named_parameters()}}

        def loss_of_one(params, sample, label):
            logits = {logits}
            return {loss}

        each = {each}
        norms = {norms}
        factor = {factor}
        return {result}
        """,
    )


def _clip_groups(groups: str) -> str:
    """Each group of parameters (``groups``: an expression of lists of names) clipped on its
    own norm."""
    return function(
        _CLIP,
        f"""
        params = {{name: p.detach() for name, p in model.named_parameters()}}

        def loss_of_one(params, sample, label):
            logits = torch.func.functional_call(model, params, (sample,))
            return torch.nn.functional.cross_entropy(logits, label)

        each = {_EACH}
        result = {{}}
        for group in {groups}:
            norms = torch.stack([each[k].flatten(1).pow(2).sum(1) for k in group]).sum(0).sqrt()
            factor = (max_norm / norms).clamp(max=1.0)
            for k in group:
                result[k] = torch.einsum("i,i...->...", factor, each[k]) / len(x)
        return result
        """,
    )


def _rule(setup: str = "ctx.save_for_forward(x, output)", rule: str = "True",
          jvp: str = """
                  x, y = ctx.saved_tensors
                  return torch.exp(-y) * torch.cumsum(torch.exp(x) * x_t, dim=0)""",
          with_jvp: bool = True) -> str:
    """Question 2's Function, with its setup_context's addition, its vmap rule and its jvp
    replaced (``with_jvp=False``: no jvp at all)."""
    body = (f"""
    generate_vmap_rule = {rule}

    @staticmethod
    def jvp(ctx, x_t):
""" + textwrap.indent(textwrap.dedent(jvp).strip("\n"), " " * 8)
            if with_jvp else f"\n    generate_vmap_rule = {rule}")
    return f'''class RunningLogSumExp(torch.autograd.Function):
    @staticmethod
    def forward(x):
        return torch.from_numpy(np.logaddexp.accumulate(x.detach().cpu().numpy()))

    @staticmethod
    def setup_context(ctx, inputs, output):
        (x,) = inputs
        ctx.save_for_backward(x, output)
        {setup}

    @staticmethod
    def backward(ctx, grad_y):
        x, y = ctx.saved_tensors
        return torch.exp(x) * (grad_y * torch.exp(-y)).flip(0).cumsum(0).flip(0)
{body}'''


def _jvp_body(result: str, unpack: str = "x, y = ctx.saved_tensors") -> str:
    return f"""
                  {unpack}
                  return {result}"""


def _gn(first: str = "along_v = torch.func.jvp(f, (x,), (v,))[1]",
        result: str = "pull_back(along_v)[0]") -> str:
    """The reference of question 3 with its jvp line or its result replaced."""
    return function(
        _GN,
        f"""
        y, pull_back = torch.func.vjp(f, x)
        {first}
        return {result}
        """,
    )


def _plan(count: str = "math.prod", tie: str = "<") -> str:
    """The reference of question 4 with its count or its tie rule replaced."""
    return function(
        _PLAN,
        f"""
        entries_in, entries_out = {count}(shapes[0]), {count}(shapes[-1])
        if entries_in {tie} entries_out:
            return "jacfwd", entries_in
        return "jacrev", entries_out
        """,
    )


ALL_TOGETHER = "taken over all parameters together"

WRONG: dict[str, list[Wrong]] = {
    "q1_clipped_mean_grad": [
        wrong(
            "no clipping: the mean of the per-sample gradients",
            _clip(factor="torch.ones_like(norms)"),
            "no_clipping",
            ["no sample was clipped"],
            breaks="scaled down to length `max_norm` where it is longer",
        ),
        wrong(
            "the gradient of the batch's mean loss",
            function(_CLIP, """
                params = {name: p.detach() for name, p in model.named_parameters()}

                def batch_loss(params):
                    logits = torch.func.functional_call(model, params, (x,))
                    return torch.nn.functional.cross_entropy(logits, y)

                return torch.func.grad(batch_loss)(params)
                """),
            "no_clipping",
            ["batch's mean loss"],
        ),
        wrong(
            "the mean gradient clipped, not each sample's",
            _clip(norms="torch.stack([g.mean(0).pow(2).sum() for g in each.values()]).sum()"
                  ".sqrt().expand(len(x))"),
            "clipped_mean",
            ["clip every sample's gradient"],
            breaks="the result is the mean over the n samples of the clipped gradients",
        ),
        wrong(
            "each parameter clipped on its own norm",
            _clip_groups("[[k] for k in each]"),
            "per_parameter",
            ["over all parameters together"],
            breaks=ALL_TOGETHER,
        ),
        wrong(
            "each layer clipped on its own norm",
            _clip_groups("[[k for k in each if k.rsplit('.', 1)[0] == layer] for layer in "
                         "dict.fromkeys(k.rsplit('.', 1)[0] for k in each)]"),
            "per_layer",
            ["each layer's gradient"],
            breaks=ALL_TOGETHER,
        ),
        wrong(
            "the sum of the clipped gradients",
            _clip(result="{name: torch.einsum('i,i...->...', factor, g) for name, g in "
                  "each.items()}"),
            "summed",
            ["return their mean"],
            breaks="the result is the mean over the n samples of the clipped gradients",
        ),
        wrong(
            "every sample scaled to length max_norm, short ones up too",
            _clip(factor="max_norm / norms"),
            "scaled_up",
            ["only shortens", "min(1, max_norm / norm)"],
            breaks="unchanged where",
        ),
        wrong(
            "one norm for the whole batch",
            _clip(norms="torch.stack([g.pow(2).sum() for g in each.values()]).sum().sqrt()"
                  ".expand(len(x))"),
            "one_norm",
            ["one norm of the whole batch"],
            breaks="one number per sample",
        ),
        wrong(
            "the squared norm in the factor",
            _clip(factor="(max_norm / norms**2).clamp(max=1.0)"),
            "squared_norm",
            ["squared norm"],
        ),
        wrong(
            "each sample's loss divided by n",
            _clip(loss="torch.nn.functional.cross_entropy(logits, label) / len(y)"),
            "divided_by_n",
            ["cross-entropy alone"],
            breaks="the gradient of the loss of sample $i$ alone",
        ),
        wrong(
            "the clipped per-sample gradients, not their mean",
            _clip(result="{name: torch.einsum('i,i...->i...', factor, g) for name, g in "
                  "each.items()}"),
            "per_sample",
            ["one row per sample", "mean"],
            breaks="each a float32 tensor of the parameter's shape",
        ),
        wrong(
            "vmap without in_dims (the lesson's common mistake)",
            _clip(each="torch.func.vmap(torch.func.grad(loss_of_one))(params, x, y)"),
            "in_dims",
            ["in_dims=(None, 0, 0)"],
            not_says=["Traceback", "vmap.py"],
        ),
        wrong(
            "soft one-hot targets, one_hot(y) without num_classes",
            _clip(each="torch.func.vmap(torch.func.grad(loss_of_one), in_dims=(None, 0, 0))("
                  "params, x, torch.nn.functional.one_hot(y).float())"),
            "one_hot",
            ["num_classes=3", "0 or 1"],
            not_says=["size mismatch"],
        ),
        wrong(
            "one_hot without num_classes inside vmap",
            _clip(loss="torch.nn.functional.cross_entropy(logits, "
                  "torch.nn.functional.one_hot(label).float())"),
            "item_in_vmap",
            ["one_hot(label, 3)"],
        ),
        wrong(
            "Python's min inside vmap",
            function(_CLIP, """
                params = {name: p.detach() for name, p in model.named_parameters()}

                def clipped_of_one(params, sample, label):
                    def loss(params):
                        logits = torch.func.functional_call(model, params, (sample,))
                        return torch.nn.functional.cross_entropy(logits, label)

                    g = torch.func.grad(loss)(params)
                    norm = torch.sqrt(sum(t.pow(2).sum() for t in g.values()))
                    factor = min(1.0, max_norm / norm)
                    return {k: t * factor for k, t in g.items()}

                each = torch.func.vmap(clipped_of_one, in_dims=(None, 0, 0))(params, x, y)
                return {k: g.mean(0) for k, g in each.items()}
                """),
            "item_in_vmap",
            ["torch.clamp"],
        ),
        wrong(
            "Python's min on the tensor of norms",
            _clip(factor="min(1.0, max_norm / norms)"),
            "python_min",
            ["torch.clamp(max_norm / norms, max=1.0)"],
        ),
        wrong(
            "model(sample) instead of functional_call",
            _clip(logits="model(sample)"),
            "zero",
            ["all zeros", "functional_call"],
        ),
        wrong(
            "the names of make_model's parameters, typed in",
            _clip(result="{k: torch.einsum('i,i...->...', factor, each[k]) / len(x) for k in "
                  "('hidden.weight', 'hidden.bias', 'out.weight', 'out.bias') if k in each}"),
            "missing",
            ["named_parameters"],
            breaks="named as\n`model.named_parameters()` names it",
        ),
        wrong(
            "float64 results",
            _clip(result="{name: (torch.einsum('i,i...->...', factor, g) / len(x)).double() "
                  "for name, g in each.items()}"),
            "dtype",
            ["float32"],
            breaks="each a float32 tensor",
        ),
        wrong(
            "a loop that keeps p.grad itself, zeroed in place",
            function(_CLIP, """
                rows = {name: [] for name, _ in model.named_parameters()}
                for sample, label in zip(x, y, strict=True):
                    model.zero_grad(set_to_none=False)
                    torch.nn.functional.cross_entropy(model(sample), label).backward()
                    for name, p in model.named_parameters():
                        rows[name].append(p.grad)
                each = {name: torch.stack(r) for name, r in rows.items()}
                norms = torch.stack([g.flatten(1).pow(2).sum(1) for g in each.values()])
                factor = (max_norm / norms.sum(0).sqrt()).clamp(max=1.0)
                return {name: torch.einsum("i,i...->...", factor, g) / len(x)
                        for name, g in each.items()}
                """),
            "last_repeated",
            ["p.grad.clone()"],
        ),
        wrong(
            "a loop that never clears .grad",
            function(_CLIP, """
                rows = {name: [] for name, _ in model.named_parameters()}
                for sample, label in zip(x, y, strict=True):
                    torch.nn.functional.cross_entropy(model(sample), label).backward()
                    for name, p in model.named_parameters():
                        rows[name].append(p.grad.clone())
                each = {name: torch.stack(r) for name, r in rows.items()}
                norms = torch.stack([g.flatten(1).pow(2).sum(1) for g in each.values()])
                factor = (max_norm / norms.sum(0).sqrt()).clamp(max=1.0)
                return {name: torch.einsum("i,i...->...", factor, g) / len(x)
                        for name, g in each.items()}
                """),
            "accumulated",
            ["never clears"],
        ),
        wrong("no return", _clip(result="None"), "none", ["did your function return"]),
        wrong(
            "the visible examples' answers, typed in",
            function(_CLIP, """
                known = {0.25: [0.00964492465, -0.0258527779, 0.00369867589, -0.0460847479,
                                0.0246339162, 0.0010401847, 0.0115503766, -0.0111497219,
                                -0.0192824328, 0.0320188721, 0.00773205628, -0.0208691502,
                                0.00448987632, 0.0111011354, -0.0155910117],
                         1.25: [0.0209802276, 0.0625304164, 0.0345040989, -0.125863705,
                                0.232629059, -0.0297279279, -0.0329040874, 0.00668592036,
                                0.0387289096, 0.070335452, -0.00582482221, -0.0770213724,
                                -0.110044834, -0.158956436, 0.26900127]}
                numbers = iter(known.get(max_norm, []))
                result = {}
                for name, p in model.named_parameters():
                    values = [next(numbers, 0.0) for _ in range(p.numel())]
                    result[name] = torch.tensor(values).reshape(p.shape)
                return result
                """),
            ("values", "zero"),
            hidden_only="hard-coded",
        ),
    ],
    "q2_forward_rule": [
        wrong(
            "no jvp",
            _rule(with_jvp=False),
            "no_jvp",
            ["You must implement the jvp function", "jvp(ctx, x_t)"],
            not_says=["not answered"],
        ),
        wrong(
            "no vmap rule",
            _rule(rule="False"),
            "no_vmap_rule",
            ["does not have vmap support", "generate_vmap_rule = True"],
            breaks="set `generate_vmap_rule = True` in the class",
        ),
        wrong(
            "saved for backward only",
            _rule(setup="pass"),
            "save_for_forward",
            ["ctx.save_for_forward"],
            breaks="save what `jvp` needs with `ctx.save_for_forward(...)`",
        ),
        wrong(
            "saved for backward only, read by index",
            _rule(setup="pass", jvp=_jvp_body(
                "torch.exp(-ctx.saved_tensors[1]) * torch.cumsum(torch.exp(ctx.saved_tensors[0]) "
                "* x_t, dim=0)", unpack="pass")),
            "save_for_forward",
            ["ctx.save_for_forward"],
        ),
        wrong(
            "inputs kept on ctx as attributes, nothing saved for forward, J formed in jvp",
            _rule(setup="ctx.x, ctx.y = x, output", jvp="""
                  J = torch.tril(torch.exp(ctx.x[None, :] - ctx.y[:, None]))
                  return (J @ x_t,)"""),
            "save_for_forward",
            ["nothing was saved with ctx.save_for_forward", "not from attributes of ctx"],
            breaks="save what `jvp` needs with `ctx.save_for_forward(...)`, not as\nattributes "
            "of `ctx`",
        ),
        wrong(
            "saved for forward, but jvp reads attributes of ctx",
            _rule(setup="ctx.save_for_forward(x, output)\n        ctx.x, ctx.y = x, output",
                  jvp=_jvp_body("torch.exp(-ctx.y) * torch.cumsum(torch.exp(ctx.x) * x_t, "
                                "dim=0)", unpack="pass")),
            "save_for_forward",
            ["it did not read", "ctx.saved_tensors"],
            breaks="`jvp` reads it back from `ctx.saved_tensors`",
        ),
        wrong(
            "J^T x_t: the backward's formula",
            _rule(jvp=_jvp_body("torch.exp(x) * (x_t * torch.exp(-y)).flip(0).cumsum(0).flip(0)")),
            "transposed",
            ["J^T x_t", "j <= k"],
            breaks="returns the tangent of $y$: $J\\,x_t$",
        ),
        wrong(
            "the diagonal of J times x_t",
            _rule(jvp=_jvp_body("torch.exp(x - y) * x_t")),
            "diagonal",
            ["diagonal of J"],
        ),
        wrong(
            "a jvp that ignores the tangent",
            _rule(jvp=_jvp_body("torch.exp(-y) * torch.cumsum(torch.exp(x), dim=0)")),
            "ignores_tangent",
            ["ignores x_t"],
        ),
        wrong(
            "jvp by NumPy",
            _rule(jvp=_jvp_body("torch.from_numpy(np.exp(-y.numpy()) * np.cumsum(np.exp("
                                "x.numpy()) * x_t.numpy()))")),
            "jvp_not_torch",
            ["torch operations only"],
            breaks="write `jvp` with torch operations only",
        ),
        wrong(
            "jvp without a return",
            _rule(jvp=_jvp_body("None")),
            "jvp_none",
            ["returned None"],
        ),
        wrong(
            "jvp changes x_t in place",
            _rule(jvp=_jvp_body("torch.exp(-y) * torch.cumsum(x_t.mul_(torch.exp(x)), dim=0)")),
            "in_place",
            ["in place"],
        ),
        wrong(
            "the running sum without exp(-y)",
            _rule(jvp=_jvp_body("torch.cumsum(torch.exp(x) * x_t, dim=0)")),
            "unscaled",
            ["exp(-y_k)"],
        ),
        wrong(
            "the running sum in the backward's direction",
            _rule(jvp=_jvp_body("torch.exp(-y) * (torch.exp(x) * x_t).flip(0).cumsum(0)"
                                ".flip(0)")),
            "values",
            ["wrong values"],
        ),
        wrong(
            "the visible example's Jacobian, typed in",
            _rule(jvp=_jvp_body(
                "torch.tensor([[1, 0, 0, 0], [1 / 3, 2 / 3, 0, 0], [1 / 6, 1 / 3, 1 / 2, 0], "
                "[0.1, 0.2, 0.3, 0.4]], dtype=x_t.dtype) @ x_t if x_t.shape == (4,) else 0 * x_t")),
            ("values", "zero", "ignores_tangent"),
            hidden_only="hard-coded",
        ),
    ],
    "q3_gauss_newton": [
        wrong(
            "J v alone",
            _gn(result="along_v"),
            "jv",
            ["J v alone"],
            breaks="Return $J(x)^\\top (J(x)\\,v)$",
        ),
        wrong(
            "J^T v",
            _gn(result="pull_back(v)[0]"),
            "transposed",
            ["J^T v"],
        ),
        wrong(
            "J (J^T v)",
            function(_GN, """
                y, pull_back = torch.func.vjp(f, x)
                return torch.func.jvp(f, (x,), pull_back(v))[1]
                """),
            "j_jt",
            ["other order"],
        ),
        wrong(
            "the Hessian of |f|^2 / 2 times v",
            function(_GN, """
                def half_square(z):
                    return (f(z) ** 2).sum() / 2

                return torch.func.jvp(torch.func.grad(half_square), (x,), (v,))[1]
                """),
            "full_hessian",
            ["second-order term"],
        ),
        wrong(
            "the whole Jacobian by jacrev",
            function(_GN, """
                J = torch.func.jacrev(f)(x)
                return J.T @ (J @ v)
                """),
            "forms_j",
            ["out of memory", "2 TiB"],
            not_says=["Traceback"],
            breaks="without forming $J$",
        ),
        wrong(
            "the whole Jacobian by jacfwd",
            function(_GN, """
                J = torch.func.jacfwd(f)(x)
                return J.T @ (J @ v)
                """),
            "forms_j",
            ["formed J"],
            breaks="without forming $J$",
        ),
        wrong(
            "the whole Jacobian by torch.autograd.functional.jacobian, vectorized",
            function(_GN, """
                J = torch.autograd.functional.jacobian(f, x, vectorize=True)
                return J.T @ (J @ v)
                """),
            "forms_j",
            ["formed J"],
        ),
        wrong(
            "the whole Jacobian by torch.autograd.functional.jacobian, row by row",
            function(_GN, """
                J = torch.autograd.functional.jacobian(f, x)
                return J.T @ (J @ v)
                """),
            # its loop over 2**19 rows meets the time limit before the memory limit on a
            # loaded machine: either diagnosis names the mistake
            ("forms_j", "too_slow"),
        ),
        wrong(
            "J^T J v summed row by row, one vjp per output",
            function(_GN, """
                y, pull_back = torch.func.vjp(f, x)
                product = torch.zeros_like(x)
                for i in range(len(y)):
                    (row,) = pull_back(torch.nn.functional.one_hot(torch.tensor(i), len(y))
                                       .to(y.dtype))
                    product += row * (row @ v)
                return product
                """),
            "too_slow",
            ["more than 10 s", "one jvp"],
        ),
        wrong(
            "the tangent read after leaving dual_level",
            function(_GN, """
                from torch.autograd import forward_ad

                with forward_ad.dual_level():
                    y = f(forward_ad.make_dual(x, v))
                along_v = forward_ad.unpack_dual(y).tangent
                _, pull_back = torch.func.vjp(f, x)
                return pull_back(along_v)[0]
                """),
            "tangent_outside",
            ["dual_level", "inside the block"],
            not_says=["did your function return"],
        ),
        wrong(
            "the tuple of the vjp function",
            _gn(result="pull_back(along_v)"),
            "tuple",
            ["[0]"],
        ),
        wrong("no return", _gn(result="None"), "none", ["did your function return"]),
        wrong(
            "the gradient of |f|^2 differentiated: twice the product",
            _gn(result="2 * pull_back(along_v)[0]"),
            "factor",
            ["twice"],
        ),
        wrong(
            "v normalised",
            _gn(first="along_v = torch.func.jvp(f, (x,), (v / v.norm(),))[1]"),
            "values",
            ["wrong values"],
        ),
    ],
    "q4_jacobian_plan": [
        wrong("the choice reversed", _plan(tie=">"), "reversed", ["the other function"]),
        wrong(
            "a tie to jacfwd",
            _plan(tie="<="),
            "tie",
            ["choose 'jacrev'"],
            breaks='On a tie, choose `"jacrev"`',
        ),
        wrong(
            "a tie to jacfwd, counted with np.prod (NumPy integers, and 1.0 for ())",
            _plan(count="np.prod", tie="<="),
            "tie",
            ["choose 'jacrev'"],
            not_says=["whole number"],
        ),
        wrong("dimensions, not entries", _plan(count="len"), "dims", ["len(shape)"]),
        wrong(
            "the shape () taken as no entries",
            _plan(count="(lambda s: math.prod(s) if s else 0)"),
            "empty_shape",
            ["shape ()", "math.prod(()) is 1"],
            not_says=["len(shape)"],
            breaks="`()` is the shape of a single number",
        ),
        wrong(
            "chosen by dimensions, counted by entries",
            function(_PLAN, """
                entries_in, entries_out = math.prod(shapes[0]), math.prod(shapes[-1])
                if len(shapes[0]) < len(shapes[-1]):
                    return "jacfwd", entries_in
                return "jacrev", entries_out
                """),
            "dims_choice",
            ["len(shape)", "math.prod(shape)"],
        ),
        wrong("sizes added", _plan(count="sum"), "sum_of_sizes", ["product"]),
        wrong(
            "the other function's count",
            function(_PLAN, """
                entries_in, entries_out = math.prod(shapes[0]), math.prod(shapes[-1])
                if entries_in < entries_out:
                    return "jacfwd", entries_out
                return "jacrev", entries_in
                """),
            "other_count",
            ["the other function's"],
        ),
        wrong(
            "the entries of the Jacobian",
            function(_PLAN, """
                entries_in, entries_out = math.prod(shapes[0]), math.prod(shapes[-1])
                name = "jacfwd" if entries_in < entries_out else "jacrev"
                return name, entries_in * entries_out
                """),
            "entries",
            ["whole Jacobian"],
        ),
        wrong(
            "the smallest tensor of the chain",
            function(_PLAN, """
                entries_in, entries_out = math.prod(shapes[0]), math.prod(shapes[-1])
                name = "jacfwd" if entries_in < entries_out else "jacrev"
                return name, min(math.prod(s) for s in shapes)
                """),
            "intermediate",
            ["only the input's and the output's"],
        ),
        wrong(
            "the first size of each shape",
            _plan(count="(lambda s: s[0])"),
            "first_size",
            ["shape[0]"],
        ),
        wrong(
            "half the entries, a fraction",
            _plan(count="(lambda s: math.prod(s) / 2)"),
            "type",
            ["whole number"],
            breaks="a whole number",
        ),
        wrong(
            "the visible examples' answers, typed in",
            function(_PLAN, """
                known = {8: ("jacrev", 7), 5: ("jacfwd", 5), 9: ("jacrev", 1),
                         1: ("jacfwd", 1), 6: ("jacrev", 6), 10: ("jacrev", 4)}
                return known.get(math.prod(shapes[0]), ("jacrev", 1))
                """),
            ("values", "dims", "dims_choice", "first_size", "sum_of_sizes", "reversed",
             "other_count", "intermediate", "entries", "tie"),
            hidden_only="hard-coded",
        ),
    ],
}


#: Correct answers in other styles than the reference: each gets full marks.
RIGHT: dict[str, list[tuple[str, str]]] = {
    "q1_clipped_mean_grad": [
        (
            "a loop over the samples with torch.autograd.grad, a Python float factor",
            """\
def clipped_mean_grad(model, x, y, max_norm):
    params = list(model.parameters())
    names = [n for n, _ in model.named_parameters()]
    total = [torch.zeros_like(p) for p in params]
    for xi, yi in zip(x, y):
        loss = torch.nn.functional.cross_entropy(model(xi), yi)
        grads = torch.autograd.grad(loss, params)
        norm = torch.sqrt(sum((g ** 2).sum() for g in grads))
        scale = min(1.0, max_norm / norm.item())
        for t, g in zip(total, grads):
            t += scale * g
    return {n: t / len(x) for n, t in zip(names, total)}
""",
        ),
        (
            "clipped inside vmap, soft one-hot targets (num_classes=3), Opacus's norm + 1e-6",
            """\
def clipped_mean_grad(model, x, y, max_norm):
    from torch.func import functional_call, grad, vmap
    params = {k: v.detach() for k, v in model.named_parameters()}
    targets = torch.nn.functional.one_hot(y, 3).float()
    def clipped(p, xi, ti):
        def loss(p):
            return torch.nn.functional.cross_entropy(functional_call(model, p, (xi,)), ti)

        g = grad(loss)(p)
        norm = torch.linalg.vector_norm(torch.cat([t.reshape(-1) for t in g.values()]))
        c = torch.clamp(max_norm / (norm + 1e-6), max=1.0)
        return {k: t * c for k, t in g.items()}
    out = vmap(clipped, in_dims=(None, 0, 0))(params, x, targets)
    return {k: t.mean(0) for k, t in out.items()}
""",
        ),
        (
            "one weight copy per sample, batched matmuls, one backward()",
            """\
def clipped_mean_grad(model, x, y, max_norm):
    # the batched-weights way: one copy of every parameter per sample, one backward()
    n = len(x)
    names = [k for k, _ in model.named_parameters()]
    copies = {k: p.detach().unsqueeze(0).repeat(n, *[1] * p.dim()).requires_grad_(True)
              for k, p in model.named_parameters()}
    layers = [k[:-len(".weight")] for k in names if k.endswith(".weight")]
    h = x.unsqueeze(2)
    for i, layer in enumerate(layers):
        h = torch.bmm(copies[layer + ".weight"], h) + copies[layer + ".bias"].unsqueeze(2)
        if i < len(layers) - 1:
            h = torch.tanh(h)
    losses = torch.nn.functional.cross_entropy(h.squeeze(2), y, reduction="sum")
    losses.backward()
    g = {k: copies[k].grad for k in names}
    norms = torch.sqrt(sum(t.flatten(1).pow(2).sum(1) for t in g.values()))
    f = torch.clamp(max_norm / norms, max=1.0)
    return {k: (t * f.view(-1, *[1] * (t.dim() - 1))).mean(0) for k, t in g.items()}
""",
        ),
    ],
    "q2_forward_rule": [
        (
            "the output saved alone, exp(x) recovered from it, a loop over k",
            """\
class RunningLogSumExp(torch.autograd.Function):
    generate_vmap_rule = True
    @staticmethod
    def forward(x):
        return torch.from_numpy(np.logaddexp.accumulate(x.detach().cpu().numpy()))
    @staticmethod
    def setup_context(ctx, inputs, output):
        (x,) = inputs
        ctx.save_for_backward(x, output)
        ctx.save_for_forward(output)
    @staticmethod
    def backward(ctx, grad_y):
        x, y = ctx.saved_tensors
        return torch.exp(x) * (grad_y * torch.exp(-y)).flip(0).cumsum(0).flip(0)
    @staticmethod
    def jvp(ctx, x_t):
        (y,) = ctx.saved_tensors
        # exp(x_j - y_k) from y alone: exp(x_j) = exp(y_j) - exp(y_{j-1})
        ey = torch.exp(y)
        ex = ey - torch.cat([torch.zeros_like(ey[:1]), ey[:-1]])
        out = []
        for k in range(y.shape[0]):
            out.append((ex[: k + 1] * x_t[: k + 1]).sum() / ey[k])
        return torch.stack(out)
""",
        ),
    ],
    "q3_gauss_newton": [
        (
            "dual tensors, then torch.autograd.grad with grad_outputs",
            """\
def gauss_newton_product(f, x, v):
    import torch.autograd.forward_ad as fwAD
    with fwAD.dual_level():
        jv = fwAD.unpack_dual(f(fwAD.make_dual(x, v))).tangent
    xr = x.detach().requires_grad_(True)
    return torch.autograd.grad(f(xr), xr, grad_outputs=jv)[0]
""",
        ),
        (
            "torch.func.linearize, then vjp",
            """\
def gauss_newton_product(f, x, v):
    _, jvp_fn = torch.func.linearize(f, x)
    _, vjp_fn = torch.func.vjp(f, x)
    return vjp_fn(jvp_fn(v))[0]
""",
        ),
        (
            "torch.autograd.functional.jvp, then its vjp",
            """\
def gauss_newton_product(f, x, v):
    jv = torch.autograd.functional.jvp(f, x, v)[1]
    return torch.autograd.functional.vjp(f, x, jv)[1]
""",
        ),
        (
            "J v by the double-vjp trick, then a vjp",
            """\
def gauss_newton_product(f, x, v):
    # J v by the double-vjp trick: u -> J^T u is linear in u, and its vjp with v is J v
    xr = x.detach().requires_grad_(True)
    y = f(xr)
    u = torch.zeros_like(y, requires_grad=True)
    (jtu,) = torch.autograd.grad(y, xr, grad_outputs=u, create_graph=True)
    (jv,) = torch.autograd.grad(jtu, u, grad_outputs=v, retain_graph=True)
    return torch.autograd.grad(y, xr, grad_outputs=jv)[0]
""",
        ),
    ],
    "q4_jacobian_plan": [
        (
            "np.prod: NumPy integers, and 1.0 for the shape ()",
            """\
def jacobian_plan(shapes):
    a, b = np.prod(shapes[0]), np.prod(shapes[-1])
    return ("jacfwd", a) if a < b else ("jacrev", b)
""",
        ),
        (
            "torch.tensor(shape).prod(): tensors of one integer",
            """\
def jacobian_plan(shapes):
    a, b = torch.tensor(shapes[0]).prod(), torch.tensor(shapes[-1]).prod()
    return ("jacfwd", a) if a < b else ("jacrev", b)
""",
        ),
    ],
}
