"""Hints for assignment 05_sgd: ``hint("qN")`` shows them in order."""

HINTS: dict[str, tuple[str, ...]] = {
    "q1": (
        'Four steps: f(x).backward(); inside torch.no_grad() subtract lr * x.grad from x in '
        'place; clear x.grad; return x.',
        'loss = f(x); loss.backward(); with torch.no_grad(): x -= lr * x.grad; then x.grad = '
        'None; return x. (x = x - ... would make a new, non-leaf tensor.)',
    ),
    "q2": (
        "The lesson's loop prints exactly these rows: collect (x.item(), function(x).item()) "
        'after each optimizer.step().',
        'x = torch.tensor(x0, requires_grad=True); optimizer = torch.optim.SGD([x], lr=lr); '
        'append [x.item(), function(x).item()] (under no_grad) after each step; return '
        'torch.tensor(rows). Append numbers, not x itself: x changes in place.',
    ),
    "q3": (
        'Compute f before the step (for backward()) and f after it (under no_grad), then '
        'compare |after - before| with tol. Count the step before you test it.',
        'x = torch.tensor(x0, dtype=torch.float64, requires_grad=True); loop while steps < '
        'max_steps: steps += 1, zero_grad, before = f(x), before.backward(), step, after = '
        'f(x) under no_grad, break if abs(after - before) < tol; return x.item(), steps.',
    ),
}
