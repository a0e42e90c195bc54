"""Typical wrong answers to assignment 08 A real training loop: accumulate, freeze, Newton."""

from __future__ import annotations

from autograd_course.testkit.answers import Wrong, function, wrong

_TRAIN = "def train(model, x, y, lr, steps, parts):"
_FREEZE = "def freeze(model, name):"
_NEWTON = "def newton_step(f, x):"


def _train(before: str = "optimizer.zero_grad()", inside: str = "",
           loss: str = "torch.nn.functional.mse_loss(model(xb), yb) / parts",
           add: str = "total += loss.item()", result: str = "history") -> str:
    """The reference loop of question 1 with one of its lines replaced."""
    return function(
        _TRAIN,
        f"""
        optimizer = torch.optim.SGD(model.parameters(), lr=lr)
        history = []
        for _ in range(steps):
            {before}
            total = 0.0
            for xb, yb in zip(x.chunk(parts), y.chunk(parts), strict=True):
                {inside}
                loss = {loss}
                loss.backward()
                {add}
            optimizer.step()
            history.append(total)
        return {result}
        """,
    )


def _freeze(*lines: str) -> str:
    """A freeze that runs ``lines`` on each parameter ``p`` of the layer."""
    body = "\n".join(f"    {line}" for line in lines)
    return function(_FREEZE, f"for p in getattr(model, name).parameters():\n{body}")


def _newton(result: str = "x - torch.linalg.solve(H, g)", create_graph: str = ", create_graph=True",
            start: str = "x = x.detach().requires_grad_(True)",
            hessian: str = "torch.stack([torch.autograd.grad(g_i, x, retain_graph=True)[0] "
            "for g_i in g])") -> str:
    """The reference Newton step of question 3 with one of its lines replaced."""
    return function(
        _NEWTON,
        f"""
        {start}
        (g,) = torch.autograd.grad(f(x), x{create_graph})
        H = {hessian}
        return ({result}).detach()
        """,
    )


