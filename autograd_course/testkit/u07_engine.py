"""Typical wrong answers to assignment 07 Build your own autograd.

Question 1's answer cell is the whole ``Value`` class, whose five new local rules are the
answer: :func:`value_class` writes the class with the rules given (the reference rules by
default), so that each wrong answer below changes one rule and keeps the rest of the class.
"""

from __future__ import annotations

import textwrap

from autograd_course.testkit.answers import Wrong, function, wrong

_STUB = "# YOUR CODE HERE\nraise NotImplementedError()"

#: Words that would say which prediction of question 4 is wrong, or why: its message says how
#: many are wrong, never which.
_NAMES_A_PREDICTION = ['predicted["', "a.grad", "b.grad", "two paths", "path", "replace",
                       "visited first", "passes 0", "forwards", "adds up", "second call",
                       "sum of both"]

#: The ``Value`` class of the assignment; ``__DIV__``... stand for the bodies of the new rules.
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

    # The lesson's operations, with their rules.
    def __add__(self, other):
        other = other if isinstance(other, Value) else Value(other)
        out = Value(self.data + other.data, (self, other), "+")
        out._local_grads = lambda: (1.0, 1.0)
        return out

    def __mul__(self, other):
        other = other if isinstance(other, Value) else Value(other)
        out = Value(self.data * other.data, (self, other), "*")
        out._local_grads = lambda: (other.data, self.data)
        return out

    def __pow__(self, p):  # p is a constant number, not a Value
        out = Value(self.data**p, (self,), f"**{p}")
        out._local_grads = lambda: (p * self.data ** (p - 1),)
        return out

    def exp(self):
        out = Value(math.exp(self.data), (self,), "exp")
        out._local_grads = lambda: (out.data,)
        return out

    def tanh(self):
        out = Value(math.tanh(self.data), (self,), "tanh")
        out._local_grads = lambda: (1.0 - out.data**2,)
        return out

    def relu(self):
        out = Value(max(self.data, 0.0), (self,), "relu")
        out._local_grads = lambda: (1.0 if self.data > 0 else 0.0,)
        return out

    # The new operations: write their local rules.
    def __truediv__(self, other):  # a / b, a node with the two inputs (a, b)
        other = other if isinstance(other, Value) else Value(other)
        out = Value(self.data / other.data, (self, other), "/")

        def local_grads():  # (d out / d self, d out / d other)
__DIV__

        out._local_grads = local_grads
        return out

    def __rpow__(self, c):  # c ** a: c a constant number > 0, the exponent a is this Value
        out = Value(c**self.data, (self,), f"{c}**")

        def local_grads():  # (d out / d self,)
__RPOW__

        out._local_grads = local_grads
        return out

    def log(self):  # the natural logarithm, for self.data > 0
        out = Value(math.log(self.data), (self,), "log")

        def local_grads():  # (d out / d self,)
__LOG__

        out._local_grads = local_grads
        return out

    def sigmoid(self):
        out = Value(1.0 / (1.0 + math.exp(-self.data)), (self,), "sigmoid")

        def local_grads():  # (d out / d self,)
__SIGMOID__

        out._local_grads = local_grads
        return out

    def sin(self):
        out = Value(math.sin(self.data), (self,), "sin")

        def local_grads():  # (d out / d self,)
__SIN__

        out._local_grads = local_grads
        return out

    # Built from the operations above: they need no local rule of their own.
    def __neg__(self):  # -a
        return self * -1.0

    def __sub__(self, other):  # a - b
        return self + (-other)

    def __radd__(self, other):  # 2.0 + a
        return self + other

    def __rmul__(self, other):  # 2.0 * a
        return self * other

    def __rsub__(self, other):  # 2.0 - a
        return (-self) + other

    def __rtruediv__(self, other):  # 2.0 / a
        return Value(other) / self

    def backward(self):
        """Fill .grad of every node this value was computed from (questions 2 and 3)."""
        backpropagate(self, topological_order(self))
