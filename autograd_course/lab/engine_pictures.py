"""Pictures of a computation graph that show the value and the gradient of every node.

Lesson 07 builds a scalar autograd engine (a ``Value`` class) and compares it with PyTorch;
the pictures of :mod:`autograd_course.kernel.graphs` (torchviz) show a graph's structure only,
these show the numbers as well:

- :func:`draw_engine` draws the graph of the lesson's engine, reading nodes by duck typing:
  any object with ``data`` and ``grad`` (numbers), ``_prev`` (the inputs it was computed
  from), ``_op`` (the operation's name, ``""`` for a leaf) and, optionally, ``label``;
- :func:`draw_torch` draws a real PyTorch graph after ``backward()``, walked from the output's
  ``grad_fn`` through ``next_functions``: values from the tensors, gradients from a mapping
  ``{name: gradient}`` that hooks filled during ``backward()`` (``Tensor.register_hook``),
  else from ``.grad`` (leaves, and tensors that called ``retain_grad()``);
- with Graphviz's ``dot`` both return a :class:`autograd_course.kernel.graphs.Picture` (a PNG,
  with the text rendering as its plain text); without it they print
  :data:`autograd_course.kernel.graphs.INSTALL_HINT` and return a text rendering
  (:class:`EngineText`, :class:`TorchText`), as :func:`autograd_course.kernel.graphs.draw_graph`
  does.

>>> class Node:  # any object with these attributes will do
...     def __init__(self, data, prev=(), op="", label=""):
...         self.data, self.grad, self._prev, self._op, self.label = data, 0.0, prev, op, label
>>> x = Node(3.0, label="x")
>>> y = Node(9.0, (x, x), "*", "y")
>>> y.grad, x.grad = 1.0, 6.0
>>> print(EngineText(y))
y = *  data 9.0000  grad 1.0000
└─ x  data 3.0000  grad 6.0000
└─ x  (drawn above)
"""

from __future__ import annotations

from collections.abc import Mapping

import torch

from autograd_course.kernel.graphs import INSTALL_HINT, Picture, dot_available

LEAF_COLOUR = "lightblue"  # the colours torchviz uses: blue leaves, a green output
OUTPUT_COLOUR = "darkolivegreen1"
OP_COLOUR = "lightgrey"


def _number(x) -> str:
    """A number with 4 decimals; a tensor as one number or a short list of them."""
    if isinstance(x, torch.Tensor):
        values = x.detach().reshape(-1).tolist()
        if len(values) == 1:
            return _number(values[0])
        if len(values) > 6:
            return f"shape {tuple(x.shape)}"
        return "[" + ", ".join(_number(v) for v in values) + "]"
    if x is None:
        return "None"
    return f"{float(x):.4f}"


def _escape(text: str) -> str:
    """Escape the characters that Graphviz's record labels treat as structure."""
    for char in "\\{}|<>":
        text = text.replace(char, "\\" + char)
    return text


def _record(name: str, value, grad) -> str:
    """A record label: name, data and grad one above the other (the graph runs left to right,
    so that a box is narrow and a whole graph fits the notebook's width)."""
    fields = [_escape(name)] if name else []
    fields += [f"data {_number(value)}", f"grad {_number(grad)}"]
    return " | ".join(fields)


def _digraph():
    import graphviz

    graph = graphviz.Digraph(graph_attr={"rankdir": "LR", "ranksep": "0.2", "nodesep": "0.1"})
    graph.attr("node", fontsize="12", fontname="Helvetica")
    return graph


def _operation(graph, name: str, label: str) -> None:
    """A grey oval: an operation (the engine's) or a backward function (PyTorch's)."""
    graph.node(name, label, shape="oval", style="filled", fillcolor=OP_COLOUR,
               margin="0.04,0.03")


# --- the lesson's engine -------------------------------------------------------------------


def engine_nodes(output) -> list:
    """Every node of ``output``'s graph once, in a fixed order (inputs before results)."""
    order, seen = [], set()

    def visit(node):
        if id(node) in seen:
            return
        seen.add(id(node))
        for child in node._prev:
            visit(child)
        order.append(node)

    visit(output)
    return order


