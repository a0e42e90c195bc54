"""Hints for assignment 02_three_weights: ``hint("qN")`` shows them in order."""

HINTS: dict[str, tuple[str, ...]] = {
    "q1": (
        'Write the chain for one data point j: L_j = e_j**2 with e_j = x_j . w - t_j, so '
        'dL_j/dw = 2 * e_j * x_j. The mean divides the sum of these by m.',
        'With all points at once: e = X @ w - t (shape (m,)), and the gradient is 2 / m * '
        '(X.T @ e), shape (n,).',
    ),
    "q2": (
        'Both w and b must be leaves that require grad; one backward() of the loss fills both '
        '.grad attributes.',
        'w = w.detach().clone().requires_grad_(True), the same for b; loss = (((X @ w) + b - '
        't) ** 2).mean(); loss.backward(); return (w.grad, b.grad).',
    ),
    "q3": (
        'The error is sum(w * x) - target; the gradient is 2 * error * x.',
        'With target 2.0: sum(w * x) = 3, so the error is 1 and the gradient is 2 * x.',
    ),
    "q4": (
        "backward() of a non-scalar y needs a tensor v of y's shape: y.backward(v).",
        'Make a leaf copy of x that requires grad, compute y = f(leaf), call y.backward(v) '
        'and return leaf.grad.',
    ),
}
