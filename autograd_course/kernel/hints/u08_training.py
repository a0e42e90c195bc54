"""Hints for assignment 08_training: ``hint("qN")`` shows them in order."""

HINTS: dict[str, tuple[str, ...]] = {
    "q1": (
        "Three questions for the loop. Where must .grad be cleared so that the chunks' "
        "gradients add up into one step (lesson 03)? Each chunk's loss is a mean over its "
        "chunk: what do parts such gradients add up to, compared with the gradient of the "
        "whole batch's mean? And what does total += loss keep (lesson 08, section 3)?",
        "Call optimizer.zero_grad() once per step, before the chunk loop; divide each chunk's "
        "loss by parts before backward(); add loss.item() (a Python float) to total. Keep the "
        "rest: one optimizer.step() after the chunks, one history entry per step.",
    ),
    "q2": (
        "Lesson 08's common mistake 5: a frozen parameter still moves when its .grad holds "
        "something at step(). Here freeze runs after backward(), so .grad holds this step's "
        "gradient, and zero_grad(set_to_none=False) leaves zeros in it later, which momentum "
        "turns into steps. SGD skips a parameter only when its .grad is None.",
        "For each p in getattr(model, name).parameters(): p.requires_grad_(False), so that no "
        "backward() fills .grad again, and p.grad = None, so that this step and every later "
        "one skip p. getattr(model, name) is exactly that layer, unlike a test on names that "
        "start with name.",
    ),
    "q3": (
        "Make x a leaf that requires grad: x = x.detach().requires_grad_(True). The gradient "
        "g = torch.autograd.grad(f(x), x, create_graph=True)[0] is a vector with a graph; "
        "row i of the Hessian is the gradient of g[i].",
        "H = torch.stack([torch.autograd.grad(g_i, x, retain_graph=True)[0] for g_i in g]); "
        "then return (x - torch.linalg.solve(H, g)).detach(). Not g / H.diagonal(), and not "
        "the gradient of g.sum(): both lose the mixed second derivatives.",
    ),
}
