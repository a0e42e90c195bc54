"""Computation-graph pictures: torchviz + Graphviz, with a text rendering when ``dot`` is missing.

In a notebook, ``draw_graph(loss, {"x": x})`` shows the picture (torchviz's ``make_dot``,
labelled by the course), or the same graph as text when Graphviz's ``dot`` is missing. A
picture (:class:`Picture`) is a PNG at most :data:`MAX_WIDTH` pixels wide, which every viewer
shows: JupyterLab opening a notebook it does not trust yet (it shows no SVG there: a lesson
just opened), and the grader's pages, which show no SVG of a student's. Its plain-text
alternative is the graph as text:

>>> import torch
>>> x = torch.tensor([1.0, 2.0], requires_grad=True)
>>> type(make_dot((x * x).sum(), {"x": x})).__name__
'Digraph'
>>> print(TextGraph((x * x).sum(), {"x": x}))
output ()
└─ SumBackward0
   └─ MulBackward0
      └─ AccumulateGrad -> x (2,) (leaf, .grad is filled)
      └─ AccumulateGrad -> x (2,) (leaf, .grad is filled)
"""

from __future__ import annotations

import shutil
import warnings
from collections.abc import Mapping

import torch

INSTALL_HINT = (
    "Graphviz's `dot` program is not installed, so the graph is shown as text.\n"
    "To see pictures: `sudo apt-get install graphviz` (Debian/Ubuntu), "
    "`brew install graphviz` (macOS) or `conda install -c conda-forge graphviz`, "
    "then restart the kernel."
)


def dot_available() -> bool:
    """Return True when Graphviz's ``dot`` binary is on the PATH."""
    return shutil.which("dot") is not None


def _named_steps(output, params):
    """Map ``id(grad_fn)`` to a name for each named non-leaf tensor in ``params``.

    Returns the map and the ``grad_fn`` objects themselves: the caller keeps them alive so
    that their ids stay valid while the graph is drawn. The output is left out (its own
    node already carries its name).
    """
    fns = [
        (name, t.grad_fn)
        for name, t in (params or {}).items()
        if t.grad_fn is not None and t is not output
    ]
    return {id(fn): name for name, fn in fns}, fns


#: The widest picture, in pixels: JupyterLab's output area is 968 px wide.
MAX_WIDTH = 960
#: Graphviz's pixels per inch at a picture's natural size: one pixel per CSS pixel.
SCREEN_DPI = 96


def png_width(png: bytes) -> int:
    """The width in pixels of a PNG image, read from its header."""
    return int.from_bytes(png[16:20], "big")


class Picture:
    """A Graphviz graph shown as a PNG (``graph`` is the ``graphviz.Digraph``), with ``text``
    (the graph as text) as its plain-text alternative.

    The PNG is at most :data:`MAX_WIDTH` pixels wide and is shown at its natural size or
    narrower: a small graph at twice the screen's resolution (sharp on high-density
    screens), a wide one scaled down to fit. No SVG: JupyterLab does not show SVG in a
    notebook it does not trust yet, and the grader's pages drop it.
    """

    def __init__(self, graph, text: str):
        self.graph, self.text = graph, text

    def _png(self, dpi: float) -> bytes:
        graph = self.graph.copy()
        graph.graph_attr.update(dpi=f"{dpi:.2f}")
        return graph.pipe(format="png")

    def natural_width(self) -> int:
        """The picture's width in CSS pixels before it is scaled to fit."""
        return png_width(self._png(SCREEN_DPI))

    def _repr_png_(self):
        """What IPython shows: the PNG's bytes, and the width (CSS pixels) to show it at."""
        natural = self.natural_width()
        shown = min(natural, MAX_WIDTH)
        dpi = SCREEN_DPI * min(2.0, MAX_WIDTH / natural)  # never more than MAX_WIDTH pixels
        return self._png(int(dpi * 100) / 100), {"width": shown}

    def __repr__(self) -> str:
        return self.text


def make_dot(output: torch.Tensor, params: Mapping[str, torch.Tensor] | None = None):
    """Return torchviz's ``graphviz.Digraph`` of the graph that produced ``output``.

    ``params`` names the leaf tensors (``{"w": w}``) so that the picture labels them.
    Blue boxes are leaves that require grad; grey boxes are the backward functions
    (``grad_fn``) autograd recorded; the green box is ``output`` itself. Arrows point the
    way the forward pass went (from the leaves to the output); ``backward()`` walks them
    in reverse. ``params`` may also name intermediate (non-leaf) tensors such as
    ``{"t2": t2}``: their grey box then reads ``AddBackward0 = t2.grad_fn``.
    """
    _, steps = _named_steps(output, params)
    with warnings.catch_warnings():
        # torchviz 0.0.3 imports distutils and calls its LooseVersion, which are deprecated.
        warnings.filterwarnings("ignore", category=DeprecationWarning, message=".*distutils.*")
        import torchviz

        graph = torchviz.make_dot(output, params=dict(params or {}))
    for name, fn in steps:
        # torchviz names each node by the id of its object; a second node statement with
        # the same name only replaces the label.
        graph.node(str(id(fn)), f"{type(fn).__name__}\n= {name}.grad_fn")
    graph.graph_attr.update(rankdir="BT", size="6,6")
    return graph


class TextGraph:
    """A text rendering of a computation graph, walked from the output's ``grad_fn``."""

    def __init__(self, output: torch.Tensor, params: Mapping[str, torch.Tensor] | None = None):
        self.output = output
        self.names = {id(t): name for name, t in (params or {}).items()}
        self.step_names, self._keep_alive = _named_steps(output, params)

    def lines(self) -> list[str]:
        """Return the graph as indented lines, output first, leaves last."""
        name = self.names.get(id(self.output))
        shape = tuple(self.output.shape)
        lines = [f"output {name} {shape}" if name else f"output {shape}"]
        if self.output.grad_fn is not None:
            self._walk(self.output.grad_fn, "", lines)
        return lines

    def _walk(self, fn, indent: str, lines: list[str]) -> None:
        label = type(fn).__name__
        variable = getattr(fn, "variable", None)  # AccumulateGrad holds the leaf tensor
        if variable is not None:
            name = self.names.get(id(variable), "leaf")
            label = f"{label} -> {name} {tuple(variable.shape)} (leaf, .grad is filled)"
        elif id(fn) in self.step_names:
            label = f"{label} = {self.step_names[id(fn)]}.grad_fn"
        lines.append(f"{indent}└─ {label}")
        for child, _ in fn.next_functions:
            if child is not None:
                self._walk(child, indent + "   ", lines)

    def __str__(self) -> str:
        return "\n".join(self.lines())

    def __repr__(self) -> str:
        return str(self)


def draw_graph(output: torch.Tensor, params: Mapping[str, torch.Tensor] | None = None):
    """Draw the computation graph of ``output`` for display in a notebook.

    With Graphviz's ``dot`` installed this is torchviz's picture (a :class:`Picture`, with
    the :class:`TextGraph` as its text); without it, the :class:`TextGraph` itself, preceded
    by a hint on how to install Graphviz.
    """
    if dot_available():
        return Picture(make_dot(output, params), str(TextGraph(output, params)))
    print(INSTALL_HINT)
    return TextGraph(output, params)
