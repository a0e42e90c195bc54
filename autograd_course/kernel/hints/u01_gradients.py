"""Hints for assignment 01_gradients: ``hint("qN")`` shows them in order."""

HINTS: dict[str, tuple[str, ...]] = {
    "q1": (
        "The lesson's section 'The derivative of any function, at any values' does this for "
        "one input and torch.exp. Here backward() must fill the .grad of two tensors: both "
        "must be leaves that require grad, and neither may be the caller's.",
        "Make two leaves: x = x.detach().clone().requires_grad_(True), and the same for y. "
        "Then f(x, y).sum().backward() once, and return x.grad, y.grad. The sum keeps each "
        "pair's derivatives separate.",
    ),
    "q2": (
        'A tensor is a leaf when no recorded operation made it: look at t.is_leaf. Its '
        'grad_fn is None, or the backward function of the operation that made it.',
        "type(t.grad_fn).__name__ is the class name, e.g. 'AddBackward0'; return None instead "
        'when t.grad_fn is None.',
    ),
    "q3": (
        'A non-leaf keeps its .grad only if you ask for it before backward().',
        'Call t2.retain_grad() right after computing t2, then z.backward(), then return '
        '(t1.grad, t2.grad).',
    ),
    "q4": (
        'z = (3 * t2).sum() = 3 * sum(t1**2 + 1). What is dz/dt1_i?',
        'dz/dt1_i = 3 * 2 * t1_i. And t2 is not a leaf and never called retain_grad(), so its '
        '.grad is None.',
    ),
}
