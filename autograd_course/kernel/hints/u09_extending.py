"""Hints for assignment 09_extending: ``hint("qN")`` shows them in order."""

HINTS: dict[str, tuple[str, ...]] = {
    "q1": (
        "forward computes the values without recording anything, so a division by zero "
        "there only needs a value to put in its place: torch.where(x == 0, 1.0, ...), with "
        "a tensor that has no zeros in the other branch. Save x for backward with "
        "ctx.save_for_backward(x) (an attribute such as ctx.x escapes autograd's in-place "
        "check); backward receives grad_output and returns grad_output * sinc'(x).",
        "In backward, read x back from ctx.saved_tensors and pick, entry by entry with "
        "torch.where, the series where |x| is small and the quotient rule's formula "
        "elsewhere. Compute the formula on a copy of x whose small entries are replaced by "
        "1, so that nothing divides by 0. The three terms of the question are right to 6 "
        "digits below |x| = 1e-2, not much beyond; the series is 0 at 0 by itself. Both "
        "branches are multiplied by grad_output, in x's dtype, into a new tensor: "
        "grad_output itself stays as it was.",
    ),
    "q2": (
        "torch.autograd.gradcheck(fn, inputs, raise_exception=False) returns True when the "
        "backward agrees with finite differences for every input that requires grad, and "
        "False otherwise. It checks only the inputs that require grad: so ask it about one "
        "input at a time, on new copies each time (a copy switched on for one input stays "
        "on for the next).",
        "For input i, make copies of all the inputs (detached, cloned) of which only the i-th "
        "requires grad, and ask gradcheck about function.apply itself on them, with "
        "raise_exception=False so that it answers instead of raising. Give it the Function's "
        "output as it is, not a sum of it: it must see the whole Jacobian. Its answer says "
        "whether the gradients are right; yours, whether they are wrong.",
    ),
    "q3": (
        "Run your wrong_inputs of question 2 on Bump: it says which gradients are wrong. "
        "backward returns one gradient per input of forward, in forward's order (x, w), each "
        "the product of grad and a partial derivative of f.",
        "Three things to fix: the order of the gradients returned (forward's order: x, then "
        "w); the factor grad, missing from both (the chain rule); and df/dw: f = w * "
        "exp(-w x**2) is a product of two factors that both depend on w, so the product rule "
        "has two terms, and -x**2 * y is only one of them. Build new tensors from grad; never "
        "change grad itself in place, nor a saved tensor (y is the caller's output).",
    ),
    "q4": (
        "row_clip_hook(max_norm) defines a function hook(grad) inside it and returns it (a "
        "closure: the hook remembers max_norm). The norm of each row is "
        "torch.linalg.vector_norm(grad, dim=1, keepdim=True), a column you can multiply "
        "grad by. A row is clipped when that norm itself (not the sum of its squares) is "
        "larger than max_norm.",
        "Each row's factor is the smaller of 1 and max_norm divided by the row's norm "
        "(torch.clamp with max=1.0 takes that smaller one; a row of zeros gives inf there, "
        "which the clamp turns into 1). Multiply grad by the column of factors and return the "
        "product, a new tensor: no in-place change of grad.",
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
