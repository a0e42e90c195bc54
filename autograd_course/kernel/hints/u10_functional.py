"""Hints for assignment 10_functional: ``hint("qN")`` shows them in order."""

HINTS: dict[str, tuple[str, ...]] = {
    "q1": (
        "Two steps. First the per-sample gradients, as in the lesson's section 3: the loss of "
        "ONE sample as a function of a dict of parameters (functional_call, cross_entropy "
        "of its logits and its label), then grad and vmap over the samples, which gives "
        "{name: tensor of shape (n, *param.shape)}. Then the clipping, on those stacked "
        "gradients: one norm per sample, a factor per sample, a mean over the samples.",
        "A sample's norm adds up the squares of ALL its entries, over every parameter: for "
        "each entry g of the dict, g.flatten(1) has one row per sample; sum the squares of "
        "each row, add those sums over the parameters, and take the square root: n numbers. "
        "The factor min(1, max_norm / norm) is torch.clamp(max_norm / norms, max=1.0), n "
        "numbers; multiply each sample's rows by its factor (reshape the factors to broadcast "
        "over the parameter's dimensions) and average over dimension 0. (A loop over the "
        "samples with torch.autograd.grad gives the same per-sample gradients.)",
    ),
    "q2": (
        "Forward mode asks the Function for J times a tangent, where backward gives J^T times "
        "a gradient. Differentiate y_k = log(sum over j <= k of exp(x_j)) along a direction "
        "x_t: each x_j with j <= k moves y_k by exp(x_j - y_k) x_t[j]. A running sum over "
        "j <= k is a cumulative sum (torch.cumsum), as the backward's sum over k >= j is a "
        "reversed one.",
        "Three additions. In setup_context, save x and the output for forward mode too (as "
        "tensors saved for it, not as attributes of ctx). In the class, the attribute that "
        "lets vmap run the Function's methods on batches. And a @staticmethod jvp(ctx, x_t) "
        "that unpacks x and y from ctx.saved_tensors and returns, for each k, exp(-y_k) times "
        "the sum over j <= k of exp(x_j) x_t[j]: exp(-y_k) does not depend on j, so it comes "
        "out of the sum, and what remains is a running sum that torch computes in one call.",
    ),
    "q3": (
        "Two passes, both from the lesson's section 4: a jvp of f at x along v gives J v (m "
        "numbers); a vjp of f at x, applied to a vector of m numbers u, gives J^T u (n "
        "numbers). Apply the second to the result of the first. Neither forms J.",
        "torch.func.jvp(f, (x,), (v,)) returns the pair (f(x), J v). torch.func.vjp(f, x) "
        "returns the pair (f(x), a function): called on J v, that function returns a tuple "
        "with one entry per input of f, here one, J^T (J v). (torch.func.linearize(f, x) "
        "returns a function that gives J v too.)",
    ),
    "q4": (
        "Only the first and the last shape matter: jacfwd runs one jvp per entry of x, "
        "jacrev one vjp per entry of y. The steps between change the cost of each pass, not "
        "the number of passes. A shape's entries are the product of its sizes.",
        "Count the entries of the input and of the output (a shape with no sizes, (), is a "
        "single number; math.prod and np.prod both handle it). The function with the smaller "
        "count wins, and that count is its number of passes; when the two counts are equal, "
        "the rule of the question decides.",
    ),
}
