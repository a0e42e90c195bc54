"""The feedback a student gets: results and diagnoses, never the hidden tests, and no file of
the submission's but as a line of text."""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import nbformat
from nbgrader.api import Gradebook, MissingEntry
from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import List

from .cells import course_paths, is_test_cell
from .inert import as_text, plain

HIDDEN_BEGIN = "### BEGIN HIDDEN TESTS"
HIDDEN_END = "### END HIDDEN TESTS"


class FeedbackStep(NbGraderPreprocessor):
    """A step of the course's feedback pipeline.

    nbconvert's HTML exporter configures ``NbConvertBase.display_data_priority`` for every
    preprocessor it runs; nbgrader's base class redefines that trait without ``config=True``,
    so traitlets warned "Config option `display_data_priority` not recognized" for each of the
    course's steps (nbgrader's GetGrades declares it configurable, as this does)."""

    display_data_priority = List(NbGraderPreprocessor.class_traits()["display_data_priority"]
                                 .default()).tag(config=True)


class HideHiddenTests(FeedbackStep):
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


class ShowCommentsAsText(FeedbackStep):
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


#: The heading of the feedback's list of the submission's other files.
FILES_HEADING = ("**The other files of this submission** (kept for the grader, not part of "
                 "the feedback):")


#: nbgrader's own files of a feedback folder, kept (release_feedback reads both; the exchange
#: writes the secret of a submission that came through it): plain text.
NBGRADERS = frozenset({"timestamp.txt", "submission_secret.txt"})


class ListOtherFiles(FeedbackStep):
    """Keep the submission's files out of ``feedback/``, and list them on the page as text.

    nbgrader's GenerateFeedback copies every file of the student's ``autograded/`` folder
    into ``feedback/`` before it makes the pages, from where Jupyter would serve them. This
    removes from the student's feedback folder every file but nbgrader's: the pages of the
    notebooks graded (``NAME.html`` for each ``NAME.ipynb`` in ``autograded/``), and
    :data:`NBGRADERS` (which nbgrader's release_feedback reads; text), made where the
    submission brought none (:func:`..feedback.nbgrader_files`: a secret derived from the
    grader's), so that ``nbgrader release_feedback`` releases the whole class however each
    submission arrived, also after plain ``nbgrader autograde`` or formgrader's. The page ends
    with the list of the files (relative name and size) as literal text. Without a student
    and assignment in the resources it changes nothing.
    """

    def preprocess(self, nb, resources):
        coursedir, assignment, _ = course_paths(self.config, resources)
        student = resources.get("nbgrader", {}).get("student")
        graded = resources.get("metadata", {}).get("path")
        if not (student and assignment and graded and os.path.isdir(graded)):
            return nb, resources
        graded = Path(graded)
        pages = {p.stem + ".html" for p in graded.glob("*.ipynb")} | NBGRADERS
        listed = sorted(f"{plain(str(p.relative_to(graded)))} ({p.stat().st_size} bytes)"
                        for p in graded.rglob("*") if p.is_file() and not p.is_symlink()
                        and p.suffix != ".ipynb" and p.name not in NBGRADERS)
        feedback = Path(coursedir.format_path(coursedir.feedback_directory, student, assignment))
        for path in sorted(feedback.rglob("*"), reverse=True) if feedback.is_dir() else []:
            if path.is_symlink() or not path.is_dir():
                if not (path.parent == feedback and path.name in pages and path.is_file()):
                    path.unlink(missing_ok=True)
            elif not any(path.iterdir()):  # a folder emptied (files come before their folder)
                path.rmdir()
        self._release_files(feedback, coursedir, student, assignment)
        if listed:
            nb.cells.append(nbformat.v4.new_markdown_cell(
                f"{FILES_HEADING}\n\n{as_text(chr(10).join(listed))}"))
        return nb, resources

    def _release_files(self, feedback: Path, coursedir, student: str, assignment: str) -> None:
        """Write into ``feedback`` those of nbgrader's two files it lacks."""
        from autograd_course.grading.course import read_secret
        from autograd_course.grading.feedback import nbgrader_files

        feedback.mkdir(parents=True, exist_ok=True)
        present = {p.name: b"" for p in feedback.iterdir()}  # a name taken stays as it is
        secret = self.config.JudgedExecute.get("secret") or read_secret(coursedir.root)
        for name, data in nbgrader_files(present, secret, student, assignment, None).items():
            (feedback / name).write_bytes(data)
