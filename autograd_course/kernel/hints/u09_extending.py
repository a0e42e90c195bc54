"""Hints for assignment 09_extending: ``hint("qN")`` shows them in order."""

HINTS: dict[str, tuple[str, ...]] = {
    "q1": (
        "forward computes the values without recording anything, so a division by zero "
        "there only needs a value to put in its place: torch.where(x == 0, 1.0, ...), with "
        "a tensor that has no zeros in the other branch. Save x for backward with "
        "ctx.save_for_backward(x); backward receives grad_output and returns "
        "grad_output * sinc'(x).",
        "In backward, pick the series where |x| is small (below 1e-2, say) and the formula "
        "elsewhere, both computed on tensors without zeros where they could divide by 0: "
        "series = -x/3 + x**3/30 - x**5/840 (it is 0 at 0), formula = (x cos x - sin x) / "
        "x**2 on torch.where(small, 1.0, x). Then return grad_output * torch.where(small, "
        "series, formula).",
    ),
    "q2": (
        "torch.autograd.gradcheck(fn, inputs, raise_exception=False) returns True when the "
        "backward agrees with finite differences for every input that requires grad, and "
        "False otherwise. It checks only the inputs that require grad: so ask it about one "
        "input at a time.",
        "For each i, make copies of all the inputs, t.detach().clone(), of which only the "
        "i-th requires grad (.requires_grad_(j == i)), and call gradcheck(function.apply, "
        "copies, raise_exception=False). The answer for input i is `not` what it returns; "
        "return the answers as a tuple.",
    ),
    "q3": (
        "Run your wrong_inputs of question 2 on Bump: it says which gradients are wrong. "
        "backward returns one gradient per input of forward, in forward's order (x, w), each "
        "the product of grad and a partial derivative of f.",
        "df/dx = -2 w x * y (with y = w exp(-w x**2)) is right, but must be multiplied by "
        "grad. f = w * exp(-w x**2) is a product of two factors that depend on w: "
        "df/dw = exp(-w x**2) - x**2 * y. Return grad * df/dx, grad * df/dw, in that order.",
    ),
    "q4": (
        "row_clip_hook(max_norm) defines a function hook(grad) inside it and returns it (a "
        "closure: the hook remembers max_norm). The norm of each row is "
        "torch.linalg.vector_norm(grad, dim=1, keepdim=True), a column you can multiply "
        "grad by.",
        "Each row's factor is min(1, max_norm / its norm): torch.clamp(max_norm / norms, "
        "max=1.0) (a row of zeros gets inf, clamped to 1). Return grad * factors, a new "
        "tensor: no in-place change of grad.",
    ),
    "q5": (
        "backward raises when a tensor that some operation saved for its backward has been "
        "changed in place after it was saved (its version counter moved on). So for each "
        "operation: what does it save, its input, its output, or nothing?",
        "sigmoid and tanh save their output (their derivatives are written with it), cos and "
        "pow save their input, relu saves its output, adding a number or multiplying or "
        "dividing by a number saves nothing. Then look for a saved tensor that an in-place "
        "operation changes later.",
    ),
}
