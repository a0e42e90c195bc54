"""Typical wrong answers to assignment 02 Three weights: the chain rule by hand and by autograd."""

from __future__ import annotations

from autograd_course.testkit.answers import Wrong, function, wrong

_HAND = "def hand_gradient(w, X, t):"
_GRADS = "def gradients(w, b, X, t):"
_VJP = "def vjp(f, x, v):"
_STUB = "# YOUR CODE HERE\nraise NotImplementedError()"
# The story of gradients accumulated over backward() calls: wrong for hand-made answers.
_BACKWARD_STORY = ("backward() calls",)


WRONG: dict[str, list[Wrong]] = {
    "q1_hand_gradient": [
        wrong(
            "target - prediction",
            function(_HAND, "return 2 / X.shape[0] * (X.T @ (t - X @ w))"),
            "sign",
            ["sign", "subtraction"],
        ),
        wrong(
            "no factor 2",
            function(_HAND, "return (X.T @ (X @ w - t)) / X.shape[0]"),
            "fraction",
            ["1/2", "factor"],
            not_says=_BACKWARD_STORY,
        ),
        wrong(
            "sum instead of mean",
            function(_HAND, "return 2 * (X.T @ (X @ w - t))"),
            "sum_not_mean",
            ["mean", "divide"],
            breaks='the **mean** squared error',
        ),
        wrong(
            "forgot the transpose",
            function(_HAND, "return 2 / X.shape[0] * (X @ w - t)"),
            "shape",
            ["shape"],
        ),
        wrong(
            "by autograd",
            function(_HAND, """
                leaf = w.detach().clone().requires_grad_(True)
                ((X @ leaf - t) ** 2).mean().backward()
                return leaf.grad
                """),
            "autograd",
            ["by hand", "no_grad"],
            breaks='**by the\nchain rule, without autograd**',
        ),
        wrong(
            "hard-coded demo answer",
            function(_HAND, "return torch.tensor([-12.0, -4.0, -16.0])"),
            ("values", "shape", "fraction", "factor", "sign"),
        ),
    ],
    "q2_two_leaves": [
        wrong(
            "b without requires_grad",
            function(_GRADS, """
                w = w.detach().clone().requires_grad_(True)
                ((X @ w + b - t) ** 2).mean().backward()
                return w.grad, b.grad
                """),
            "none",
            ["None", "requires_grad"],
        ),
        wrong(
            "one backward() per leaf",
            function(_GRADS, """
                w = w.detach().clone().requires_grad_(True)
                b = b.detach().clone().requires_grad_(True)
                for _ in range(2):
                    ((X @ w + b - t) ** 2).mean().backward()
                return w.grad, b.grad
                """),
            "accumulated",
            ["twice", "backward() calls"],
            breaks='with one\n`backward()` call',
        ),
        wrong(
            "returns the leaves",
            function(_GRADS, """
                w = w.detach().clone().requires_grad_(True)
                b = b.detach().clone().requires_grad_(True)
                ((X @ w + b - t) ** 2).mean().backward()
                return w, b
                """),
            ("values", "fraction", "factor", "sign", "accumulated"),
        ),
        wrong(
            "switches requires_grad on for the caller's b",
            function(_GRADS, """
                w = w.detach().clone().requires_grad_(True)
                b.requires_grad_(True)
                ((X @ w + b - t) ** 2).mean().backward()
                return w.grad, b.grad
                """),
            "changed_input",
            ["twice the gradient", "caller's b.grad"],
            breaks="leave the caller's tensors unchanged",
        ),
    ],
    "q3_predict_three_weights": [
        wrong(
            "wrong sign",
            "predicted_grad = torch.tensor([-6.0, -2.0, -8.0])",
            "sign",
            ["sign"],
            hidden_only="prediction",
        ),
        wrong(
            "twice the error",
            "predicted_grad = torch.tensor([12.0, 4.0, 16.0])",
            "factor",
            ["twice", "factor"],
            hidden_only="prediction",
            not_says=_BACKWARD_STORY,
        ),
        wrong(
            "integers",
            "predicted_grad = torch.tensor([6, 2, 8])",
            "dtype",
            ["dtype", "makes integers"],
        ),
        wrong(
            "float64",
            "predicted_grad = torch.tensor([6.0, 2.0, 8.0], dtype=torch.float64)",
            "dtype",
            ["float32"],
            not_says=["makes integers"],
        ),
        wrong("a scalar", "predicted_grad = torch.tensor(16.0)", "shape", ["shape"]),
        wrong(
            "the demo's target",
            "predicted_grad = torch.tensor([-12.0, -4.0, -16.0])",
            "demo_target",
            ["demo's target"],
            hidden_only="prediction",
        ),
        wrong("left blank", _STUB, "blank", ["NotImplementedError"]),
    ],
    "q4_vjp": [
        wrong(
            "x does not require grad",
            function(_VJP, """
                y = f(x)
                y.backward(v)
                return x.grad
                """),
            "no_graph",
            ["records no graph", "requires_grad_(True)"],
        ),
        wrong(
            "ignores v",
            function(_VJP, """
                leaf = x.detach().clone().requires_grad_(True)
                f(leaf).sum().backward()
                return leaf.grad
                """),
            "ignored_v",
            ["vector of ones", "backward(v)"],
            breaks="`y.backward(v)` computes the vector-Jacobian product",
        ),
        wrong(
            "backward twice",
            function(_VJP, """
                leaf = x.detach().clone().requires_grad_(True)
                y = f(leaf)
                y.backward(v, retain_graph=True)
                y.backward(v)
                return leaf.grad
                """),
            "accumulated",
            ["twice"],
        ),
        wrong(
            "returns the Jacobian-free output",
            function(_VJP, "return f(x) * v"),
            ("values", "shape", "fraction", "accumulated", "sign", "ignored_v", "zero"),
        ),
    ],
}