WRONG: dict[str, list[Wrong]] = {
    "q1_fix_loop": [
        wrong(
            "a long run that plants the targets instead of training",
            function(_TRAIN, """
                optimizer = torch.optim.SGD(model.parameters(), lr=lr)
                if steps > 10:
                    with torch.no_grad():
                        model.out.weight.zero_()
                    model.out.bias = torch.nn.Parameter(y.detach().clone())
                    return [0.0] * steps
                history = []
                for _ in range(steps):
                    optimizer.zero_grad()
                    total = 0.0
                    for xb, yb in zip(x.chunk(parts), y.chunk(parts), strict=True):
                        loss = torch.nn.functional.mse_loss(model(xb), yb) / parts
                        loss.backward()
                        total += loss.item()
                    optimizer.step()
                    history.append(total)
                return history
                """),
            "zero",
            ["first loss"],
            hidden_only="gaming",
        ),
        wrong(
            "the given loop, unchanged",
            _train(before="pass", inside="optimizer.zero_grad()",
                   loss="torch.nn.functional.mse_loss(model(xb), yb)", add="total += loss"),
            "graph",
            ["graph", "loss.item()"],
        ),
        wrong(
            "history fixed, zero_grad still inside the chunk loop",
            _train(before="pass", inside="optimizer.zero_grad()"),
            "last_chunk",
            ["last chunk", "once per step"],
            breaks='each step equal to one full-batch SGD step',
        ),
        wrong(
            "history fixed, zero_grad inside, no division",
            _train(before="pass", inside="optimizer.zero_grad()",
                   loss="torch.nn.functional.mse_loss(model(xb), yb)"),
            "last_chunk",
            ["last chunk"],
        ),
        wrong(
            "the chunks' losses not divided by parts",
            _train(loss="torch.nn.functional.mse_loss(model(xb), yb)"),
            "undivided",
            ["times too far", "divide each chunk's loss by parts"],
            breaks='each step equal to one full-batch SGD step',
        ),
        wrong(
            "the step divided, the history not",
            _train(add="total += loss.item() * parts"),
            "undivided",
            ["sum of the chunks' losses"],
        ),
        wrong(
            "gradients never cleared",
            _train(before="pass"),
            "accumulated",
            ["zero_grad", "never cleared"],
        ),
        wrong(
            "zero_grad between the chunks and step()",
            _train(before="pass").replace(
                "        optimizer.step()",
                "        optimizer.zero_grad()\n        optimizer.step()"),
            "no_update",
            ["did not change"],
        ),
        wrong(
            "a history of tensors",
            _train(add="total += loss"),
            "graph",
            ["grad_fn", "loss.item()"],
            breaks='a history of Python floats',
        ),
        wrong(
            "the loss after each step",
            _train().replace(
                "history.append(total)",
                "history.append(torch.nn.functional.mse_loss(model(x), y).item())"),
            "after_step",
            ["before optimizer.step()"],
        ),
        wrong(
            "a running total instead of the history",
            _train(result="sum(history)"),
            "type",
            ["list"],
        ),
    ],
    "q2_freeze": [
        wrong(
            "requires_grad_(False) alone, as when freezing before training",
            _freeze("p.requires_grad_(False)"),
            "grad_kept",
            ["momentum", "p.grad = None"],
            breaks='from then\non its parameters must not change, at any later step',
        ),
        wrong(
            ".grad zeroed instead of emptied",
            _freeze("p.requires_grad_(False)", "p.grad.zero_()"),
            "grad_zeros",
            ["momentum", "None"],
        ),
        wrong(
            ".grad = None alone",
            _freeze("p.grad = None"),
            "not_frozen",
            ["requires_grad_(False)"],
        ),
        wrong(
            "detach()",
            _freeze("p = p.detach()"),
            "not_frozen",
            ["requires_grad_(False)"],
        ),
        wrong(
            "the whole model",
            function(_FREEZE, """
                for p in model.parameters():
                    p.requires_grad_(False)
                    p.grad = None
                """),
            "froze_all",
            ["every layer", "only"],
            breaks='Freeze only the layer `name`',
        ),
        wrong(
            "parameter names that start with the name",
            function(_FREEZE, """
                for parameter_name, p in model.named_parameters():
                    if parameter_name.startswith(name):
                        p.requires_grad_(False)
                        p.grad = None
                """),
            "other_frozen",
            ["hidden2", "getattr(model, name)"],
            breaks='Freeze only the layer `name`',
        ),
        wrong(
            "the weight only",
            function(_FREEZE, """
                weight = getattr(model, name).weight
                weight.requires_grad_(False)
                weight.grad = None
                """),
            "values",
            ["frozen layer"],
        ),
        wrong(
            "model.eval()",
            function(_FREEZE, "model.eval()"),
            "not_frozen",
            ["requires_grad"],
        ),
    ],
    "q3_newton_step": [
        wrong(
            "finite differences instead of autograd",
            function(_NEWTON, """
                h = 1e-3
                n = len(x)
                e = torch.eye(n, dtype=torch.float64) * h
                g = torch.stack([(f(x + e[i]) - f(x - e[i])) / (2 * h) for i in range(n)])
                H = torch.stack([torch.stack([
                    (f(x + e[i] + e[j]) - f(x + e[i] - e[j]) - f(x - e[i] + e[j])
                     + f(x - e[i] - e[j])) / (4 * h * h) for j in range(n)]) for i in range(n)])
                return x - torch.linalg.solve(H, g)
                """),
            ("values", "float32"),
            ["finite differences", "autograd"],
            breaks='Compute $g$ and $H$\nwith autograd',
        ),
        wrong(
            "H by finite differences of the autograd gradient",
            function(_NEWTON, """
                x = x.detach()

                def gradient_at(p):
                    p = p.detach().requires_grad_(True)
                    return torch.autograd.grad(f(p), p)[0]

                h = 1e-5
                g = gradient_at(x)
                e = torch.eye(len(x), dtype=torch.float64) * h
                H = torch.stack([(gradient_at(x + e[i]) - gradient_at(x - e[i])) / (2 * h)
                                 for i in range(len(x))])
                return x - torch.linalg.solve(H, g)
                """),
            "not_autograd",
            ["finite differences of the gradient"],
            breaks="Compute $g$ and $H$\nwith autograd",
        ),
        wrong(
            "no create_graph=True",
            _newton(create_graph=""),
            "no_graph",
            ["create_graph=True"],
        ),
        wrong("uphill", _newton(result="x + torch.linalg.solve(H, g)"), "sign", ["against"]),
        wrong("a gradient step", _newton(result="x - g"), "gradient_step", ["solves"]),
        wrong("the step alone", _newton(result="-torch.linalg.solve(H, g)"), "step_only",
              ["add it to x"]),
        wrong("multiplied by H", _newton(result="x - H @ g"), "multiplied", ["divides by H"]),
        wrong(
            "the diagonal of H only",
            _newton(result="x - g / torch.diagonal(H)"),
            "diagonal",
            ["mixed second derivatives"],
        ),
        wrong(
            "the gradient of g.sum() as the second derivative",
            _newton(hessian="torch.autograd.grad(g.sum(), x)[0]", result="x - g / H"),
            "row_sums",
            ["g.sum()", "row by row"],
        ),
        wrong(
            "float32",
            _newton(start="x = x.detach().float().requires_grad_(True)",
                    result="(x - torch.linalg.solve(H, g)).double()"),
            "float32",
            ["float32", "float64"],
            breaks='Compute in float64 throughout',
        ),
        wrong(
            "a float32 result",
            _newton(result="(x - torch.linalg.solve(H, g)).float()"),
            "dtype",
            ["float64"],
            breaks='as a 1-D float64 tensor',
        ),
        wrong(
            "x without requires_grad",
            _newton(start="x = x.detach()"),
            "no_graph",
            ["x must require grad"],
        ),
    ],
}
