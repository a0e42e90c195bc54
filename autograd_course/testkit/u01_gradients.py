"""Typical wrong answers to assignment 01_gradients (requires_grad, grad_fn, leaves)."""

from __future__ import annotations

from autograd_course.testkit.answers import Wrong, function, wrong

_GRAD_OF = "def grad_of(f, values):"
_LEAF_FN = "def leaf_and_grad_fn(t):"
_RETAIN = "def leaf_and_intermediate_grads(values):"
_STUB = "# YOUR CODE HERE\nraise NotImplementedError()"


WRONG: dict[str, list[Wrong]] = {
    "q1_grad_of": [
        wrong(
            "no backward()",
            function(_GRAD_OF, """
                x = values.detach().clone().requires_grad_(True)
                f(x).sum()
                return x.grad
                """),
            "none",
            ["None", "backward"],
        ),
        wrong(
            "backward twice",
            function(_GRAD_OF, """
                x = values.detach().clone().requires_grad_(True)
                y = f(x).sum()
                y.backward(retain_graph=True)
                y.backward()
                return x.grad
                """),
            "accumulated",
            ["twice", "backward() calls"],
        ),
        wrong(
            ".grad of a non-leaf",
            function(_GRAD_OF, """
                x = values.detach().clone().requires_grad_(True)
                y = x * 1.0
                f(y).sum().backward()
                return y.grad
                """),
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
            "switches requires_grad on for the caller's tensor",
            function(_GRAD_OF, """
                values.requires_grad_(True)
                f(values).sum().backward()
                return values.grad
                """),
            "changed_input",
            ["twice the derivative", "caller's tensor", "copy"],
            hidden_only=True,
            not_says=["no_grad"],
        ),
        wrong("blank", function(_GRAD_OF, _STUB), "blank", ["NotImplementedError"]),
    ],
    "q2_leaf_and_grad_fn": [
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
            "hard-coded demo answers",
            function(
                _LEAF_FN, 'return (True, None) if t.grad_fn is None else (False, "AddBackward0")'
            ),
            "values",
            ["grad_fn"],
            hidden_only=True,
        ),
        wrong("not a pair", function(_LEAF_FN, "return t.is_leaf"), "type", ["tuple"]),
    ],
    "q3_retain_grad": [
        wrong(
            "no retain_grad()",
            function(_RETAIN, """
                t1 = values.detach().clone().requires_grad_(True)
                t2 = t1 * t1 + 1
                t2.sum().backward()
                return t1.grad, t2.grad
                """),
            "leaf",
            ["non-leaf", "retain_grad"],
        ),
        wrong(
            "backward twice",
            function(_RETAIN, """
                t1 = values.detach().clone().requires_grad_(True)
                t2 = t1 * t1 + 1
                t2.retain_grad()
                z = t2.sum()
                z.backward(retain_graph=True)
                z.backward()
                return t1.grad, t2.grad
                """),
            "accumulated",
            ["twice"],
        ),
        wrong(
            "hard-coded demo answers",
            function(_RETAIN, "return torch.tensor([2.0, 4.0, 6.0]), torch.ones(3)"),
            ("values", "shape", "fraction", "accumulated", "sign"),
            hidden_only=True,
        ),
    ],
    "q4_predict_grads": [
        wrong(
            "forgot the factor 3",
            "predicted = (torch.tensor([2.0, 4.0, 6.0]), None)",
            "missing_factor",
            ["factor 3"],
            hidden_only=True,
        ),
        wrong(
            "t2.grad kept",
            "predicted = (torch.tensor([6.0, 12.0, 18.0]), torch.tensor([3.0, 3.0, 3.0]))",
            "values",
            ["not a leaf", "retain_grad"],
            hidden_only=True,
        ),
        wrong(
            "no gradient for t1",
            "predicted = (None, None)",
            "none",
            ["None"],
            hidden_only=True,
        ),
        wrong(
            "integers",
            "predicted = (torch.tensor([6, 12, 18]), None)",
            "dtype",
            ["makes integers"],
        ),
        wrong("left blank", "", "blank", ["not defined"]),
    ],
}
