"""Typical wrong answers to assignment 07 Build your own autograd.

Question 1's answer cell is the whole ``Value`` class, whose six local rules are the answer:
:func:`value_class` writes the class with the rules given (the reference rules by default),
so that each wrong answer below changes one rule and keeps the rest of the class.
"""

from __future__ import annotations

import textwrap

from autograd_course.testkit.answers import Wrong, function, wrong

_STUB = "# YOUR CODE HERE\nraise NotImplementedError()"

#: The ``Value`` class of the assignment; ``__ADD__``... stand for the bodies of the rules.
VALUE_CLASS = '''
class Value:
    """A scalar that records the operations that made it, for automatic differentiation."""

    def __init__(self, data, _prev=(), _op="", label=""):
        self.data = float(data)
        self.grad = 0.0  # d output / d self, filled by backward()
        self._prev = tuple(_prev)  # the inputs (a tuple: x * x has the input x twice)
        self._op = _op  # the operation that made it; "" for a leaf
        self.label = label  # a name for the pictures
        self._local_grads = lambda: ()  # the local rule: one slope per input

    def __repr__(self):
        return f"Value(data={self.data}, grad={self.grad})"

    def __add__(self, other):
        other = other if isinstance(other, Value) else Value(other)
        out = Value(self.data + other.data, (self, other), "+")

        def local_grads():  # (d out / d self, d out / d other)
__ADD__

        out._local_grads = local_grads
        return out

    def __mul__(self, other):
        other = other if isinstance(other, Value) else Value(other)
        out = Value(self.data * other.data, (self, other), "*")

        def local_grads():  # (d out / d self, d out / d other)
__MUL__

        out._local_grads = local_grads
        return out

    def __pow__(self, p):  # p is a constant number, not a Value
        out = Value(self.data**p, (self,), f"**{p}")

        def local_grads():  # (d out / d self,)
__POW__

        out._local_grads = local_grads
        return out

    def exp(self):
        out = Value(math.exp(self.data), (self,), "exp")

        def local_grads():  # (d out / d self,)
__EXP__

        out._local_grads = local_grads
        return out

    def tanh(self):
        out = Value(math.tanh(self.data), (self,), "tanh")

        def local_grads():  # (d out / d self,)
__TANH__

        out._local_grads = local_grads
        return out

    def relu(self):
        out = Value(max(self.data, 0.0), (self,), "relu")

        def local_grads():  # (d out / d self,): 0 where self.data <= 0
__RELU__

        out._local_grads = local_grads
        return out

    # Built from the operations above: they need no local rule of their own.
    def __neg__(self):  # -a
        return self * -1.0

    def __sub__(self, other):  # a - b
        return self + (-other)

    def __truediv__(self, other):  # a / b
        return self * other**-1

    def __radd__(self, other):  # 2.0 + a
        return self + other

    def __rmul__(self, other):  # 2.0 * a
        return self * other

    def __rsub__(self, other):  # 2.0 - a
        return (-self) + other

    def __rtruediv__(self, other):  # 2.0 / a
        return self**-1 * other

    def backward(self):
        """Fill .grad of every node this value was computed from (questions 2 and 3)."""
        backpropagate(self, topological_order(self))
'''

#: The reference local rules (the bodies of ``local_grads``).
RULES = {
    "ADD": "return 1.0, 1.0",
    "MUL": "return other.data, self.data",
    "POW": "return (p * self.data ** (p - 1),)",
    "EXP": "return (out.data,)",
    "TANH": "return (1.0 - out.data**2,)",
    "RELU": "return (1.0 if self.data > 0 else 0.0,)",
}


def value_class(solution: bool = False, **rules: str) -> str:
    """The class with the reference rules, except those given (``tanh="return ..."``).

    ``solution=True`` wraps each rule in ``### BEGIN SOLUTION`` / ``### END SOLUTION`` (the
    instructor's cell); ``rules`` values replace single rules (``blank`` stubs included).
    """
    text = textwrap.dedent(VALUE_CLASS).strip("\n")
    for key, body in RULES.items():
        body = rules.get(key.lower(), body)
        if solution and key.lower() not in rules:
            body = f"### BEGIN SOLUTION\n{body}\n### END SOLUTION"
        text = text.replace(f"__{key}__", textwrap.indent(body, " " * 12))
    return text


