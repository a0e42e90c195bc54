"""Repairing a submission before it runs: the course's cells as the release made them.

A student cannot see nbgrader's metadata in JupyterLab, and damages it by accident: a test cell
copied and pasted (its metadata comes with it), a cell's type changed, a cell deleted. Before
anything runs, :class:`RepairSubmission` makes the notebook's nbgrader cells those of the
student version in release/, and notes each repair for the grade record:

- nbgrader metadata the course does not know (a cell id that is not the release's, or
  metadata that is not a dict) is removed: the cell is an ordinary one of the student's;
- a cell id that appears twice is kept on the course's cell (the one with the release's
  cell id, else the first), and the copy becomes an ordinary cell;
- a course cell whose type or nbgrader flags were changed gets them back from the release;
- a deleted course cell is put back at its place; a locked cell whose source was edited is
  noted (nbgrader's OverwriteCells, later in the sanitize stage, restores its source, and
  warns that its checksum changed, as for any submission that edits a locked cell);
- a locked cell the student left as the release made it gets the source the gradebook keeps
  for it (:func:`_unhide`): a test cell's hidden tests, which nbgrader's generate_assignment
  removes from the student version after it saved the cell. OverwriteCells would put the same
  source back, but with a warning "Attribute 'checksum' for cell ... has changed" for every
  test cell with hidden tests of every honest submission; now it finds the checksum it keeps.
  Only a cell equal to the release's is given it, so an edited one is still caught as nbgrader
  catches it.
"""

from __future__ import annotations

import copy
import warnings

from nbgrader import utils
from nbgrader.api import Gradebook, MissingEntry
from nbgrader.preprocessors import NbGraderPreprocessor

from .cells import course_paths, grade_id, notes, release_notebook


class RepairSubmission(NbGraderPreprocessor):
    """Make a submission's nbgrader cells those of its release (see the module docstring)."""

    def preprocess(self, nb, resources):
        coursedir, assignment, notebook = course_paths(self.config, resources)
        template = release_notebook(coursedir, assignment, notebook)
        if template is None:
            return nb, resources
        said = notes(resources)
        course = {grade_id(c): c for c in template.cells if grade_id(c)}
        said += _forget_unknown(nb, course)
        said += _keep_one_of_each(nb, course)
        said += _restore_kinds(nb, course)
        said += _put_back_deleted(nb, template)
        unedited = []
        for cell in nb.cells:
            cell_id = grade_id(cell)
            release = course.get(cell_id)
            if (release is None or not utils.is_locked(release)
                    or utils.is_solution(release)):
                continue
            if cell.source != release.source:
                said.append(f"locked cell '{cell_id}' was edited; the original was restored")
            else:
                unedited.append(cell)
        _unhide(unedited, resources.get("nbgrader", {}).get("db_url"), assignment, notebook)
        return nb, resources


def _unhide(cells: list, db_url: str | None, assignment: str, notebook: str) -> None:
    """Give each of ``cells`` (locked cells as the release made them) the source the
    gradebook keeps for it, where that source has the checksum the gradebook keeps (a cell
    that does not is left to OverwriteCells, which says so)."""
    if not cells or not db_url:
        return
    with warnings.catch_warnings(), Gradebook(db_url) as gradebook:
        warnings.simplefilter("ignore")  # SQLAlchemy's notes on nbgrader's own queries
        try:
            kept = {c.name: c for c in gradebook.find_notebook(notebook, assignment).source_cells}
        except MissingEntry:  # OverwriteCells reports it
            return
    for cell in cells:
        source = kept.get(grade_id(cell))
        if source is None or source.source == cell.source:
            continue
        restored = copy.deepcopy(cell)
        restored.source = source.source
        if utils.compute_checksum(restored) == source.checksum:
            cell.source = source.source


#: Cells named one by one in the notes of one kind of repair; the rest are counted.
SHOWN = 5


def _where(index: int, cell) -> str:
    """A cell as a student finds it: its place in the notebook and its first line."""
    first = next((line.strip() for line in cell.source.splitlines() if line.strip()), "")
    first = first if len(first) <= 40 else first[:39] + "…"
    return f"cell {index + 1}" + (f" ({first!r})" if first else "")


def _listed(places: list[str], said: str) -> list[str]:
    """A note per place, up to :data:`SHOWN`, then one for the rest: 12,000 damaged cells
    make six notes, not 12,000."""
    notes = [f"{place}{said}" for place in places[:SHOWN]]
    if len(places) > SHOWN:
        notes.append(f"and {len(places) - SHOWN} more cells{said}")
    return notes


def _forget_unknown(nb, course: dict) -> list[str]:
    places = []
    for index, cell in enumerate(nb.cells):
        if "nbgrader" not in cell.metadata:
            continue
        meta = cell.metadata["nbgrader"]
        if not isinstance(meta, dict) or grade_id(cell) not in course:
            del cell.metadata["nbgrader"]
            places.append(_where(index, cell))
    return _listed(places, ": nbgrader metadata the course does not know was removed; it "
                   "was graded as an ordinary cell")


def _keep_one_of_each(nb, course: dict) -> list[str]:
    said = []
    found: dict[str, list] = {}
    for index, cell in enumerate(nb.cells):
        if grade_id(cell):
            found.setdefault(grade_id(cell), []).append((index, cell))
    for cell_id, cells in found.items():
        if len(cells) < 2:
            continue
        release_id = course[cell_id].get("id")
        keep = next((c for _, c in cells if release_id and c.get("id") == release_id),
                    cells[0][1])
        places = []
        for index, cell in cells:
            if cell is not keep:
                del cell.metadata["nbgrader"]
                places.append(_where(index, cell))
        kind = "test cell" if utils.is_grade(course[cell_id]) else "cell"
        said += _listed(places, f" is a copy of the {kind} '{cell_id}' (copied with its "
                        "nbgrader metadata); the copy was graded as an ordinary cell")
    return said


def _restore_kinds(nb, course: dict) -> list[str]:
    said = []
    for index, cell in enumerate(nb.cells):
        release = course.get(grade_id(cell))
        if release is None:
            continue
        meta = {k: v for k, v in cell.metadata["nbgrader"].items() if k != "checksum"}
        wanted = {k: v for k, v in release.metadata["nbgrader"].items() if k != "checksum"}
        if cell.cell_type == release.cell_type and meta == wanted:
            continue
        repaired = copy.deepcopy(release) if cell.cell_type != release.cell_type else cell
        if repaired is not cell:  # its type changed: the release's cell, with the answer
            if utils.is_solution(release):
                repaired.source = cell.source
            nb.cells[index] = repaired
        repaired.metadata["nbgrader"] = copy.deepcopy(release.metadata["nbgrader"])
        said.append(f"cell '{grade_id(release)}' had its type or nbgrader settings changed; "
                    "they were restored from the release")
    return said


def _put_back_deleted(nb, template) -> list[str]:
    present = {grade_id(c): c for c in nb.cells if grade_id(c)}
    restored, position = [], 0
    for cell in template.cells:
        cell_id = grade_id(cell)
        if cell_id is None:
            continue
        if cell_id in present:
            position = next(i for i, c in enumerate(nb.cells) if c is present[cell_id]) + 1
            continue
        new_cell = copy.deepcopy(cell)
        nb.cells.insert(position, new_cell)
        present[cell_id] = new_cell
        position += 1
        restored.append(cell_id)
    return ["deleted cells were put back: " + ", ".join(restored)] if restored else []

