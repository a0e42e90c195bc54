"""Hints for assignment 07_engine: ``hint("qN")`` shows them in order."""

HINTS: dict[str, tuple[str, ...]] = {
    "q1": (
        "Each rule returns the local slopes d out / d input, one per input of out._prev and in "
        "the same order, as a tuple. Work each one out on paper first, then read the numbers "
        "of the forward pass: self.data, other.data, c, or out.data (the output itself).",
        "In math: d(a/b)/da = 1/b and d(a/b)/db = -a/b**2; d(c**a)/da = c**a * ln c (the "
        "exponent is the input, so the power rule does not apply); d log(a)/da = 1/a; "
        "d sigmoid(a)/da = s * (1 - s) with s the output; d sin(a)/da = cos(a).",
        "A rule with one input still returns a tuple: return (1.0 / self.data,) -- mind the "
        "comma. For c ** a, return (out.data * math.log(c),); for sigmoid, "
        "(out.data * (1.0 - out.data),).",
    ),
    "q2": (
        "The lesson's visit() calls itself for each input, so a chain of 20 000 nodes needs "
        "20 000 nested calls. Do the same walk with a list as your own stack: a loop pops a "
        "node, and pushes what is still to do.",
        "A node may be appended only once all its inputs are in the list. Push each node "
        "twice: first as (node, False), meaning 'expand it'; when that comes off the stack, "
        "mark the node visited, push (node, True), then push (child, False) for its inputs. "
        "When (node, True) comes off the stack, its inputs are done: append it.",
    ),
    "q3": (
        "Four steps: make a new dict, grads = {node: 0.0 for node in order}; seed "
        "grads[output] = 1.0; walk reversed(order), passing slope * grads[node] to each input "
        "of the node; finally add grads[leaf] to the .grad of each leaf (a node whose _prev is "
        "empty), and return grads.",
        "for node in reversed(order): for child, slope in zip(node._prev, node._local_grads()): "
        "grads[child] += slope * grads[node]. Never write node.grad for a node that has "
        "inputs; for a leaf, leaf.grad += grads[leaf].",
    ),
    "q4": (
        "Trace the lesson's backward pass by hand. Its depth-first order is [a, b, a + b, y], "
        "so walked backwards y (the *) comes before the + node. Write down what each visit "
        "adds (or, with =, writes) into a.grad and b.grad.",
        "a: two paths, (a + b) through the * and a through the +, which add up. With =, the "
        "+ node writes last. Walking forwards, the + node passes its gradient on while it is "
        "still 0. A second backward() adds another 2a + b to a.grad.",
    ),
}
