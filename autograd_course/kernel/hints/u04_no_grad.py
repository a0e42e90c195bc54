"""Hints for assignment 04_no_grad: ``hint("qN")`` shows them in order."""

HINTS: dict[str, tuple[str, ...]] = {
    "q1": (
        "Evaluation code does not need a graph: compute the whole forward pass inside "
        "`with torch.no_grad():`. Without it, the result keeps the graph, and the graph keeps "
        "the hidden activations that tanh saved for backward().",
        "with torch.no_grad(): return torch.tanh(x @ W1 + b1) @ w2 + b2",
    ),
    "q2": (
        "Update w in place inside torch.no_grad() (w -= u). A snapshot must keep its values "
        "while w keeps changing: detach() cuts the graph but shares w's memory; you need both "
        "a cut and a copy.",
        "for u in updates: (with torch.no_grad(): w -= u), then kept.append(w.detach().clone()); "
        "return kept",
    ),
    "q3": (
        "An inference tensor fails where autograd must save it for backward(), and when it is "
        "changed in place outside inference mode. For each operation, ask which of its inputs "
        "its derivative needs: x + y needs neither, x * y needs both.",
        "A result computed outside inference mode is a normal tensor, even from an inference "
        "tensor; detach() of an inference tensor is still an inference tensor.",
    ),
    "q4": (
        'no_grad switches off recording of operations. A tensor you create with '
        'requires_grad=True, and a Parameter, still require grad inside it.',
        'a: computed inside no_grad. b: created with requires_grad=True. c: computed from a '
        "detached tensor. d: a layer's weight is an nn.Parameter.",
    ),
}
