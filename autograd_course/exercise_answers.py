"""Typical wrong answers to the graded exercises, and the diagnosis each must get (used by the
tests of the exercises, the instructor's dry run and the grading benchmark).

``WRONG_ANSWERS[(assignment, grade_id)]`` lists :class:`Wrong` answers: ``code`` replaces the
question's solution cell, and running the question's test cell must then raise a
``CheckError`` whose ``diagnosis`` is one of ``diagnosis`` and whose message contains every
string of ``says`` (case-insensitive). ``hidden_only`` answers pass the visible checks and are
caught by the hidden tests only (e.g. a hard-coded answer).
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass


@dataclass(frozen=True)
class Wrong:
    label: str
    code: str
    diagnosis: tuple[str, ...]
    says: tuple[str, ...] = ()
    hidden_only: bool = False


def wrong(label, code, diagnosis, says=(), hidden_only=False) -> Wrong:
    if isinstance(diagnosis, str):
        diagnosis = (diagnosis,)
    return Wrong(label, textwrap.dedent(code).strip("\n"), diagnosis, tuple(says), hidden_only)


def function(signature: str, body: str) -> str:
    """A function definition with the given signature line and (dedented) body."""
    return f"{signature}\n" + textwrap.indent(textwrap.dedent(body).strip("\n"), "    ")


_GRAD_OF = "def grad_of(f, values):"
_LEAF_FN = "def leaf_and_grad_fn(t):"
_RETAIN = "def leaf_and_intermediate_grads(values):"
_HAND = "def hand_gradient(w, x, target):"
_AUTO = "def autograd_gradient(w, x, target):"
_VJP = "def vjp(f, x, v):"
_ACC = "def accumulated_grad(w0, x, t, n):"
_EVAL = "def evaluate(w, b, x):"
_SNAP = "def snapshot(t):"
_PRED = "def predict(w, b, x):"
_STEP = "def gd_step(x, f, lr):"
_TABLE = "def sgd_table(x0, lr, steps):"
_MIN = "def minimise(f, x0, lr, tol, max_steps=1000):"

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


def _table(zero_grad: str = "optimizer.zero_grad()", row: str = "function(x)") -> str:
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
                rows.append([x.item(), ({row}).item()])
        return torch.tensor(rows)
        """.replace("{row}", row),
    )


