"""Reading a submission: a file that is not a valid notebook is graded as an empty one."""

from __future__ import annotations

import os
import secrets

import nbformat
from nbconvert.exporters import NotebookExporter
from nbformat.notebooknode import NotebookNode

from .cells import notes, short


class TolerantNotebookExporter(NotebookExporter):
    """A notebook exporter that reads a broken file as an empty submission, with a note."""

    def from_file(self, file_stream, resources=None, **kw):
        name = os.path.basename(getattr(file_stream, "name", "the notebook"))
        try:
            nb = nbformat.read(file_stream, as_version=4)
        except Exception as exc:  # not JSON, not UTF-8, not a notebook at all
            return self.from_notebook_node(self._empty(name, exc), resources=resources, **kw)
        _repair_duplicate_ids(nb)
        try:
            nbformat.validate(nb)
        except Exception as exc:  # e.g. an output a tool wrote with keys the schema forbids
            for cell in nb.cells:
                if cell.cell_type == "code":
                    cell.outputs, cell.execution_count = [], None
            try:
                nbformat.validate(nb)
            except Exception:
                return self.from_notebook_node(self._empty(name, exc), resources=resources, **kw)
            notes(nb).append(f"{name} had invalid parts ({short(exc)}); its outputs were "
                             "dropped and the notebook was graded")
        return self.from_notebook_node(nb, resources=resources, **kw)

    def _empty(self, name: str, exc: BaseException) -> NotebookNode:
        reason = f"{name} is not a valid notebook ({short(exc)})"
        self.log.warning("%s: graded as an empty submission", reason)
        nb = nbformat.v4.new_notebook()
        nb.metadata.kernelspec = {"name": "python3", "display_name": "Python 3",
                                  "language": "python"}
        notes(nb).append(reason + "; graded as an empty submission")
        return nb


def _repair_duplicate_ids(nb: NotebookNode) -> None:
    """Give a fresh id to every cell whose id repeats an earlier cell's (a copy-pasted cell)."""
    seen = set()
    for cell in nb.cells:
        if "id" in cell and cell.id in seen:
            cell.id = secrets.token_hex(4)
        seen.add(cell.get("id"))
