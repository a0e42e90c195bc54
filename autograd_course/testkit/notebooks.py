"""A submission's notebook, built from an assignment's: the reference answers of the
instructor version, and the student version with answers filled in (:func:`fill`).

Used by :mod:`.classes` (which offers both to its callers) and :mod:`.synthetic`.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path

import nbformat

SOLUTION_MARKERS = re.compile(r"^\s*### (BEGIN|END) SOLUTION\s*$")


def reference_answers(source_notebook: Path) -> dict[str, str]:
    """Map each solution cell's grade_id to its reference code (markers removed)."""
    nb = nbformat.read(source_notebook, as_version=4)
    answers = {}
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("solution") and cell.cell_type == "code":
            lines = [line for line in cell.source.splitlines() if not SOLUTION_MARKERS.match(line)]
            answers[meta["grade_id"]] = "\n".join(lines)
    return answers


def fill(
    release_notebook: Path, answers: dict[str, str], extra_cells: list[tuple[int, str]] = ()
) -> nbformat.NotebookNode:
    """A submission: the student version with solution cells replaced by ``answers``.

    ``extra_cells`` are (position, source) code cells a student added.
    """
    nb = nbformat.read(release_notebook, as_version=4)
    nb = copy.deepcopy(nb)
    for cell in nb.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if cell.metadata.get("nbgrader", {}).get("solution") and grade_id in answers:
            cell.source = answers[grade_id]
    for position, source in sorted(extra_cells, reverse=True):
        nb.cells.insert(position, nbformat.v4.new_code_cell(source))
    return nb
