"""Typical wrong answers to assignment 05 Gradient descent: by hand, and with torch.optim.SGD."""

from __future__ import annotations

from autograd_course.testkit.answers import Wrong, function, wrong

_STEP = "def gd_step(x, f, lr):"
_TABLE = "def sgd_table(x0, lr, steps):"
_MIN = "def minimise(f, x0, lr, tol, max_steps=1000):"


def _table(zero_grad: str = "optimizer.zero_grad()", row: str = "function(x)",
           append: str = "rows.append([x.item(), ({row}).item()])") -> str:
    return function(
        _TABLE,
        f"""
        x = torch.tensor(x0, requires_grad=True)
        optimizer = torch.optim.SGD([x], lr=lr)
        rows = []
        for _ in range(steps):
            {zero_grad}
            loss = function(x)
            loss.backward()
            optimizer.step()
            with torch.no_grad():
                {append}
        return torch.tensor(rows) if isinstance(rows[0], list) else torch.stack(rows)
        """.replace("{row}", row),
    )


def _minimise(count: str = "steps", stop: str = "break", to_float: str = "x.item()",
              dtype: str = ", dtype=torch.float64") -> str:
    return function(
        _MIN,
        f"""
        x = torch.tensor(x0{dtype}, requires_grad=True)
        optimizer = torch.optim.SGD([x], lr=lr)
        steps = 0
        while steps < max_steps:
            steps += 1
            optimizer.zero_grad()
            before = f(x)
            before.backward()
            optimizer.step()
            with torch.no_grad():
                after = f(x)
            if abs(after.item() - before.item()) < tol:
                {stop}
        return {to_float}, {count}
        """,
    )


WRONG: dict[str, list[Wrong]] = {
    "q1_gd_step": [
        wrong(
            "uphill",
            function(_STEP, """
                f(x).backward()
                with torch.no_grad():
                    x += lr * x.grad
                x.grad = None
                return x
                """),
            "sign",
            ["sign", "against the gradient"],
        ),
        wrong(
            "never clears x.grad",
            function(_STEP, """
                f(x).backward()
                with torch.no_grad():
                    x -= lr * x.grad
                return x
                """),
            "accumulated",
            ["not cleared"],
            breaks='clear `x.grad`',
        ),
        wrong(
            "x = x - lr * grad",
            function(_STEP, """
                f(x).backward()
                x = x - lr * x.grad
                return x
                """),
            "in_place",
            ["did not change", "in place"],
            breaks='**in place**',
        ),
        wrong(
            "x = x - lr * grad under no_grad",
            function(_STEP, """
                f(x).backward()
                with torch.no_grad():
                    x = x - lr * x.grad
                return x
                """),
            "in_place",
            ["did not change", "in place"],
        ),
        wrong(
            "a new leaf with the stepped values",
            function(_STEP, """
                f(x).backward()
                with torch.no_grad():
                    new = (x - lr * x.grad).requires_grad_(True)
                return new
                """),
            "in_place",
            ["did not change", "x -= lr * x.grad"],
        ),
    ],
    "q2_sgd_table": [
        wrong(
            "no zero_grad()",
            _table(zero_grad="pass"),
            "accumulated",
            ["zero_grad"],
            breaks='Each step: `optimizer.zero_grad()`',
        ),
        wrong("f before the step", _table(row="loss"), "f_before_step", ["after optimizer.step"],
              breaks='**after** step'),
        wrong(
            "a list",
            _table().replace("return torch.tensor(rows) if isinstance(rows[0], list) else "
                             "torch.stack(rows)", "return rows"),
            "type",
            ["torch.Tensor"],
        ),
        wrong(
            "every row the same tensor",
            _table(append="row = torch.zeros(2) if not rows else rows[0]\n"
                   "                row[0], row[1] = x, function(x)\n"
                   "                rows.append(row)"),
            "aliased_rows",
            ["in place", "x.item()"],
        ),
    ],
    "q3_stopping_rule": [
        wrong("last step not counted", _minimise(count="steps - 1"), "values", ["count that step"],
              breaks='counting the last one'),
        wrong("never stops", _minimise(stop="pass"), ("values",), ["max_steps"]),
        wrong("x as a tensor", _minimise(to_float="x.detach()"), "type", [".item()"]),
        wrong(
            "float32",
            _minimise(dtype=""),
            "float32",
            ["float64"],
            not_says=["wrong values"],
            breaks='a **float64** leaf tensor',
        ),
    ],
}
