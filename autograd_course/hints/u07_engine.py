"""Hints for assignment 07_engine: ``hint("qN")`` shows them in order."""

HINTS: dict[str, tuple[str, ...]] = {
    "q1": (
        "Each rule returns the local slopes d out / d input, one per input of out._prev and in "
        "the same order, as a tuple. Read the numbers of the forward pass: self.data, "
        "other.data, or out.data (the output itself).",
        "In math: a + b gives 1 and 1; a * b gives b and a (each input's slope is the other "
        "input); a ** p gives p * a ** (p - 1); exp gives exp(a), its output; tanh gives "
        "1 - tanh(a) ** 2, from its output; relu gives 1 where a > 0, else 0.",
        "A rule with one input still returns a tuple: return (out.data,) -- mind the comma. "
        "For tanh, return (1.0 - out.data**2,); for relu, (1.0 if self.data > 0 else 0.0,).",
    ),
    "q2": (
        "A depth-first search: visit a node's inputs (node._prev) before the node itself, and "
        "append the node to the list only after its inputs. Keep a set of the nodes already "
        "visited, so that a node reached along two paths is listed once.",
        "order, visited = [], set(); an inner def visit(node): if node is not in visited, add "
        "it, call visit(child) for each child in node._prev, then order.append(node). Call "
        "visit(output) and return order.",
    ),
    "q3": (
        "Three steps, in this order: set .grad = 0.0 for every node that has inputs (leave "
        "the leaves alone); set output.grad = 1.0; then walk reversed(order) and, at each node, "
        "pass slope * node.grad to each of its inputs.",
        "for node in reversed(order): for child, slope in zip(node._prev, node._local_grads()): "
        "child.grad += slope * node.grad. Use += : a node used twice must receive both paths.",
    ),
    "q4": (
        "Trace the backward pass by hand. In reverse topological order, y (the +) is visited "
        "before a * b. Write down what each visit adds (or, with =, writes) into a.grad and "
        "b.grad.",
        "a: the two paths of a add up, b + 1. With =, the last write wins, and the a * b node "
        "writes last (b * y.grad); b has one path either way (a * y.grad). A second backward() "
        "adds another b + 1 to a.grad.",
    ),
}
