"""The feedback a student gets: results and diagnoses, never the hidden tests."""

from __future__ import annotations

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
    """Show each cell's comment (the diagnostics, from student data, and the instructor's
    words) as text in the feedback: nbgrader's template renders a comment as Markdown, so a
    student's exception message could bring a link or HTML, and ``__name__`` would come out
    bold. Runs after nbgrader's GetGrades, which puts the comments in."""

    def preprocess_cell(self, cell, resources, index):
        meta = cell.metadata.get("nbgrader", {})
        if isinstance(meta.get("comment"), str):
            meta["comment"] = as_text(meta["comment"])
        return cell, resources
