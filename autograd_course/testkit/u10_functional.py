"""Typical wrong answers to assignment 10 torch.func: per-sample gradients, hvp, jvp, plans."""

from __future__ import annotations

from autograd_course.testkit.answers import Wrong, function, wrong

_PER_SAMPLE = "def per_sample_grads(model, x, y):"
_HVP = "def hvp(f, x, v):"
_JVP = "def directional_derivative(f, x, v):"
_PLAN = "def jacobian_plan(shapes):"


def _per_sample(loss: str = "torch.nn.functional.cross_entropy(logits, label)",
                logits: str = "torch.func.functional_call(model, params, (sample,))",
                result: str = "return each(params, x, y)") -> str:
    """The reference of question 1 with the loss of one sample, its logits or the line that
    returns the gradients (``each(params, x, y)``) replaced."""
    return function(
        _PER_SAMPLE,
        f"""
        params = {{name: p.detach() for name, p in model.named_parameters()}}

        def loss_of_one(params, sample, label):
            logits = {logits}
            return {loss}

        each = torch.func.vmap(torch.func.grad(loss_of_one), in_dims=(None, 0, 0))
        {result}
        """,
    )


def _loop(clear: str = "model.zero_grad()", keep: str = "p.grad.clone()") -> str:
    """A loop over the samples, with backward() into .grad."""
    return function(
        _PER_SAMPLE,
        f"""
        rows = {{name: [] for name, _ in model.named_parameters()}}
        for sample, label in zip(x, y, strict=True):
            {clear}
            loss = torch.nn.functional.cross_entropy(model(sample), label)
            loss.backward()
            for name, p in model.named_parameters():
                rows[name].append({keep})
        return {{name: torch.stack(r) for name, r in rows.items()}}
        """,
    )


def _batch(reduction: str = "mean", result: str = "{k: g.expand(len(y), *g.shape) "
           "for k, g in grads.items()}") -> str:
    """One gradient of the whole batch's loss, returned in some form."""
    return function(
        _PER_SAMPLE,
        f"""
        params = {{name: p.detach() for name, p in model.named_parameters()}}

        def batch_loss(params):
            logits = torch.func.functional_call(model, params, (x,))
            return torch.nn.functional.cross_entropy(logits, y, reduction="{reduction}")

        grads = torch.func.grad(batch_loss)(params)
        return {result}
        """,
    )


def _hvp(result: str = "along_v", gradient: str = "torch.func.grad(f)", start: str = "",
         point: str = "(x,), (v,)") -> str:
    """The reference of question 2 with one of its lines replaced."""
    return function(
        _HVP,
        f"""
        {start or "pass"}
        gradient = {gradient}
        _, along_v = torch.func.jvp(gradient, {point})
        return {result}
        """,
    )


