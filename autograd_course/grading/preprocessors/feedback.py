"""The feedback a student gets: results and diagnoses, never the hidden tests."""

from __future__ import annotations

import warnings

from nbgrader.api import Gradebook, MissingEntry
from nbgrader.preprocessors import NbGraderPreprocessor

from .cells import is_test_cell
from .inert import as_text

HIDDEN_BEGIN = "### BEGIN HIDDEN TESTS"
HIDDEN_END = "### END HIDDEN TESTS"


class HideHiddenTests(NbGraderPreprocessor):
    """Keep hidden tests out of the feedback: their code, and tracebacks that would show it.

    A test cell keeps its visible part; the hidden part becomes one comment line. Errors in
    test cells keep their type and message (the diagnostic), not their traceback.
    """

    def preprocess_cell(self, cell, resources, index):
        if not is_test_cell(cell):
            return cell, resources
        cell.source = strip_hidden_tests(cell.source)
        for output in cell.get("outputs", []):
            if output.output_type == "error":
                output.traceback = [f"{output.ename}: {output.evalue}"]
        return cell, resources


def strip_hidden_tests(source: str) -> str:
    """Return ``source`` with each hidden-test block replaced by a one-line note."""
    lines, hidden = [], False
    for line in source.splitlines():
        if line.strip() == HIDDEN_BEGIN:
            hidden = True
            lines.append("# (hidden tests run here: their results are shown below)")
        elif line.strip() == HIDDEN_END:
            hidden = False
        elif not hidden:
            lines.append(line)
    return "\n".join(lines)


class ShowCommentsAsText(NbGraderPreprocessor):
    """Show each cell's comments as text in the feedback: the automatic diagnostic and the
    instructor's comment, both.

    nbgrader's GetGrades puts one comment into the notebook: the instructor's, once one is
    typed in formgrader, else the automatic one (the diagnostics, which quote student data), so
    a hand-written comment would hide the diagnostic. This reads both from the gradebook
    (:func:`comments_of`) and shows them one after the other, each labelled
    (:func:`shown_comment`). nbgrader's template renders a comment as Markdown, so a student's
    exception message could bring a link or HTML, and ``__name__`` would come out bold: each
    comment becomes a block of literal text. Runs after GetGrades; without a gradebook (no
    ``db_url`` in the resources) it shows the comment GetGrades put in."""

    def preprocess(self, nb, resources):
        comments = comments_of(resources.get("nbgrader", {}))
        for cell in nb.cells:
            meta = cell.metadata.get("nbgrader", {})
            found = comments.get(meta.get("grade_id"))
            if found is not None and "comment" in meta:
                meta["comment"] = shown_comment(*found)
            elif isinstance(meta.get("comment"), str):
                meta["comment"] = as_text(meta["comment"])
        return nb, resources


#: The labels of the comments when a cell has both.
MANUAL_LABEL, AUTO_LABEL = "**Instructor's comment:**", "**Automatic diagnostic:**"


def comments_of(nbgrader: dict) -> dict[str, tuple[str | None, str | None]]:
    """The comments of the notebook being given feedback (nbgrader's ``resources["nbgrader"]``
    names it): solution or task cell -> (automatic comment, instructor's comment), as the
    gradebook holds them; empty when there is no gradebook or no such submission."""
    keys = ("db_url", "notebook", "assignment", "student")
    if not all(nbgrader.get(key) for key in keys):
        return {}
    url, notebook, assignment, student = (nbgrader[key] for key in keys)
    with warnings.catch_warnings(), Gradebook(url) as gb:
        warnings.simplefilter("ignore")  # SQLAlchemy's notes on nbgrader's own queries
        try:
            found = gb.find_submission_notebook(notebook, assignment, student)
        except MissingEntry:
            return {}
        return {c.name: (c.auto_comment, c.manual_comment) for c in found.comments}


def shown_comment(auto: str | None, manual: str | None) -> str:
    """The Markdown of a cell's comments as the feedback shows them: each as literal text; when
    the instructor's comment and the automatic one are both there (and differ), both, each
    under its label. A blank comment counts as none (formgrader saves an emptied box as "",
    which would otherwise hide the diagnostic)."""
    auto, manual = ((text if text and text.strip() else None) for text in (auto, manual))
    if auto and manual and auto.strip() != manual.strip():
        return f"{MANUAL_LABEL}\n\n{as_text(manual)}\n\n{AUTO_LABEL}\n\n{as_text(auto)}"
    return as_text(manual or auto or "")
