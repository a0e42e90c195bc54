"""The graded exercises as the tests read them: source/ and release/ notebooks, their questions.

Rules: a source notebook is read once per process (:func:`load`) and never written; questions
are the grade_ids of the code solution cells, in notebook order (:data:`ALL_QUESTIONS`).
"""

from __future__ import annotations

import ast
from pathlib import Path

import nbformat
import torch

from .units import ROOT, UNITS

HIDDEN = "### BEGIN HIDDEN TESTS"


def source_path(unit: str) -> Path:
    return ROOT / "source" / unit / f"{unit}.ipynb"


def release_path(unit: str) -> Path:
    return ROOT / "release" / unit / f"{unit}.ipynb"


def nbgrader_meta(cell) -> dict:
    return cell.metadata.get("nbgrader", {})


_LOADED: dict[str, nbformat.NotebookNode] = {}


def load(unit: str):
    if unit not in _LOADED:
        _LOADED[unit] = nbformat.read(source_path(unit), as_version=4)
    return _LOADED[unit]


def questions(unit: str) -> list[str]:
    """The grade_ids of the solution cells of ``unit``, in order."""
    return [
        nbgrader_meta(c)["grade_id"]
        for c in load(unit).cells
        if nbgrader_meta(c).get("solution") and c.cell_type == "code"
    ]


ALL_QUESTIONS = [(unit, qid) for unit in UNITS for qid in questions(unit)]


def cell_of(unit: str, grade_id: str):
    """The cell of ``unit``'s source notebook with this grade id."""
    return next(c for c in load(unit).cells if nbgrader_meta(c).get("grade_id") == grade_id)


def numbers_of(value) -> list[str]:
    """Ways an expected value could be printed in a message (for the 'never reveal' check)."""
    if value is None or isinstance(value, bool | str | type):
        return []  # names and choices are short words: they could be any message's words
    if isinstance(value, list | tuple | set | dict):
        items = value.values() if isinstance(value, dict) else value
        return [text for item in items for text in numbers_of(item)]
    if torch.is_tensor(value):
        values = value.detach().flatten().tolist()
    else:
        values = [float(value)]
    texts = []
    for v in values:
        if abs(v) < 1e-3:
            continue  # 0.0 and tiny values print like many harmless things
        texts += [f"{v:.4f}", f"{v:.3f}", repr(v)]
    return texts


def bound_names(source: str) -> set[str]:
    """The names a cell binds in the notebook's namespace: assignments, imports, for and with
    targets, defs and classes at its top level (not the locals of its functions)."""
    bound: set[str] = set()

    def visit(node):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            bound.add(node.name)
            return  # its body binds locals
        if isinstance(node, ast.Lambda | ast.comprehension | ast.GeneratorExp | ast.ListComp
                      | ast.SetComp | ast.DictComp):
            return
        if isinstance(node, ast.Import | ast.ImportFrom):
            bound.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            bound.add(node.id)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(source))
    return bound