def _engine_name(node) -> str:
    return getattr(node, "label", "") or ""


def engine_graph(output):
    """A ``graphviz.Digraph`` of ``output``'s graph with each node's data and grad.

    Each node is a box with its name, data and grad (blue: a leaf; green: ``output``); the
    operation that made a node is the grey oval in front of it. Arrows point the way the
    forward pass went; ``backward()`` walks them from right to left. A node used twice (as
    ``x`` in ``x * x``) has two arrows leaving it: two paths, whose gradients add up.
    """
    graph = _digraph()
    nodes = engine_nodes(output)
    names = {id(node): f"n{k}" for k, node in enumerate(nodes)}
    for node in nodes:
        name = names[id(node)]
        colour = OUTPUT_COLOUR if node is output else (LEAF_COLOUR if not node._prev else "white")
        graph.node(name, _record(_engine_name(node), node.data, node.grad), shape="record",
                   style="filled", fillcolor=colour)
        if node._prev:
            _operation(graph, name + "op", _escape(str(node._op)))
            graph.edge(name + "op", name)
            for child in node._prev:
                graph.edge(names[id(child)], name + "op")
    return graph


class EngineText:
    """A text rendering of an engine graph: the output first, each node's inputs below it."""

    def __init__(self, output):
        self.output = output

    def lines(self) -> list[str]:
        """The graph as lines: the output first, each node's inputs indented below it."""
        lines: list[str] = []
        self._walk(self.output, 0, set(), lines)
        return lines

    def _walk(self, node, depth: int, seen: set, lines: list[str]) -> None:
        prefix = "   " * (depth - 1) + "└─ " if depth else ""
        name = _engine_name(node) or ("" if node._prev else _number(node.data))
        text = (f"{name} = {node._op}" if name else str(node._op)) if node._prev else name
        if id(node) in seen:
            lines.append(f"{prefix}{text}  (drawn above)")
            return
        seen.add(id(node))
        lines.append(f"{prefix}{text}  data {_number(node.data)}  grad {_number(node.grad)}")
        for child in node._prev:
            self._walk(child, depth + 1, seen, lines)

    def __str__(self) -> str:
        return "\n".join(self.lines())

    def __repr__(self) -> str:
        return str(self)


def draw_engine(output):
    """Draw the graph of an engine's ``output`` with the data and grad of every node.

    A :class:`~autograd_course.kernel.graphs.Picture` of :func:`engine_graph` when Graphviz's
    ``dot`` is installed; otherwise the install hint is printed and an :class:`EngineText`
    is returned.
    """
    if dot_available():
        return Picture(engine_graph(output), str(EngineText(output)))
    print(INSTALL_HINT)
    return EngineText(output)


# --- a real PyTorch graph ------------------------------------------------------------------


def _grad_of(name: str, tensor: torch.Tensor, grads: Mapping | None):
    if grads is not None and name in grads:
        return grads[name]
    if tensor.is_leaf or tensor.retains_grad:
        return tensor.grad
    return None


class _TorchGraph:
    """The nodes of a torch graph (its ``grad_fn`` objects), named and in a fixed order."""

    def __init__(self, output: torch.Tensor, named: Mapping[str, torch.Tensor]):
        self.output = output
        self.named = dict(named)
        self.by_fn = {id(t.grad_fn): name for name, t in self.named.items()
                      if t.grad_fn is not None}
        self.leaf_names = {id(t): name for name, t in self.named.items() if t.grad_fn is None}
        self.fns: list = []
        seen: set[int] = set()

        def visit(fn):
            if fn is None or id(fn) in seen:
                return
            seen.add(id(fn))
            for child, _ in fn.next_functions:
                visit(child)
            self.fns.append(fn)

        visit(output.grad_fn)

    def tensor_of(self, fn):
        """(name, tensor) that ``fn`` made or holds (a leaf), or None for an unnamed result."""
        variable = getattr(fn, "variable", None)  # AccumulateGrad holds its leaf
        if variable is not None:
            return self.leaf_names.get(id(variable), "leaf"), variable
        if fn is self.output.grad_fn and id(fn) not in self.by_fn:
            return "output", self.output
        name = self.by_fn.get(id(fn))
        return None if name is None else (name, self.named[name])