'''

#: The reference local rules (the bodies of ``local_grads``).
RULES = {
    "DIV": "return 1.0 / other.data, -self.data / other.data**2",
    "RPOW": "return (out.data * math.log(c),)",
    "LOG": "return (1.0 / self.data,)",
    "SIGMOID": "return (out.data * (1.0 - out.data),)",
    "SIN": "return (math.cos(self.data),)",
}


def value_class(solution: bool = False, **rules: str) -> str:
    """The class with the reference rules, except those given (``sin="return ..."``).

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


def _backpropagate(start: str = "grads = {node: 0.0 for node in order}",
                   seed: str = "grads[output] = 1.0", walk: str = "reversed(order)",
                   add: str = "grads[child] += slope * grads[node]",
                   leaf: str = "node.grad += grads[node]") -> str:
    """The reference backward pass with one of its steps replaced."""
    return "\n".join([
        _BACK,
        f"    {start}",
        f"    {seed}",
        f"    for node in {walk}:",
        "        for child, slope in zip(node._prev, node._local_grads()):",
        f"            {add}",
        "    for node in order:",
        "        if not node._prev:",
        f"            {leaf}",
        "    return grads",
    ])


#: Lesson 07's backward pass (cell 8), which keeps the gradients in .grad and returns nothing.
_LESSON_BACKPROPAGATE = function(_BACK, """
    for node in order:
        if node._prev:
            node.grad = 0.0
    output.grad = 1.0
    for node in reversed(order):
        for child, slope in zip(node._prev, node._local_grads()):
            child.grad += slope * node.grad
    """)


def _iterative(append_when: str = "inputs_done", visited: bool = True, ret: str = "order"
               ) -> str:
    """An explicit-stack topological order; ``append_when="popped"`` appends a node when it is
    first taken from the stack (before its inputs), ``visited=False`` keeps no visited set."""
    seen = "node not in visited" if visited else "True"
    mark = "visited.add(node)" if visited else "pass"
    if append_when == "popped":
        body = f"""
            order, visited = [], set()
            stack = [output]
            while stack:
                node = stack.pop()
                if {seen}:
                    {mark}
                    order.append(node)
                    stack.extend(node._prev)
            return {ret}
            """
    else:
        body = f"""
            order, visited = [], set()
            stack = [(output, False)]
            while stack:
                node, inputs_done = stack.pop()
                if inputs_done:
                    order.append(node)
                elif {seen}:
                    {mark}
                    stack.append((node, True))
                    stack.extend((child, False) for child in node._prev)
            return {ret}
            """
    return function(_TOPO, body)


WRONG: dict[str, list[Wrong]] = {
    "q1_local_rules": [
        wrong(
            "a / b: the slope in b with the wrong sign",
            value_class(div="return 1.0 / other.data, self.data / other.data**2"),
            "local_rule",
            ["a / b", "wrong sign", "-a / b ** 2"],
        ),
        wrong(
            "a / b: the factor a missing",
            value_class(div="return 1.0 / other.data, -1.0 / other.data**2"),
            "local_rule",
            ["factor a"],
        ),
        wrong(
            "c ** a by the power rule",
            value_class(rpow="return (self.data * c ** (self.data - 1),)"),
            "local_rule",
            ["power rule", "exponent"],
        ),
        wrong(
            "c ** a without log(c)",
            value_class(rpow="return (out.data,)"),
            "local_rule",
            ["log(c)"],
        ),
        wrong(
            "log's slope is log itself",
            value_class(log="return (math.log(self.data),)"),
            "local_rule",
            ["log(a) itself", "1 / a"],
        ),
        wrong(
            "sigmoid from its input",
            value_class(sigmoid="return (self.data * (1.0 - self.data),)"),
            "local_rule",
            ["a.sigmoid()", "output"],
        ),
        wrong(
            "sin's slope with the wrong sign",
            value_class(sin="return (-math.cos(self.data),)"),
            "local_rule",
            ["sign", "cos(a)"],
        ),
        wrong(
            "sin's slope is sin itself",
            value_class(sin="return (out.data,)"),
            "local_rule",
            ["sin(a) itself"],
        ),
        wrong(
            "a number, not a tuple",
            value_class(log="return 1.0 / self.data"),
            "type",
            ["tuple"],
            breaks='as a tuple of Python numbers',
        ),
        wrong("left blank", value_class(**{k.lower(): _STUB for k in RULES}), "blank",
              ["NotImplementedError"]),
    ],
    "q2_topological_order": [
        wrong(
            "the lesson's recursive walk",
            function(_TOPO, """
                order, visited = [], set()

                def visit(node):
                    if node not in visited:
                        visited.add(node)
                        for child in node._prev:
                            visit(child)
                        order.append(node)

                visit(output)
                return order
                """),
            "recursion",
            ["RecursionError", "stack"],
            breaks='your walk must also work on **deep graphs**',
        ),
        wrong(
            "mutable default arguments",
            """
            def topological_order(output, visited=set(), order=[]):
                stack = [(output, False)]
                while stack:
                    node, inputs_done = stack.pop()
                    if inputs_done:
                        order.append(node)
                    elif node not in visited:
                        visited.add(node)
                        stack.append((node, True))
                        stack.extend((child, False) for child in node._prev)
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
            breaks="a list of every node of `output`'s graph",
        ),
        wrong(
            "marks a node visited when it is pushed, not when it is expanded",
            function(_TOPO, """
                order, visited = [], {output}
                stack = [(output, False)]
                while stack:
                    node, inputs_done = stack.pop()
                    if inputs_done:
                        order.append(node)
                        continue
                    stack.append((node, True))
                    for child in node._prev:
                        if child not in visited:
                            visited.add(child)
                            stack.append((child, False))
                return order
                """),
            "order",
            ["before one of its inputs"],
            breaks="each node **after all of its inputs**",
        ),
        wrong("no visited set", _iterative(visited=False), "duplicates",
              ["more than once", "visited"], breaks='**each\nnode once**'),
        wrong("appends a node when it is taken from the stack", _iterative("popped"),
              ("reversed", "order"), ["before one of its inputs", "all of its inputs"],
                  breaks='each node **after all of its inputs**'),
        wrong("output first", _iterative(ret="order[::-1]"), "reversed",
              ["output first", "reversed"]),
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
            _iterative().replace("order.append(node)", 'order.append(node._op or "leaf")'),
            "type",
            ["not nodes"],
        ),
        wrong("left blank", _STUB, "blank", ["NotImplementedError"]),
    ],
    "q3_backpropagate": [
        wrong(
            "= instead of +=",
            _backpropagate(add="grads[child] = slope * grads[node]"),
            "overwritten",
            ["more than once", "+="],
            breaks="**adding** it to the\n   input's entry",
        ),
        wrong("visits inputs first", _backpropagate(walk="order"), "wrong_order",
              ["reversed(order)"]),
        wrong("no seed", _backpropagate(seed="pass"), "no_seed", ["grads[output] = 1.0"]),
        wrong(
            "no chain rule",
            _backpropagate(add="grads[child] += slope"),
            "no_chain",
            ["multiplies"],
        ),
        wrong(
            "the lesson's backpropagate",
            _LESSON_BACKPROPAGATE,
            "type",
            ["return", "nothing"],
            breaks='return `grads`',
        ),
        wrong(
            "the lesson's backpropagate, returning the .grad of every node",
            _LESSON_BACKPROPAGATE + "\n    return {node: node.grad for node in order}",
            "touched",
            ["changed the .grad", "leaves only"],
            breaks='leave the `.grad`\n   of every other node exactly as it was',
        ),
        wrong(
            "the leaves' .grad replaced",
            _backpropagate(leaf="node.grad = grads[node]"),
            "cleared_leaves",
            ["adds up across backward", "lesson 03"],
            breaks='**add** the gradient of each leaf',
        ),
        wrong("the leaves' .grad not written", _backpropagate(leaf="pass"),
              "leaves_not_written", ["did not change"]),
        wrong(
            "one dict for every call (a mutable default)",
            _backpropagate(start="grads.update({node: 0.0 for node in order if node not in "
                           "grads})").replace("(output, order):", "(output, order, grads={}):"),
            "not_reset",
            ["second pass", "new dict"],
            breaks='a **dict of its own**',
        ),
        wrong(
            "returns the leaves' gradients only",
            _backpropagate().replace("return grads",
                                     "return {n: grads[n] for n in order if not n._prev}"),
            "missing",
            ["without an entry", "every node"],
        ),
        wrong(
            "a dict keyed by id(node)",
            _backpropagate(start="grads = {id(node): 0.0 for node in order}",
                           seed="grads[id(output)] = 1.0",
                           add="grads[id(child)] += slope * grads[id(node)]",
                           leaf="node.grad += grads[id(node)]"),
            "missing",
            ["key it by the node itself"],
            breaks="keyed by the node\n   itself",
        ),
        wrong("left blank", _STUB, "blank", ["NotImplementedError"]),
    ],
    "q4_predict": [
        wrong(
            "one path of a",
            'predicted = {"a": -2.5, "b": 1.5, "c": 0.0, "d": -5.0}',
            "predictions",
            ["2 of the 4 predictions in predicted are wrong", "does not say which"],
            not_says=_NAMES_A_PREDICTION,
            hidden_only="prediction",
        ),
        wrong(
            "= still adds the paths",
            'predicted = {"a": -1.0, "b": -1.0, "c": 0.0, "d": -2.0}',
            "predictions",
            ["1 of the 4 predictions in predicted is wrong"],
            not_says=_NAMES_A_PREDICTION,
            hidden_only="prediction",
        ),
        wrong(
            "with =, the first write wins",
            'predicted = {"a": -1.0, "b": -2.5, "c": 0.0, "d": -2.0}',
            "predictions",
            ["1 of the 4 predictions in predicted is wrong"],
            not_says=_NAMES_A_PREDICTION,
            hidden_only="prediction",
        ),
        wrong(
            "walking forwards changes nothing",
            'predicted = {"a": -1.0, "b": 1.5, "c": 1.5, "d": -2.0}',
            "predictions",
            ["1 of the 4 predictions in predicted is wrong"],
            not_says=_NAMES_A_PREDICTION,
            hidden_only="prediction",
        ),
        wrong(
            ".grad replaced by the second call",
            'predicted = {"a": -1.0, "b": 1.5, "c": 0.0, "d": -1.0}',
            "predictions",
            ["1 of the 4 predictions in predicted is wrong"],
            not_says=_NAMES_A_PREDICTION,
            hidden_only="prediction",
        ),
        wrong(
            "tensors",
            'predicted = {"a": torch.tensor(-1.0), "b": 1.5, "c": 0.0, "d": -2.0}',
            "type",
            [".item()"],
        ),
        wrong("a key missing", 'predicted = {"a": -1.0, "b": 1.5}', "values", ["keys"]),
        wrong("left blank", _STUB, "blank", ["NotImplementedError"]),
    ],
}
