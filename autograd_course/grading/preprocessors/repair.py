"""Repairing a submission before it runs: the course's cells put back where a student lost them."""

from __future__ import annotations

import copy

from nbgrader import utils
from nbgrader.preprocessors import NbGraderPreprocessor

from .cells import course_paths, grade_id, notes, release_notebook


class RepairSubmission(NbGraderPreprocessor):
    """Put back the nbgrader cells a student deleted, and note locked cells they edited.

    Deleted cells come back from the student version in release/, at their place; nbgrader's
    OverwriteCells (next in the sanitize stage) then restores the source of every locked cell.
    """

    def preprocess(self, nb, resources):
        coursedir, assignment, notebook = course_paths(self.config, resources)
        template = release_notebook(coursedir, assignment, notebook)
        if template is None:
            return nb, resources
        present = {grade_id(c): c for c in nb.cells if grade_id(c)}
        restored = []
        position = 0
        for cell in template.cells:
            cell_id = grade_id(cell)
            if cell_id is None:
                continue
            if cell_id in present:
                position = nb.cells.index(present[cell_id]) + 1
                locked = cell.metadata.get("nbgrader", {}).get("locked", False)
                if (
                    locked
                    and not utils.is_solution(cell)
                    and present[cell_id].source != cell.source
                ):
                    notes(nb).append(
                        f"locked cell '{cell_id}' was edited; the original was restored"
                    )
                continue
            new_cell = copy.deepcopy(cell)
            nb.cells.insert(position, new_cell)
            present[cell_id] = new_cell
            position += 1
            restored.append(cell_id)
        if restored:
            notes(nb).append("deleted cells were put back: " + ", ".join(restored))
        return nb, resources
