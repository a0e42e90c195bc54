"""The exporters: TolerantNotebookExporter reads what a student submitted, FeedbackExporter
writes the feedback page.

The rules are the classes' docstrings in ``preprocessors/exporter.py``: a file that is not a
valid notebook is graded as an empty one, with a note; a notebook with invalid parts loses
them (outputs first, then the metadata nbgrader does not use); the grader's own metadata key
and repeated cell ids are not taken from the student; a file over ``max_file_size`` is not
read; reading from submitted/ starts a notebook's notes afresh. The lock and roster around a
submission are test_around.py's; the files made safe, test_submission_budget.py's.
"""

from __future__ import annotations

import io
import json

import nbformat
from nbformat.v4 import new_code_cell, new_notebook, new_output
from traitlets.config import Config

from autograd_course.grading.preprocessors import FeedbackExporter, TolerantNotebookExporter
from autograd_course.grading.preprocessors import exporter as exporter_module
from autograd_course.grading.preprocessors.cells import META, notes, start_notes

from .course import ASSIGNMENT, NOTEBOOK, STUDENT, release, resources


def read(text: str, name: str = "nb.ipynb"):
    """What the exporter makes of a file holding ``text`` (JSON written without nbformat's
    validation: a student's file may be anything), and the notes it left."""
    found = resources()
    start_notes(found)
    stream = io.StringIO(text)
    stream.name = f"/somewhere/{name}"
    output, _ = TolerantNotebookExporter(config=Config()).from_file(stream, resources=found)
    return nbformat.reads(output, as_version=4), list(notes(found))


def test_a_file_that_is_not_a_notebook_is_an_empty_submission_with_a_note():
    nb, said = read("{not json", name="broken.ipynb")
    assert nb.cells == [] and nb.metadata.kernelspec.name == "python3"
    (note,) = said
    assert note.startswith("broken.ipynb is not a valid notebook (NotJSONError: ")
    assert note.endswith("; graded as an empty submission")


def test_invalid_outputs_are_dropped_and_the_notebook_graded():
    nb = release()
    nb.cells[3].outputs = [new_output("stream", name="stdout", text="hi")]
    nb.cells[3].outputs[0]["onclick"] = "x()"  # a key the schema forbids
    nb.cells[3].execution_count = 4
    nb.cells[3].metadata["tags"] = ["kept"]  # valid: only the outputs are at fault
    found, said = read(json.dumps(nb))
    assert found.cells[3].outputs == [] and found.cells[3].execution_count is None
    assert found.cells[3].metadata.tags == ["kept"]
    assert [c.source for c in found.cells] == [c.source for c in release().cells]
    (note,) = said
    assert note.startswith("nb.ipynb had invalid parts (") and note.endswith(
        "); its outputs were dropped and the notebook was graded")


def test_invalid_metadata_is_dropped_after_the_outputs_and_nbgraders_is_kept():
    nb = release()
    nb.cells[3].metadata["tags"] = "not a list"
    nb.cells[3].attachments = {"x.png": {"image/png": "AAAA"}}  # a code cell has none
    found, said = read(json.dumps(nb))
    assert found.cells[3].metadata == release().cells[3].metadata
    assert "attachments" not in found.cells[3]
    assert said[0].endswith("; its outputs and the metadata nbgrader does not use were dropped "
                            "and the notebook was graded")


def test_the_graders_metadata_is_not_taken_from_the_student():
    nb = release()
    nb.metadata[META] = {"sandboxed": True, "flags": []}
    found, said = read(json.dumps(nb))
    assert META not in found.metadata and said == []
    assert found.cells == release().cells


def test_a_repeated_cell_id_is_made_fresh_and_the_first_keeps_it():
    # nbformat's reader repairs them too (with a warning); the exporter does not rely on it
    nb = release()
    nb.cells[5].id = nb.cells[7].id = nb.cells[4].id
    exporter_module._repair_duplicate_ids(nb)
    ids = [c.id for c in nb.cells]
    assert len(set(ids)) == len(ids) and ids[:5] == [c.id for c in release().cells[:5]]


def test_a_file_over_the_size_limit_is_not_read(tmp_path):
    path = tmp_path / "nb.ipynb"
    nbformat.write(new_notebook(cells=[new_code_cell("x = 1" + " " * 3000)]), path)
    config = Config()
    config.CourseDirectory.max_file_size = 2  # kB
    found = resources()
    start_notes(found)
    output, kept = TolerantNotebookExporter(config=config).from_filename(str(path),
                                                                         resources=found)
    assert nbformat.reads(output, as_version=4).cells == []
    assert kept["metadata"]["name"] == "nb" and kept["metadata"]["path"] == str(tmp_path)
    assert notes(found) == [f"nb.ipynb is not a valid notebook ({path.stat().st_size // 1000} "
                            "kB, more than the limit of 2 kB (CourseDirectory.max_file_size); "
                            "it was not read); graded as an empty submission"]


def test_reading_from_submitted_starts_the_notes_afresh_and_from_autograded_does_not(tmp_path):
    config = Config()
    config.CourseDirectory.root = str(tmp_path)
    for step, kept in (("autograded", ["from the sanitize stage"]), ("submitted", [])):
        folder = tmp_path / step / STUDENT / ASSIGNMENT
        folder.mkdir(parents=True)
        nbformat.write(release(), folder / f"{NOTEBOOK}.ipynb")
        found = resources()
        start_notes(found)
        notes(found).append("from the sanitize stage")
        TolerantNotebookExporter(config=config).from_filename(
            str(folder / f"{NOTEBOOK}.ipynb"), resources=found)
        assert notes(found) == kept, step


def test_feedback_pages_share_the_templates_compiled_once():
    exporter_module._COMPILED._code.clear()
    first, _ = FeedbackExporter(config=Config()).from_notebook_node(release())
    compiled = dict(exporter_module._COMPILED._code)
    second_exporter = FeedbackExporter(config=Config())
    assert second_exporter.environment.bytecode_cache is exporter_module._COMPILED
    second, _ = second_exporter.from_notebook_node(release())
    assert compiled and exporter_module._COMPILED._code == compiled and first == second


def test_a_page_is_parsed_for_its_images_only_when_it_may_hold_one(monkeypatch):
    from autograd_course.grading.preprocessors.exporter import NO_DESCRIPTION, described_images

    parsed = []
    real = exporter_module._ImagesWithoutText
    monkeypatch.setattr(exporter_module, "_ImagesWithoutText",
                        lambda page: parsed.append(page) or real(page))
    page = "<p>a page</p><script>let s = '<b>';</script>"
    assert described_images(page) is page and parsed == []
    page = "<p>x</p><!-- <img src=a> --><IMG src=b><iMg alt='' src=c>"
    assert described_images(page) == (
        f'<p>x</p><!-- <img src=a> --><IMG alt="{NO_DESCRIPTION}" src=b><iMg alt=\'\' src=c>')
    assert parsed == [page]
