"""Hints for assignment 08_training: ``hint("qN")`` shows them in order."""

HINTS: dict[str, tuple[str, ...]] = {
    "q1": (
        "Two questions for the loop. What does backward() do to .grad when nobody clears it "
        "(lesson 03)? And what does history.append(loss) keep: a number, or a tensor with a "
        "grad_fn, and everything behind it (lesson 08, section 3)?",
        "Make optimizer.zero_grad() the first line of each step, and append loss.item() (a "
        "Python float) instead of loss. Keep the rest: mse_loss(model(x), y), backward(), "
        "step(), one history entry per step.",
    ),
    "q2": (
        "getattr(model, name) (or model.get_submodule(name)) is the layer. A parameter is "
        "frozen when it no longer requires grad; every tensor and every module has "
        "requires_grad_().",
        "getattr(model, name).requires_grad_(False), or the same on each of its .parameters(): "
        "that changes the layer's weight and bias only. Not .grad = None (the next backward() "
        "fills it again), not p.detach() (a new tensor; p stays as it was), not "
        "model.requires_grad_(False) (that freezes everything).",
    ),
    "q3": (
        "Make x = torch.tensor(x, dtype=torch.float64, requires_grad=True). The first "
        "torch.autograd.grad gives f'(x); to differentiate it again, it must have a graph of "
        "its own.",
        "(d1,) = torch.autograd.grad(f(x), x, create_graph=True); then (d2,) = "
        "torch.autograd.grad(d1, x); return (x - d1 / d2).item().",
    ),
}