def _double_backward(create_graph: str = ", create_graph=True", second: str = "g @ v",
                     result: str = "hv") -> str:
    """H v by double backward, with one of its lines replaced."""
    return function(
        _HVP,
        f"""
        x = x.detach().requires_grad_(True)
        (g,) = torch.autograd.grad(f(x), x{create_graph})
        (hv,) = torch.autograd.grad({second}, x)
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


WRONG: dict[str, list[Wrong]] = {
    "q1_per_sample_grads": [
        wrong(
            "the gradient of the batch's mean loss, repeated",
            _batch(),
            "mean_repeated",
            ["mean loss", "one sample alone"],
            breaks="the gradient of the cross-entropy of sample i alone",
        ),
        wrong(
            "the gradient of the batch's summed loss, repeated",
            _batch(reduction="sum"),
            "sum_repeated",
            ["summed loss"],
        ),
        wrong(
            "one gradient for the whole batch, of the parameter's shape",
            _batch(result="grads"),
            "one_gradient",
            ["shape of the parameter", "(n, *param.shape)"],
            breaks="of shape (n, *param.shape)",
        ),
        wrong(
            "a loop that never clears .grad",
            _loop(clear="pass"),
            "accumulated",
            ["never clears", "samples 0 to i"],
        ),
        wrong(
            "a loop that appends p.grad itself, never cleared",
            _loop(clear="pass", keep="p.grad"),
            "sum_repeated",
            ["appends p.grad"],
        ),
        wrong(
            "a loop that appends p.grad itself, zeroed in place",
            _loop(clear="model.zero_grad(set_to_none=False)", keep="p.grad"),
            "last_repeated",
            ["last sample", "p.grad.clone()"],
        ),
        wrong(
            "no return",
            _per_sample(result="grads = each(params, x, y)"),
            "none",
            ["is None: did your function return its result?"],
        ),
        wrong(
            "one_hot(y) without num_classes, by hand",
            function(_PER_SAMPLE, """
                layers = [m for m in model if isinstance(m, torch.nn.Linear)]
                names = [n for n, m in model.named_children() if isinstance(m, torch.nn.Linear)]
                hs = [x]
                with torch.no_grad():
                    for i, layer in enumerate(layers):
                        z = layer(hs[-1])
                        hs.append(torch.tanh(z) if i < len(layers) - 1 else z)
                    d = torch.softmax(hs[-1], 1) - torch.nn.functional.one_hot(y).float()
                    grads = {}
                    for i in reversed(range(len(layers))):
                        grads[f"{names[i]}.weight"] = d[:, :, None] * hs[i][:, None, :]
                        grads[f"{names[i]}.bias"] = d
                        d = (d @ layers[i].weight) * (1 - hs[i] ** 2)
                return grads
                """),
            "one_hot",
            ["num_classes=3", "0 or 1"],
        ),
        wrong(
            "the layers hidden, hidden2 and out, typed in",
            function(_PER_SAMPLE, """
                names = ["hidden", "hidden2", "out"] if hasattr(model, "hidden2") else [
                    "hidden", "out"]
                layers = [getattr(model, name) for name in names]
                hs = [x]
                with torch.no_grad():
                    for i, layer in enumerate(layers):
                        z = layer(hs[-1])
                        hs.append(torch.tanh(z) if i < len(layers) - 1 else z)
                    d = torch.softmax(hs[-1], 1) - torch.nn.functional.one_hot(y, 3).float()
                    grads = {}
                    for i in reversed(range(len(layers))):
                        grads[f"{names[i]}.weight"] = d[:, :, None] * hs[i][:, None, :]
                        grads[f"{names[i]}.bias"] = d
                        d = (d @ layers[i].weight) * (1 - hs[i] ** 2)
                return grads
                """),
            "raised",
            ["AttributeError", "hidden"],
            breaks="or another stack of `nn.Linear` layers",
        ),
        wrong(
            "each sample's loss divided by n",
            _per_sample(loss="torch.nn.functional.cross_entropy(logits, label) / len(y)"),
            "divided_by_n",
            ["not divided by the batch size"],
        ),
        wrong(
            "model(sample) instead of functional_call",
            _per_sample(logits="model(sample)"),
            "functional_call",
            ["all zeros", "functional_call"],
        ),
        wrong(
            "nll_loss of the logits",
            _per_sample(loss="torch.nn.functional.nll_loss(logits.unsqueeze(0), "
                        "label.unsqueeze(0))"),
            "nll_on_logits",
            ["log-probabilities", "cross_entropy"],
        ),
        wrong(
            "a softmax before cross_entropy",
            _per_sample(loss="torch.nn.functional.cross_entropy(torch.softmax(logits, 0), "
                        "label)"),
            "softmax_twice",
            ["twice"],
        ),
        wrong(
            "the names of make_model's parameters, typed in",
            _per_sample(result="return {k: g for k, g in each(params, x, y).items() if k in "
                        "('hidden.weight', 'hidden.bias', 'out.weight', 'out.bias')}"),
            "missing",
            ["hidden2", "named_parameters"],
            breaks="one entry per parameter of `model`, named as\n`model.named_parameters()`",
        ),
        wrong(
            "the weights only",
            _per_sample(result="return {k: g for k, g in each(params, x, y).items() "
                        "if k.endswith('weight')}"),
            "missing",
            ["bias"],
        ),
        wrong(
            "each sample's loss, not its gradient",
            function(_PER_SAMPLE, """
                losses = torch.nn.functional.cross_entropy(model(x), y, reduction="none")
                return {name: losses.detach() for name, _ in model.named_parameters()}
                """),
            "shape",
            ["one number per sample"],
        ),
        wrong(
            "a tuple of the gradients",
            _per_sample(result="return tuple(each(params, x, y).values())"),
            "type",
            ["dict"],
        ),
        wrong(
            "float64 gradients",
            _per_sample(result="return {k: g.double() for k, g in each(params, x, y).items()}"),
            "dtype",
            ["float32"],
            breaks="each a float32 tensor",
        ),
    ],
    "q2_hvp": [
        wrong("the gradient", _hvp(result="_"), "gradient", ["gradient g of f"]),
        wrong("g * v", _hvp(result="_ * v"), "g_times_v", ["entry by entry"]),
        wrong(
            "the gradient of g.sum(), times v",
            _double_backward(second="g.sum()", result="hv * v"),
            "row_sums",
            ["row sums", "g @ v"],
        ),
        wrong(
            "the gradient of g.sum()",
            _double_backward(second="g.sum()"),
            "row_sums",
            ["H 1"],
        ),
        wrong(
            "the diagonal of the Hessian times v",
            function(_HVP, "return torch.func.hessian(f)(x).diagonal() * v"),
            "diagonal",
            ["mixed second derivatives"],
        ),
        wrong(
            "x and v swapped",
            _hvp(point="(v,), (x,)"),
            "swapped",
            ["swapped"],
        ),
        wrong(
            "no create_graph=True",
            _double_backward(create_graph=""),
            "no_graph",
            ["create_graph=True"],
        ),
        wrong(
            "g · v, a single number",
            function(_HVP, """
                x = x.detach().requires_grad_(True)
                (g,) = torch.autograd.grad(f(x), x)
                return g @ v
                """),
            "shape",
            ["single number", "n numbers"],
            not_says=["derivative of f along v"],
            breaks="as a 1-D float64 tensor of $n$ numbers",
        ),
        wrong(
            "v · H v, a single number",
            function(_HVP, "return v @ torch.func.hessian(f)(x) @ v"),
            "shape",
            ["single number", "n numbers"],
        ),
        wrong(
            "x.grad after torch.autograd.grad (None)",
            function(_HVP, """
                x = x.detach().requires_grad_(True)
                (g,) = torch.autograd.grad(f(x), x, create_graph=True)
                torch.autograd.grad(g @ v, x)
                return x.grad
                """),
            "none",
            ["is None: did your function return its result?"],
        ),
        wrong("no return", _hvp(result="None"), "none", ["did your function return"]),
        wrong(
            "one number too many",
            _hvp(result="torch.cat([along_v, along_v[:1]])"),
            "shape",
            ["wrong shape"],
        ),
        wrong(
            "all zeros",
            function(_HVP, "return torch.zeros_like(x)"),
            "zero",
            ["all zeros"],
            not_says=["H 1"],
        ),
        wrong(
            "the pair of torch.autograd.functional.hvp",
            function(_HVP, "return torch.autograd.functional.hvp(f, x, v)"),
            "pair",
            ["H v alone"],
        ),
        wrong(
            "finite differences of the autograd gradient",
            function(_HVP, """
                def gradient_at(p):
                    p = p.detach().requires_grad_(True)
                    return torch.autograd.grad(f(p), p)[0]

                h = 1e-6
                return (gradient_at(x + h * v) - gradient_at(x - h * v)) / (2 * h)
                """),
            ("values", "float32", "not_autograd"),
            ["autograd"],
            breaks="computed with autograd",
        ),
        wrong(
            "computed in float32",
            _hvp(start="x, v = x.float(), v.float()", result="along_v.double()"),
            "float32",
            ["float32", "float64"],
            breaks="Compute in float64 throughout",
        ),
        wrong(
            "a float32 result",
            _hvp(result="along_v.float()"),
            "dtype",
            ["float64"],
            breaks="as a 1-D float64 tensor",
        ),
    ],
    "q3_directional_derivative": [
        wrong(
            "the hidden functions told apart by name, their parameters read from defaults",
            function(_JVP, """
                if f.__name__ == "made_up_slope":  # sin(x) + k (x^2 - x^2.detach())
                    k = f.__defaults__[0]  # the drawn parameter, once carried by the function
                    return torch.cos(x) * v + 2 * k * x * v
                return torch.func.jvp(f, (x,), (v,))[1]
                """),
            "raised",
            ["TypeError"],
            hidden_only="gaming",  # the hidden functions carry nothing drawn to read
        ),
        wrong(
            "J^T v by vjp",
            function(_JVP, """
                _, pull_back = torch.func.vjp(f, x)
                return pull_back(v)[0]
                """),
            "transposed",
            ["J^T v", "forward mode"],
            breaks="computed by forward mode",
        ),
        wrong(
            "J^T v by torch.autograd.grad",
            function(_JVP, """
                x = x.detach().requires_grad_(True)
                return torch.autograd.grad(f(x), x, grad_outputs=v)[0]
                """),
            "transposed",
            ["vector-Jacobian product"],
        ),
        wrong(
            "the whole Jacobian by jacrev, times v",
            function(_JVP, "return torch.func.jacrev(f)(x) @ v"),
            "reverse_mode",
            ["forward mode only", "jacrev"],
            breaks="computed by forward mode",
        ),
        wrong(
            "torch.autograd.functional.jvp (two reverse passes)",
            function(_JVP, "return torch.autograd.functional.jvp(f, x, v)[1]"),
            "reverse_mode",
            ["two reverse passes"],
            breaks="computed by forward mode",
        ),
        wrong(
            "reverse mode, or finite differences where it fails",
            function(_JVP, """
                try:
                    return torch.autograd.functional.jvp(f, x, v)[1]
                except RuntimeError:
                    def slope(h):
                        return (f(x + h * v) - f(x - h * v)) / (2 * h)

                    return (4 * slope(5e-4) - slope(1e-3)) / 3  # Richardson
                """),
            "not_autograd",
            ["finite differences", "forward mode only"],
            breaks="computed by forward mode",
        ),
        wrong("no return", function(_JVP, "jv = torch.func.jvp(f, (x,), (v,))[1]"), "none",
              ["is None: did your function return its result?"]),
        wrong(
            "one number too many",
            function(_JVP, """
                jv = torch.func.jvp(f, (x,), (v,))[1]
                return torch.cat([jv, jv[:1]])
                """),
            "shape",
            ["wrong shape"],
        ),
        wrong(
            "the value f(x)",
            function(_JVP, "return torch.func.jvp(f, (x,), (v,))[0]"),
            "primal",
            ["the value"],
        ),
        wrong(
            "the pair of torch.func.jvp",
            function(_JVP, "return torch.func.jvp(f, (x,), (v,))"),
            "pair",
            ["J v alone"],
        ),
        wrong(
            "v normalised",
            function(_JVP, "return torch.func.jvp(f, (x,), (v / v.norm(),))[1]"),
            "normalised",
            ["normalised"],
            breaks="do not normalise it",
        ),
        wrong(
            "finite differences",
            function(_JVP, """
                h = 1e-6
                return (f(x + h * v) - f(x - h * v)) / (2 * h)
                """),
            ("values", "float32", "not_autograd"),
            ["finite differences"],
            breaks="compute $J\\,v$ with autograd",
        ),
        wrong(
            "computed in float32",
            function(_JVP, "return torch.func.jvp(f, (x.float(),), (v.float(),))[1].double()"),
            "float32",
            ["float32"],
            breaks="Compute in float64\nthroughout",
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
        wrong("dimensions, not entries", _plan(count="len"), "dims", ["len(shape)"]),
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
            "a tensor count",
            _plan(count="(lambda s: torch.tensor(s).prod())"),
            "type",
            ["int"],
            breaks="`passes` (an int)",
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