_TOPO = "def topological_order(output):"
_BACK = "def backpropagate(output, order):"


def _backpropagate(reset: str = "if node._prev:\n    node.grad = 0.0",
                   seed: str = "output.grad = 1.0", walk: str = "reversed(order)",
                   add: str = "child.grad += slope * node.grad") -> str:
    """The reference backward pass with one of its steps replaced."""
    return "\n".join([
        _BACK,
        "    for node in order:",
        textwrap.indent(reset, " " * 8),
        f"    {seed}",
        f"    for node in {walk}:",
        "        for child, slope in zip(node._prev, node._local_grads()):",
        f"            {add}",
    ])


WRONG: dict[str, list[Wrong]] = {
    "q1_local_rules": [
        wrong(
            "tanh from its input",
            value_class(tanh="return (1.0 - self.data**2,)"),
            "local_rule",
            ["a.tanh()", "1 - tanh(a) ** 2", "output"],
        ),
        wrong(
            "a * b: each input its own value",
            value_class(mul="return self.data, other.data"),
            "local_rule",
            ["a * b", "d(a * b)/da = b"],
        ),
        wrong(
            "a ** p without the factor p",
            value_class(pow="return (self.data ** (p - 1),)"),
            "local_rule",
            ["a ** p", "p * a ** (p - 1)"],
        ),
        wrong(
            "relu's slope always 1",
            value_class(relu="return (1.0,)"),
            "local_rule",
            ["a.relu()", "0"],
        ),
        wrong(
            "exp's slope from its input",
            value_class(exp="return (self.data,)"),
            "local_rule",
            ["a.exp()", "exp(a)"],
        ),
        wrong(
            "a + b with the slopes of a * b",
            value_class(add="return other.data, self.data"),
            "local_rule",
            ["a + b", "= 1"],
        ),
        wrong(
            "a number, not a tuple",
            value_class(exp="return out.data"),
            "type",
            ["tuple"],
        ),
        wrong("left blank", value_class(**{k.lower(): _STUB for k in RULES}), "blank",
              ["NotImplementedError"]),
    ],
    "q2_topological_order": [
        wrong(
            "mutable default arguments",
            """
            def topological_order(output, visited=set(), order=[]):
                def visit(node):
                    if node not in visited:
                        visited.add(node)
                        for child in node._prev:
                            visit(child)
                        order.append(node)

                visit(output)
                return order
            """,
            "mutable_default",
            ["earlier call", "visited=set()"],
        ),
        wrong(
            "no walk: every node made since the last call, in the order made",
            """
            _made = []
            _made_by = Value.__init__


            def _recording_init(self, *args, **kwargs):
                _made_by(self, *args, **kwargs)
                _made.append(self)


            Value.__init__ = _recording_init


            def topological_order(output):
                order = _made[: _made.index(output) + 1]
                del _made[:]
                return order
            """,
            "extra",
            ["not in the graph"],
            hidden_only=True,
        ),
        wrong(
            "no visited set",
            function(_TOPO, """
                order = []

                def visit(node):
                    for child in node._prev:
                        visit(child)
                    order.append(node)

                visit(output)
                return order
                """),
            "duplicates",
            ["more than once", "visited"],
        ),
        wrong(
            "appends a node before its inputs",
            function(_TOPO, """
                order, visited = [], set()

                def visit(node):
                    if node not in visited:
                        visited.add(node)
                        order.append(node)
                        for child in node._prev:
                            visit(child)

                visit(output)
                return order
                """),
            ("reversed", "order"),
            ["append a node"],
        ),
        wrong(
            "output first",
            function(_TOPO, """
                order, visited = [], set()

                def visit(node):
                    if node not in visited:
                        visited.add(node)
                        for child in node._prev:
                            visit(child)
                        order.append(node)

                visit(output)
                return order[::-1]
                """),
            "reversed",
            ["output first", "reversed"],
        ),
        wrong(
            "only the output's own inputs",
            function(_TOPO, "return list(output._prev) + [output]"),
            "missing",
            ["misses", "down to the leaves"],
        ),
        wrong(
            "a set",
            function(_TOPO, """
                found = {output}
                for node in output._prev:
                    found.add(node)
                return found
                """),
            "type",
            ["a list"],
        ),
        wrong(
            "labels instead of nodes",
            function(_TOPO, """
                order, visited = [], set()

                def visit(node):
                    if node not in visited:
                        visited.add(node)
                        for child in node._prev:
                            visit(child)
                        order.append(node._op or "leaf")

                visit(output)
                return order
                """),
            "type",
            ["not nodes"],
        ),
        wrong(
            "appends a node between its inputs",
            function(_TOPO, """
                order, visited = [], set()

                def visit(node):
                    if node not in visited:
                        visited.add(node)
                        inputs = list(node._prev)
                        if inputs:
                            visit(inputs[0])
                        order.append(node)
                        for child in inputs[1:]:
                            visit(child)

                visit(output)
                return order
                """),
            "order",
            ["before one of its inputs", "append a node"],
        ),
        wrong("left blank", _STUB, "blank", ["NotImplementedError"]),
    ],
    "q3_backpropagate": [
        wrong(
            "= instead of +=",
            _backpropagate(add="child.grad = slope * node.grad"),
            "overwritten",
            ["more than once", "+="],
        ),
        wrong("visits inputs first", _backpropagate(walk="order"), "wrong_order",
              ["reversed(order)"]),
        wrong("no seed", _backpropagate(seed="pass"), "no_seed", ["output.grad = 1.0"]),
        wrong(
            "seed before the reset",
            function(_BACK, """
                output.grad = 1.0
                for node in order:
                    if node._prev:
                        node.grad = 0.0
                for node in reversed(order):
                    for child, slope in zip(node._prev, node._local_grads()):
                        child.grad += slope * node.grad
                """),
            "no_seed",
            ["after the intermediate nodes are reset"],
        ),
        wrong(
            "no chain rule",
            _backpropagate(add="child.grad += slope"),
            "no_chain",
            ["multiplies"],
        ),
        wrong(
            "clears the leaves too",
            _backpropagate(reset="node.grad = 0.0"),
            "cleared_leaves",
            ["adds up across backward", "lesson 03"],
        ),
        wrong(
            "no reset of the intermediate nodes",
            _backpropagate(reset="pass"),
            "not_reset",
            ["intermediate nodes kept"],
        ),
        wrong("left blank", _STUB, "blank", ["NotImplementedError"]),
    ],
    "q4_predict": [
        wrong(
            "one path of a",
            'predicted = {"a": -3.0, "b": -3.0, "c": 2.0, "d": -6.0}',
            "one_path",
            ["two paths"],
            hidden_only=True,
        ),
        wrong(
            "= still adds the paths",
            'predicted = {"a": -2.0, "b": -2.0, "c": 2.0, "d": -4.0}',
            "not_replaced",
            ["replaces"],
            hidden_only=True,
        ),
        wrong(
            "with =, the first write wins",
            'predicted = {"a": -2.0, "b": 1.0, "c": 2.0, "d": -4.0}',
            "replaced_order",
            ["visited before"],
            hidden_only=True,
        ),
        wrong(
            "= breaks every gradient",
            'predicted = {"a": -2.0, "b": -3.0, "c": 0.0, "d": -4.0}',
            "used_once",
            ["used once"],
            hidden_only=True,
        ),
        wrong(
            ".grad replaced by the second call",
            'predicted = {"a": -2.0, "b": -3.0, "c": 2.0, "d": -2.0}',
            "replaced",
            ["adds up"],
            hidden_only=True,
        ),
        wrong(
            "tensors",
            'predicted = {"a": torch.tensor(-2.0), "b": -3.0, "c": 2.0, "d": -4.0}',
            "type",
            [".item()"],
        ),
        wrong("a key missing", 'predicted = {"a": -2.0, "b": -3.0}', "values", ["keys"]),
        wrong("left blank", _STUB, "blank", ["NotImplementedError"]),
    ],
}
