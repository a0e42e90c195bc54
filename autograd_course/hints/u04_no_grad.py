"""Hints for assignment 04_no_grad: ``hint("qN")`` shows them in order."""

HINTS: dict[str, tuple[str, ...]] = {
    "q1": (
        'Evaluation code does not need a graph: compute inside `with torch.no_grad():`.',
        'with torch.no_grad(): return x @ w + b',
    ),
    "q2": (
        'detach() cuts the graph but keeps the memory; you need both a cut and a copy.',
        'return t.detach().clone()',
    ),
    "q3": (
        'Like q1, with another context manager.',
        'with torch.inference_mode(): return x @ w + b',
    ),
    "q4": (
        'no_grad switches off recording of operations. A tensor you create with '
        'requires_grad=True, and a Parameter, still require grad inside it.',
        'a: computed inside no_grad. b: created with requires_grad=True. c: computed from a '
        "detached tensor. d: a layer's weight is an nn.Parameter.",
    ),
}
