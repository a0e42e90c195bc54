"""Hints for assignment 03_accumulation: ``hint("qN")`` shows them in order."""

HINTS: dict[str, tuple[str, ...]] = {
    "q1": (
        'Each pass adds the same gradient of L = (w*x - t)**2 at w0, since w never changes. '
        'What is dL/dw?',
        'dL/dw = 2 * (w0*x - t) * x; after n passes, .grad holds n times that. Return a float '
        'computed from the formula: no tensors with requires_grad, no backward().',
    ),
    "q2": (
        "Each step's gradient must be its own: clear w.grad before every backward().",
        'Put w.grad = None inside the loop, before loss.backward(). (w.grad.zero_() fails in '
        'the first step, when w.grad is still None.)',
    ),
    "q3": (
        'Two different things add up: the paths of one backward() (the chain rule), and the '
        'results of several backward() calls (into .grad).',
        'a: the three paths of x*x + 3*x give 2x + 3. b: two backward() calls, nothing '
        'cleared. c: .grad was set to None between the two calls. d: one backward() of a sum '
        'of two losses gives the sum of their gradients.',
    ),
}
