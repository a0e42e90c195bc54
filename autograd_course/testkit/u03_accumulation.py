"""Typical wrong answers to assignment 03 Accumulation: gradients add up."""

from __future__ import annotations

from autograd_course.testkit.answers import Wrong, function, wrong

_ACC = "def accumulated_grad(w0, x, t, n):"
_STUB = "# YOUR CODE HERE\nraise NotImplementedError()"

#: Words that would say which prediction of question 3 is wrong, or why: its message says how
#: many are wrong, never which.
_NAMES_A_SNIPPET = ['predicted["', "snippet a", "snippet b", "snippet c", "snippet d", "path",
                    "x * x", "3 * x", "replaced", "adds up", "cleared", "L1", "L2", "two losses"]

_TRAIN_BUGGY = """
def train(w0, x, target, lr, steps):
    w = w0.detach().clone().requires_grad_(True)
    for _ in range(steps):
        loss = ((w * x).sum() - target) ** 2
        loss.backward()
        with torch.no_grad():
            w -= lr * w.grad
    return w.detach()
"""


WRONG: dict[str, list[Wrong]] = {
    "q1_accumulated_grad": [
        wrong(
            "one pass only",
            function(_ACC, "return 2 * (w0 * x - t) * x"),
            "one_pass",
            ["single backward() pass", "adds up"],
        ),
        wrong("wrong sign", function(_ACC, "return n * 2 * (t - w0 * x) * x"), "sign", ["sign"]),
        wrong(
            "a tensor",
            function(_ACC, "return torch.tensor(n * 2 * (w0 * x - t) * x)"),
            "type",
            [".item()"],
            breaks='as a Python float',
        ),
        wrong(
            "by autograd",
            function(_ACC, """
                w = torch.tensor(w0, requires_grad=True)
                for _ in range(n):
                    ((w * x - t) ** 2).backward()
                return w.grad.item()
                """),
            "autograd",
            ["by hand", "no_grad"],
            breaks='**by a formula**',
        ),
        wrong(
            "hard-coded demo answer",
            function(_ACC, "return -8.0"),
            ("values", "sign", "fraction", "factor", "zero", "one_pass"),
            hidden_only="hard-coded",
        ),
    ],
    "q2_fix_loop": [
        wrong("never clears .grad", _TRAIN_BUGGY, ("values", "accumulated"), ["wrong values"],
              breaks='every step uses only the gradient of its own loss'),
        wrong(
            "zero_() before the first backward()",
            _TRAIN_BUGGY.replace("        loss.backward()",
                                 "        w.grad.zero_()\n        loss.backward()"),
            "zero_before_backward",
            ["still None", ".grad = None"],
        ),
        wrong(
            "returns w with its graph",
            _TRAIN_BUGGY.replace("w.grad\n", "w.grad\n        w.grad = None\n").replace(
                "return w.detach()", "return w * 1.0"
            ),
            "graph",
            ["graph"],
            noted=True,
            breaks='as a tensor that records no graph',
        ),
    ],
    "q3_predict_values": [
        wrong(
            "one path of x",
            'predicted = {"a": 4.0, "b": -8.0, "c": -4.0, "d": -2.0}',
            "predictions",
            ["1 of the 4 predictions in predicted is wrong", "does not say which"],
            not_says=_NAMES_A_SNIPPET,
            hidden_only="prediction",
        ),
        wrong(
            ".grad replaced",
            'predicted = {"a": 7.0, "b": -4.0, "c": -4.0, "d": -2.0}',
            "predictions",
            ["1 of the 4 predictions in predicted is wrong"],
            not_says=_NAMES_A_SNIPPET,
            hidden_only="prediction",
        ),
        wrong(
            "not cleared",
            'predicted = {"a": 7.0, "b": -8.0, "c": -8.0, "d": -2.0}',
            "predictions",
            ["1 of the 4 predictions in predicted is wrong"],
            not_says=_NAMES_A_SNIPPET,
            hidden_only="prediction",
        ),
        wrong(
            "one loss",
            'predicted = {"a": 7.0, "b": -8.0, "c": -4.0, "d": -4.0}',
            "predictions",
            ["1 of the 4 predictions in predicted is wrong"],
            not_says=_NAMES_A_SNIPPET,
            hidden_only="prediction",
        ),
        wrong(
            ".grad replaced, and only one loss",
            'predicted = {"a": 7.0, "b": -4.0, "c": -4.0, "d": -4.0}',
            "predictions",
            ["2 of the 4 predictions in predicted are wrong"],
            not_says=_NAMES_A_SNIPPET,
            hidden_only="prediction",
        ),
        wrong(
            "an exception name",
            'predicted = {"a": 7.0, "b": -8.0, "c": "RuntimeError", "d": -2.0}',
            "type",
            ["number"],
        ),
        wrong("a key missing", 'predicted = {"a": 7.0, "b": -8.0}', "values", ["keys"]),
        wrong("left blank", _STUB, "blank", ["NotImplementedError"]),
    ],
}
