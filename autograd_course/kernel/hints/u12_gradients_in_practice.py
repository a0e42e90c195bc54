"""Hints for assignment 12_gradients_in_practice: ``hint("qN")`` shows them in order."""

HINTS: dict[str, tuple[str, ...]] = {
    "q1": (
        "Two operations of training_step take the log of a probability. Run it on a batch "
        "with large inputs under torch.autograd.detect_anomaly(), or print the loss's two "
        "terms: where softmax rounds a probability to 0 in float32, log gives -inf, and "
        "0 * -inf (in the entropy) is NaN; in the cross-entropy, a target probability of 0 "
        "makes the loss inf and its backward 1/p inf. Patching the forward with torch.where "
        "or nan_to_num leaves the NaN in the backward.",
        "Never take the log of a probability: the log-probabilities come straight from the "
        "logits, log_softmax(z) = z - logsumexp(z), finite (-900, say) where the probability "
        "itself is 0. Both terms follow from them: the cross-entropy is the mean of minus "
        "the log-probability of each row's target (nll_loss does this), and p log p is "
        "exp(log-probability) times the log-probability, 0 times a finite number where p is "
        "0. Then backward and the SGD step as in training_step.",
    ),
    "q2": (
        "Three kinds of x need care. At x = 0 the formula is 0 / 0: give the value there "
        "from B's series, and make sure the other branch of torch.where is computed on a "
        "tensor without zeros (its backward runs too). For large positive x, exp(x) "
        "overflows: multiply the numerator and the denominator by exp(-x). For large "
        "negative x, exp(-x) overflows in that second form, so keep x / expm1(x) there.",
        "Build safe inputs first: one tensor equal to x where x < 0 and to -1.0 elsewhere, "
        "another equal to x where x > 0 and to 1.0 elsewhere. The first goes into "
        "x / expm1(x), the second into x exp(-x) / (-expm1(-x)); choose between the two "
        "results by the sign of x with torch.where. Where x == 0, a third torch.where puts "
        "an expression of x whose value is 1 and whose derivative is -1/2 (B's first two "
        "terms), so that the gradient there is not the 0 of a constant.",
    ),
    "q3": (
        "GradScaler does the bookkeeping: scaler.scale(loss).backward() computes the scaled "
        "gradients, scaler.unscale_(optimizer) divides them by the scale and notes whether "
        "any was inf or NaN, scaler.step(optimizer) steps only when none was, and "
        "scaler.update() halves or doubles the scale. Your part is the order, and where the "
        "clipping goes.",
        "Per batch: optimizer.zero_grad(); note scaler.get_scale() in your list; the scaled "
        "loss's backward; scaler.unscale_(optimizer); clip_grad_norm_ over [w, b] with "
        "max_norm (on true gradients now, so max_norm means what it says); scaler.step, then "
        "scaler.update. w and b are leaf copies of params' tensors with requires_grad, "
        "handed to torch.optim.SGD with lr; loss_fn takes them in a dict.",
    ),
    "q4": (
        "Place each g among float16's edges: from 2**-14 (about 6.10e-5) up to 65504, "
        "normal; below 2**-14, subnormal, unless it rounds to 0, which it does when it is at "
        "most half of 2**-24, the smallest subnormal.",
        "Compare g with two numbers: 2**-25 (about 2.98e-8: at most that, it rounds to 0; "
        "above it, to 2**-24 at least, not to 0) and 2**-14 (about 6.1035e-5: below it, "
        "subnormal, even when it looks like 6.1e-5 at two digits). Only a g near one of "
        "them needs more than a glance: write both to four digits before you place it.",
    ),
    "q5": (
        "Work out g * s first (2**8 = 256, 2**12 = 4096, 2**14 = 16384, 2**16 = 65536). "
        "Then place it as in question 4; and at the top, from 65520 up it is inf.",
        "Compare g * s with three numbers: 2**-25 (about 2.98e-8: at most that, 0), 2**-14 "
        "(about 6.1035e-5: below it, subnormal) and 65520 (from there up, inf; 65504 is the "
        "largest float16, and the float16 numbers just below it are 32 apart). Only a "
        "product near one of these three needs more than a glance: compute it to four "
        "digits before you place it.",
    ),
}
