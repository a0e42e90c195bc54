"""Hints for assignment 10_functional: ``hint("qN")`` shows them in order."""

HINTS: dict[str, tuple[str, ...]] = {
    "q1": (
        "Write the loss of ONE sample as a function of the parameters: loss(params, sample, "
        "label), with the logits from torch.func.functional_call(model, params, (sample,)) "
        "and torch.nn.functional.cross_entropy(logits, label). torch.func.grad(loss) is then "
        "the gradient of that sample's loss; vmap maps it over the samples.",
        "params = {name: p.detach() for name, p in model.named_parameters()}; then "
        "torch.func.vmap(torch.func.grad(loss), in_dims=(None, 0, 0))(params, x, y): None "
        "shares the parameters between the samples, 0 maps over the rows of x and y. It "
        "returns a dict with the parameters' names, each entry of shape (n, *param.shape). (A "
        "loop over the samples works too: torch.autograd.grad of each sample's loss, or "
        "backward() with .grad cleared before and p.grad.clone() kept after.)",
    ),
    "q2": (
        "H v is the derivative of the gradient along v: the gradient function "
        "torch.func.grad(f) maps x to g(x), and its jvp along v is H(x) v (forward over "
        "reverse). Or, with torch.autograd.grad: g with create_graph=True, then the "
        "gradient of the number g @ v.",
        "torch.func.jvp(torch.func.grad(f), (x,), (v,)) returns a pair (g, H v): return "
        "the second. Not g * v, and not the gradient of g.sum() (that is H times a vector "
        "of ones). Keep x and v float64.",
    ),
    "q3": (
        "Forward mode carries a tangent with x through f: torch.func.jvp(f, (x,), (v,)) "
        "returns (f(x), J v). vjp, jacrev, backward() and torch.autograd.functional.jvp all "
        "run reverse passes, which a function with forward mode only cannot do.",
        "Either return torch.func.jvp(f, (x,), (v,))[1], or with torch.autograd.forward_ad: "
        "inside `with forward_ad.dual_level():`, y = f(forward_ad.make_dual(x, v)) and "
        "return forward_ad.unpack_dual(y).tangent. Use v as it is given.",
    ),
    "q4": (
        "Only the first and the last shape matter: jacfwd runs one jvp per entry of x, "
        "jacrev one vjp per entry of y. The steps between change the cost of each pass, not "
        "the number of passes. A shape's entries are the product of its sizes.",
        "n_in, n_out = math.prod(shapes[0]), math.prod(shapes[-1]) (math.prod(()) is 1, a "
        "single number). If n_in < n_out return ('jacfwd', n_in); otherwise, ties included, "
        "('jacrev', n_out).",
    ),
}
