"""Typical wrong answers to assignment 08 A real training loop: fix it, freeze a layer, Newton."""

from __future__ import annotations

from autograd_course.testkit.answers import Wrong, function, wrong

_TRAIN = "def train(model, x, y, lr, steps):"
_FREEZE = "def freeze(model, name):"
_NEWTON = "def newton_step(f, x):"


def _train(before: str = "optimizer.zero_grad()", between: str = "",
           append: str = "history.append(loss.item())", result: str = "history") -> str:
    return function(
        _TRAIN,
        f"""
        optimizer = torch.optim.SGD(model.parameters(), lr=lr)
        history = []
        for _ in range(steps):
            {before}
            loss = torch.nn.functional.mse_loss(model(x), y)
            loss.backward()
            {between}
            optimizer.step()
            {append}
        return {result}
        """,
    )


def _newton(result: str = "x - d1 / d2", create_graph: str = ", create_graph=True") -> str:
    return function(
        _NEWTON,
        f"""
        x = torch.tensor(x, dtype=torch.float64, requires_grad=True)
        (d1,) = torch.autograd.grad(f(x), x{create_graph})
        (d2,) = torch.autograd.grad(d1, x)
        return ({result}).item()
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
                    loss = torch.nn.functional.mse_loss(model(x), y)
                    loss.backward()
                    optimizer.step()
                    history.append(loss.item())
                return history
                """),
            "zero",
            ["first loss"],
            hidden_only=True,
        ),
        wrong(
            "the given loop, unchanged",
            _train(before="pass", append="history.append(loss)"),
            "graph",
            ["graph", "loss.item()"],
        ),
        wrong(
            "history fixed, gradients never cleared",
            _train(before="pass"),
            "accumulated",
            ["zero_grad", "never cleared"],
        ),
        wrong(
            "zero_grad added, history of tensors",
            _train(append="history.append(loss)"),
            "graph",
            ["grad_fn", "loss.item()"],
        ),
        wrong(
            "zero_grad between backward() and step()",
            _train(before="pass", between="optimizer.zero_grad()"),
            "no_update",
            ["did not change", "zero_grad(), loss, backward(), step()"],
        ),
        wrong(
            "the loss after each step",
            _train(append="history.append(torch.nn.functional.mse_loss(model(x), y).item())"),
            "after_step",
            ["before optimizer.step()"],
        ),
        wrong(
            "a running total instead of the history",
            _train(append="history.append(loss.item())", result="sum(history)"),
            "type",
            ["list"],
        ),
    ],
    "q2_freeze": [
        wrong(
            "the whole model",
            function(_FREEZE, "model.requires_grad_(False)"),
            "froze_all",
            ["every parameter", "only"],
        ),
        wrong(
            ".grad = None instead",
            function(_FREEZE, """
                for p in getattr(model, name).parameters():
                    p.grad = None
                """),
            "not_frozen",
            [".grad = None", "requires_grad_(False)"],
        ),
        wrong(
            "detach()",
            function(_FREEZE, """
                for p in getattr(model, name).parameters():
                    p = p.detach()
                """),
            "not_frozen",
            ["detach()", "requires_grad_(False)"],
        ),
        wrong(
            "model.eval()",
            function(_FREEZE, "model.eval()"),
            "not_frozen",
            ["still require grad"],
        ),
        wrong(
            "the weight only",
            function(_FREEZE, "getattr(model, name).weight.requires_grad_(False)"),
            "partly",
            ["bias"],
        ),
        wrong(
            "every other layer",
            function(_FREEZE, """
                for child_name, child in model.named_children():
                    if child_name != name:
                        child.requires_grad_(False)
                """),
            "wrong_layer",
            ["other layers are frozen"],
        ),
        wrong(
            "every layer up to the named one",
            function(_FREEZE, """
                for child_name, child in model.named_children():
                    child.requires_grad_(False)
                    if child_name == name:
                        break
                """),
            "other_frozen",
            ["other layers too"],
            hidden_only=True,
        ),
        wrong(
            "parameter names that start with the name",
            function(_FREEZE, """
                for parameter_name, p in model.named_parameters():
                    if parameter_name.startswith(name):
                        p.requires_grad_(False)
                """),
            "other_frozen",
            ["other layers too"],
            hidden_only=True,
        ),
    ],
    "q3_newton_step": [
        wrong(
            "finite differences instead of autograd",
            function(_NEWTON, """
                h = 1e-2
                v = [float(f(x + k * h)) for k in (-2, -1, 0, 1, 2)]
                d1 = (v[0] - 8 * v[1] + 8 * v[3] - v[4]) / (12 * h)
                d2 = (-v[0] + 16 * v[1] - 30 * v[2] + 16 * v[3] - v[4]) / (12 * h * h)
                return x - d1 / d2
                """),
            "no_graph",
            ["made-up gradient", "called on a float"],
            hidden_only=True,
        ),
        wrong(
            "no create_graph=True",
            _newton(create_graph=""),
            "no_graph",
            ["create_graph=True"],
        ),
        wrong("uphill", _newton(result="x + d1 / d2"), "sign", ["against"]),
        wrong("upside down", _newton(result="x - d2 / d1"), "inverted", ["upside down"]),
        wrong("an SGD step", _newton(result="x - 0.05 * d1"), "gradient_step", ["f''(x)"]),
        wrong("the step alone", _newton(result="-d1 / d2"), "step_only", ["add it to x"]),
        wrong(
            "a tensor",
            function(_NEWTON, """
                x = torch.tensor(x, dtype=torch.float64, requires_grad=True)
                (d1,) = torch.autograd.grad(f(x), x, create_graph=True)
                (d2,) = torch.autograd.grad(d1, x)
                return (x - d1 / d2).detach()
                """),
            "type",
            [".item()"],
        ),
        wrong(
            "x without requires_grad",
            function(_NEWTON, """
                x = torch.tensor(x, dtype=torch.float64)
                (d1,) = torch.autograd.grad(f(x), x, create_graph=True)
                (d2,) = torch.autograd.grad(d1, x)
                return (x - d1 / d2).item()
                """),
            "no_graph",
            ["x must require grad"],
        ),
    ],
}