def torch_graph(output: torch.Tensor, named: Mapping[str, torch.Tensor],
                grads: Mapping[str, torch.Tensor] | None = None):
    """A ``graphviz.Digraph`` of a torch graph with the value and gradient of named tensors.

    ``named`` maps names to the graph's tensors (leaves and intermediate results); ``grads``
    maps the same names to the gradients that hooks recorded during ``backward()``. Grey ovals
    are the backward functions autograd recorded (``MulBackward0``...); a box (name, data,
    grad) follows the function that made a named tensor; a leaf's box stands for its
    ``AccumulateGrad`` step. An unnamed intermediate result has no box: autograd kept no
    value for it that we could show.
    """
    walk = _TorchGraph(output, named)
    graph = _digraph()
    source = {}  # id(fn) -> the graph node that stands for fn's result
    for k, fn in enumerate(walk.fns):
        tensor = walk.tensor_of(fn)
        box = f"t{k}"
        if hasattr(fn, "variable"):
            name, leaf = tensor
            graph.node(box, _record(name, leaf, _grad_of(name, leaf, grads)), shape="record",
                       style="filled", fillcolor=LEAF_COLOUR)
            source[id(fn)] = box
            continue
        op = f"f{k}"
        _operation(graph, op, type(fn).__name__)
        for child, _ in fn.next_functions:
            if child is not None:
                graph.edge(source[id(child)], op)
        if tensor is None:
            source[id(fn)] = op
            continue
        name, value = tensor
        colour = OUTPUT_COLOUR if fn is output.grad_fn else "white"
        graph.node(box, _record(name, value, _grad_of(name, value, grads)), shape="record",
                   style="filled", fillcolor=colour)
        graph.edge(op, box)
        source[id(fn)] = box
    return graph


class TorchText:
    """A text rendering of a torch graph with values and gradients (see :func:`torch_graph`)."""

    def __init__(self, output: torch.Tensor, named: Mapping[str, torch.Tensor],
                 grads: Mapping[str, torch.Tensor] | None = None):
        self.walk = _TorchGraph(output, named)
        self.grads = grads

    def lines(self) -> list[str]:
        """The graph as lines: the output first, each step's inputs indented below it."""
        lines: list[str] = []
        if self.walk.output.grad_fn is not None:
            self._walk(self.walk.output.grad_fn, 0, set(), lines)
        return lines

    def _walk(self, fn, depth: int, seen: set, lines: list[str]) -> None:
        prefix = "   " * (depth - 1) + "└─ " if depth else ""
        tensor = self.walk.tensor_of(fn)
        if hasattr(fn, "variable"):
            text = f"{tensor[0]} (leaf)"
        else:
            text = type(fn).__name__ if tensor is None else f"{tensor[0]} = {type(fn).__name__}"
        if id(fn) in seen:
            lines.append(f"{prefix}{text}  (drawn above)")
            return
        seen.add(id(fn))
        if tensor is not None:
            name, value = tensor
            text += f"  data {_number(value)}  grad {_number(_grad_of(name, value, self.grads))}"
        lines.append(prefix + text)
        for child, _ in fn.next_functions:
            if child is not None:
                self._walk(child, depth + 1, seen, lines)

    def __str__(self) -> str:
        return "\n".join(self.lines())

    def __repr__(self) -> str:
        return str(self)


def draw_torch(output: torch.Tensor, named: Mapping[str, torch.Tensor],
               grads: Mapping[str, torch.Tensor] | None = None):
    """Draw a torch graph after ``backward()`` with the values and gradients of ``named``.

    A :class:`~autograd_course.kernel.graphs.Picture` of :func:`torch_graph` when Graphviz's ``dot``
    is installed; otherwise the install hint is printed and a :class:`TorchText` is
    returned.
    """
    if dot_available():
        return Picture(torch_graph(output, named, grads), str(TorchText(output, named, grads)))
    print(INSTALL_HINT)
    return TorchText(output, named, grads)
