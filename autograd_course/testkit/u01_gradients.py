"""Typical wrong answers to assignment 01_gradients (requires_grad, grad_fn, leaves)."""

from __future__ import annotations

from autograd_course.testkit.answers import Wrong, function, wrong

_PARTIALS = "def partials(f, x, y):"
_LEAF_FN = "def leaf_and_grad_fn(t):"
_RETAIN = "def leaf_and_intermediate_grads(values):"
_STUB = "# YOUR CODE HERE\nraise NotImplementedError()"

#: Words that would say which prediction of question 4 is wrong, or why: its message says how
#: many are wrong, never which.
_NAMES_A_PREDICTION = ["t1.grad", "t2.grad", "t1_grad", "t2_grad", "factor", "leaf",
                       "retain_grad", "None", "first", "second"]


def _partials(call: str = "f(x, y).sum().backward()", result: str = "x.grad, y.grad") -> str:
    """The reference partials with its backward call or its result replaced."""
    return function(_PARTIALS, f"""
        x = x.detach().clone().requires_grad_(True)
        y = y.detach().clone().requires_grad_(True)
        {call}
        return {result}
        """)


WRONG: dict[str, list[Wrong]] = {
    "q1_partials": [
        wrong(
            "no backward()",
            _partials(call="f(x, y).sum()"),
            "none",
            ["None", "backward"],
            breaks='computed by autograd',
        ),
        wrong(
            "only x made a leaf that requires grad",
            function(_PARTIALS, """
                x = x.detach().clone().requires_grad_(True)
                f(x, y).sum().backward()
                return x.grad, y.grad
                """),
            "none",
            ["None"],
        ),
        wrong(
            "backward once per input",
            function(_PARTIALS, """
                x = x.detach().clone().requires_grad_(True)
                y = y.detach().clone().requires_grad_(True)
                out = f(x, y).sum()
                out.backward(retain_graph=True)
                out.backward()
                return x.grad, y.grad
                """),
            "accumulated",
            ["twice", "backward() calls"],
        ),
        wrong(
            "the partial derivatives swapped",
            _partials(result="y.grad, x.grad"),
            "swapped",
            ["other input"],
            breaks='returned as a pair of tensors `(df_dx, df_dy)`',
        ),
        wrong(
            ".grad of a non-leaf",
            function(_PARTIALS, """
                x = x.detach().clone().requires_grad_(True)
                y = y.detach().clone().requires_grad_(True)
                u, v = x * 1.0, y * 1.0
                f(u, v).sum().backward()
                return u.grad, v.grad
                """),
            "leaf",
            ["non-leaf", "retain_grad"],
        ),
        wrong(
            "hard-coded for x*y + y*y",
            function(_PARTIALS, "return y.clone(), x + 2 * y"),
            "values",
            ["hidden test"],
            hidden_only="hard-coded",
        ),
        wrong(
            "switches requires_grad on for the caller's tensors",
            function(_PARTIALS, """
                x.requires_grad_(True)
                y.requires_grad_(True)
                f(x, y).sum().backward()
                return x.grad, y.grad
                """),
            "changed_input",
            ["twice the derivative", "caller's tensors", "copies"],
            not_says=["no_grad"],
            breaks="Leave the caller's tensors `x` and `y` unchanged",
        ),
        wrong(
            "switches requires_grad on for the caller's tensors, then empties their .grad",
            function(_PARTIALS, """
                x.requires_grad_(True)
                y.requires_grad_(True)
                f(x, y).sum().backward()
                df_dx, df_dy = x.grad, y.grad
                x.grad = y.grad = None
                return df_dx, df_dy
                """),
            "changed_input",
            ["set requires_grad on x", "copy"],
            noted=True,
            breaks="Leave the caller's tensors `x` and `y` unchanged",
        ),
        wrong(
            "mean instead of sum",
            _partials(call="f(x, y).mean().backward()"),
            "mean",
            [".mean() divides"],
        ),
        wrong("blank", function(_PARTIALS, _STUB), "blank", ["NotImplementedError"]),
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
            breaks='the **class name** of `t.grad_fn` as a string',
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
            hidden_only="hard-coded",
        ),
        wrong("not a pair", function(_LEAF_FN, "return t.is_leaf"), "type", ["tuple"],
              breaks='returns a pair `(is_leaf, grad_fn_name)`'),
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
            breaks='**once**',
        ),
        wrong(
            "hard-coded demo answers",
            function(_RETAIN, "return torch.tensor([2.0, 4.0, 6.0]), torch.ones(3)"),
            ("values", "shape", "fraction", "accumulated", "sign"),
            hidden_only="hard-coded",
        ),
    ],
    "q4_predict_grads": [
        wrong(
            "forgot the factor 3",
            "predicted = (torch.tensor([2.0, 4.0, 6.0]), None)",
            "predictions",
            ["1 of the 2 predictions in predicted is wrong", "does not say which"],
            not_says=_NAMES_A_PREDICTION,
            hidden_only="prediction",
        ),
        wrong(
            "t2.grad kept",
            "predicted = (torch.tensor([6.0, 12.0, 18.0]), torch.tensor([3.0, 3.0, 3.0]))",
            "predictions",
            ["1 of the 2 predictions in predicted is wrong"],
            not_says=_NAMES_A_PREDICTION,
            hidden_only="prediction",
        ),
        wrong(
            "no gradient for t1",
            "predicted = (None, None)",
            "predictions",
            ["1 of the 2 predictions in predicted is wrong"],
            not_says=_NAMES_A_PREDICTION,
            hidden_only="prediction",
        ),
        wrong(
            "both wrong: t2.grad kept, the factor 3 forgotten",
            "predicted = (torch.tensor([2.0, 4.0, 6.0]), torch.tensor([1.0, 1.0, 1.0]))",
            "predictions",
            ["2 of the 2 predictions in predicted are wrong"],
            not_says=_NAMES_A_PREDICTION,
            hidden_only="prediction",
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