def _minimise(count: str = "steps", stop: str = "break", to_float: str = "x.item()") -> str:
    return function(
        _MIN,
        f"""
        x = torch.tensor(x0, dtype=torch.float64, requires_grad=True)
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


WRONG_ANSWERS: dict[tuple[str, str], list[Wrong]] = {
    ("01_gradients", "q1_grad_of"): [
        wrong(
            "no backward()",
            function(
                _GRAD_OF,
                """
                x = values.detach().clone().requires_grad_(True)
                f(x).sum()
                return x.grad
                """,
            ),
            "none",
            ["None", "backward"],
        ),
        wrong(
            "backward twice",
            function(
                _GRAD_OF,
                """
                x = values.detach().clone().requires_grad_(True)
                y = f(x).sum()
                y.backward(retain_graph=True)
                y.backward()
                return x.grad
                """,
            ),
            "accumulated",
            ["twice", "accumulated"],
        ),
        wrong(
            ".grad of a non-leaf",
            function(
                _GRAD_OF,
                """
                x = values.detach().clone().requires_grad_(True)
                y = x * 1.0
                f(y).sum().backward()
                return y.grad
                """,
            ),
            "leaf",
            ["non-leaf", "retain_grad"],
        ),
        wrong("wrong sign", function(_GRAD_OF, "return -2 * values"), "sign", ["sign"]),
        wrong(
            "hard-coded 2x",
            function(_GRAD_OF, "return 2 * values"),
            "values",
            ["hidden test"],
            hidden_only=True,
        ),
        wrong(
            "changes the caller's tensor",
            function(
                _GRAD_OF,
                """
                values.requires_grad_(True)
                f(values).sum().backward()
                return values.grad
                """,
            ),
            "graph",
            ["graph", "copy"],
            hidden_only=True,
        ),
    ],
    ("01_gradients", "q2_leaf_and_grad_fn"): [
        wrong(
            "requires_grad for is_leaf",
            function(
                _LEAF_FN,
                "return t.requires_grad, None if t.grad_fn is None else type(t.grad_fn).__name__",
            ),
            "leaf",
            ["leaf", "requires_grad"],
        ),
        wrong(
            "str(grad_fn)",
            function(_LEAF_FN, "return t.is_leaf, None if t.grad_fn is None else str(t.grad_fn)"),
            "type",
            ["class name", "memory address"],
        ),
        wrong(
            "the grad_fn object",
            function(_LEAF_FN, "return t.is_leaf, t.grad_fn"),
            "type",
            ["string", "__name__"],
        ),
        wrong(
            "hard-coded seed answers",
            function(
                _LEAF_FN, 'return (True, None) if t.grad_fn is None else (False, "AddBackward0")'
            ),
            "values",
            ["grad_fn"],
            hidden_only=True,
        ),
        wrong("not a pair", function(_LEAF_FN, "return t.is_leaf"), "type", ["tuple"]),
    ],
    ("01_gradients", "q3_retain_grad"): [
        wrong(
            "no retain_grad()",
            function(
                _RETAIN,
                """
                t1 = values.detach().clone().requires_grad_(True)
                t2 = t1 * t1 + 1
                t2.sum().backward()
                return t1.grad, t2.grad
                """,
            ),
            "leaf",
            ["non-leaf", "retain_grad"],
        ),
        wrong(
            "backward twice",
            function(
                _RETAIN,
                """
                t1 = values.detach().clone().requires_grad_(True)
                t2 = t1 * t1 + 1
                t2.retain_grad()
                z = t2.sum()
                z.backward(retain_graph=True)
                z.backward()
                return t1.grad, t2.grad
                """,
            ),
            "accumulated",
            ["twice"],
        ),
        wrong(
            "hard-coded seed answers",
            function(_RETAIN, "return torch.tensor([2.0, 4.0, 6.0]), torch.ones(3)"),
            ("values", "shape", "fraction", "accumulated", "sign"),
            hidden_only=True,
        ),
    ],
    ("01_gradients", "q4_predict_error"): [
        wrong(
            "ValueError",
            'nonscalar_backward = "ValueError"',
            "exception",
            ["different"],
            hidden_only=True,
        ),
        wrong(
            "no error",
            "nonscalar_backward = None",
            "exception",
            ["without error", "raises"],
            hidden_only=True,
        ),
        wrong("a number", "nonscalar_backward = 42", "type", ["exception class"]),
    ],
    ("02_three_weights", "q1_hand_gradient"): [
        wrong(
            "target - prediction",
            function(_HAND, "return 2 * (target - (w * x).sum()) * x"),
            "sign",
            ["sign", "subtraction"],
        ),
        wrong(
            "no factor 2",
            function(_HAND, "return ((w * x).sum() - target) * x"),
            "fraction",
            ["1/2", "factor"],
        ),
        wrong(
            "forgot x",
            function(_HAND, "return 2 * ((w * x).sum() - target)"),
            "shape",
            ["shape"],
        ),
        wrong(
            "hard-coded seed answer",
            function(_HAND, "return torch.tensor([-12.0, -4.0, -16.0])"),
            ("values", "shape", "fraction", "accumulated", "sign"),
            hidden_only=True,
        ),
    ],
    ("02_three_weights", "q2_autograd_gradient"): [
        wrong(
            "no backward()",
            function(
                _AUTO,
                """
                leaf = w.detach().clone().requires_grad_(True)
                loss = ((leaf * x).sum() - target) ** 2
                return leaf.grad
                """,
            ),
            "none",
            ["None", "backward"],
        ),
        wrong(
            "backward twice",
            function(
                _AUTO,
                """
                leaf = w.detach().clone().requires_grad_(True)
                for _ in range(2):
                    loss = ((leaf * x).sum() - target) ** 2
                    loss.backward()
                return leaf.grad
                """,
            ),
            "accumulated",
            ["twice", "zero_grad"],
        ),
        wrong(
            ".grad of a non-leaf",
            function(
                _AUTO,
                """
                leaf = w.detach().clone().requires_grad_(True) * 1.0
                loss = ((leaf * x).sum() - target) ** 2
                loss.backward()
                return leaf.grad
                """,
            ),
            "leaf",
            ["non-leaf"],
        ),
        wrong(
            "changes the caller's w",
            function(
                _AUTO,
                """
                w.requires_grad_(True)
                (((w * x).sum() - target) ** 2).backward()
                return w.grad
                """,
            ),
            "graph",
            ["graph", "copy"],
            hidden_only=True,
        ),
    ],
    ("02_three_weights", "q3_predict_three_weights"): [
        wrong(
            "wrong sign",
            "predicted_grad = torch.tensor([-6.0, -2.0, -8.0])",
            "sign",
            ["sign"],
            hidden_only=True,
        ),
        wrong("integers", "predicted_grad = torch.tensor([6, 2, 8])", "dtype", ["dtype", "1.0"]),
        wrong("a scalar", "predicted_grad = torch.tensor(16.0)", "shape", ["shape"]),
        wrong(
            "the seed's target",
            "predicted_grad = torch.tensor([-12.0, -4.0, -16.0])",
            "seed",
            ["seed's target"],
            hidden_only=True,
        ),
    ],
    ("02_three_weights", "q4_vjp"): [
        wrong(
            "ignores v",
            function(
                _VJP,
                """
                leaf = x.detach().clone().requires_grad_(True)
                f(leaf).sum().backward()
                return leaf.grad
                """,
            ),
            "ignored_v",
            ["vector of ones", "backward(v)"],
        ),
        wrong(
            "backward twice",
            function(
                _VJP,
                """
                leaf = x.detach().clone().requires_grad_(True)
                y = f(leaf)
                y.backward(v, retain_graph=True)
                y.backward(v)
                return leaf.grad
                """,
            ),
            "accumulated",
            ["twice"],
        ),
        wrong(
            "returns the Jacobian-free output",
            function(_VJP, "return f(x) * v"),
            ("values", "shape", "fraction", "accumulated", "sign", "ignored_v", "zero"),
        ),
    ],
    ("03_accumulation", "q1_accumulated_grad"): [
        wrong("one pass only", function(_ACC, "return 2 * (w0 * x - t) * x"), "fraction", ["1/2"]),
        wrong("wrong sign", function(_ACC, "return n * 2 * (t - w0 * x) * x"), "sign", ["sign"]),
        wrong(
            "a tensor",
            function(_ACC, "return torch.tensor(n * 2 * (w0 * x - t) * x)"),
            "type",
            [".item()"],
        ),
        wrong(
            "hard-coded seed answer",
            function(_ACC, "return -8.0"),
            ("values", "sign", "fraction", "accumulated", "zero"),
            hidden_only=True,
        ),
    ],
    ("03_accumulation", "q2_fix_loop"): [
        wrong(
            "never clears .grad", _TRAIN_BUGGY, "accumulated", ["never cleared"], hidden_only=True
        ),
        wrong(
            "returns w with its graph",
            _TRAIN_BUGGY.replace("w.grad\n", "w.grad\n        w.grad = None\n").replace(
                "return w.detach()", "return w * 1.0"
            ),
            "graph",
            ["graph"],
        ),
    ],
    ("03_accumulation", "q3_predict_outcomes"): [
        wrong(
            "retain_graph also fails",
            'outcomes = {"a": "RuntimeError", "b": "RuntimeError", "c": "AttributeError"}',
            "exception",
            ["without error"],
            hidden_only=True,
        ),
        wrong(
            "zero_ on None",
            'outcomes = {"a": "RuntimeError", "b": None, "c": "TypeError"}',
            "exception",
            ["different exception"],
            hidden_only=True,
        ),
        wrong("a key missing", 'outcomes = {"a": "RuntimeError", "b": None}', "values", ["keys"]),
    ],
    ("04_no_grad", "q1_evaluate"): [
        wrong(
            "records a graph", function(_EVAL, "return x @ w + b"), "graph", ["graph", "no_grad"]
        ),
        wrong(
            "elementwise product",
            function(
                _EVAL,
                """
                with torch.no_grad():
                    return x * w + b
                """,
            ),
            "shape",
            ["shape"],
        ),
    ],
    ("04_no_grad", "q2_snapshot"): [
        wrong(
            "detach() only", function(_SNAP, "return t.detach()"), "storage", ["detach().clone()"]
        ),
        wrong("clone() only", function(_SNAP, "return t.clone()"), "graph", ["graph"]),
        wrong("the tensor itself", function(_SNAP, "return t"), "graph", ["graph"]),
    ],
    ("04_no_grad", "q3_inference"): [
        wrong(
            "no_grad instead",
            function(
                _PRED,
                """
                with torch.no_grad():
                    return x @ w + b
                """,
            ),
            "inference_mode",
            ["inference_mode"],
        ),
        wrong("records a graph", function(_PRED, "return x @ w + b"), "graph", ["graph"]),
    ],
    ("04_no_grad", "q4_predict_outcomes"): [
        wrong(
            "detach().numpy() fails too",
            'outcomes = {"a": "RuntimeError", "b": "RuntimeError", "c": "RuntimeError",'
            ' "d": "RuntimeError"}',
            "exception",
            ["without error"],
            hidden_only=True,
        ),
        wrong(
            "inference tensors are fine",
            'outcomes = {"a": None, "b": "RuntimeError", "c": "RuntimeError", "d": None}',
            "exception",
            ["raises"],
            hidden_only=True,
        ),
    ],
    ("05_sgd", "q1_gd_step"): [
        wrong(
            "uphill",
            function(
                _STEP,
                """
                f(x).backward()
                with torch.no_grad():
                    x += lr * x.grad
                x.grad = None
                return x
                """,
            ),
            "sign",
            ["sign", "against the gradient"],
        ),
        wrong(
            "never clears x.grad",
            function(
                _STEP,
                """
                f(x).backward()
                with torch.no_grad():
                    x -= lr * x.grad
                return x
                """,
            ),
            "accumulated",
            ["not cleared"],
            hidden_only=True,
        ),
        wrong(
            "x = x - lr * grad",
            function(
                _STEP,
                """
                f(x).backward()
                x = x - lr * x.grad
                return x
                """,
            ),
            "leaf",
            ["leaf", "in place"],
        ),
        wrong(
            "x = x - lr * grad under no_grad",
            function(
                _STEP,
                """
                f(x).backward()
                with torch.no_grad():
                    x = x - lr * x.grad
                return x
                """,
            ),
            "requires_grad",
            ["requires grad"],
        ),
    ],
    ("05_sgd", "q2_sgd_table"): [
        wrong(
            "no zero_grad()",
            _table(zero_grad="pass"),
            "accumulated",
            ["zero_grad"],
            hidden_only=True,
        ),
        wrong("f before the step", _table(row="loss"), "f_before_step", ["after optimizer.step"]),
        wrong(
            "a list",
            _table().replace("return torch.tensor(rows)", "return rows"),
            "type",
            ["torch.Tensor"],
        ),
    ],
    ("05_sgd", "q3_stopping_rule"): [
        wrong("last step not counted", _minimise(count="steps - 1"), "values", ["count that step"]),
        wrong("never stops", _minimise(stop="pass"), ("values",), ["max_steps"]),
        wrong("x as a tensor", _minimise(to_float="x.detach()"), "type", [".item()"]),
    ],
}
