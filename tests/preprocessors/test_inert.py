"""MakeInert: the autograded notebook keeps only inert content, for every viewer.

One test per rule of the module docstring of ``preprocessors/inert.py`` (outputs, markdown,
metadata, text, caps, a test cell's verdict, files), on the tiny course of :mod:`.course`.
The caps at their real size are test_submission_budget.py's.
"""

from __future__ import annotations

import base64

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_output, new_raw_cell

from autograd_course.grading.preprocessors import MakeInert, inert

from .course import KERNEL, course, index_of, release, resources

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\x00" * 16).decode()
NOT_A_PNG = base64.b64encode(b"<svg onload='alert(1)'/>").decode()


def made_inert(root, nb, **extra):
    """``nb`` after MakeInert, in the tiny course at ``root``."""
    found = resources()
    found.update(extra)
    nb, _ = MakeInert(config=course(root)).preprocess(nb, found)
    return nb


def with_outputs(*outputs, grade_id="q1_answer"):
    """The student version with ``outputs`` in the cell ``grade_id``."""
    nb = release()
    nb.cells[index_of(nb, grade_id)].outputs = list(outputs)
    return nb


def test_outputs_keep_text_and_real_png_or_jpeg_images_only(tmp_path):
    nb = made_inert(tmp_path, with_outputs(
        new_output("display_data", data={"text/html": "<script>x()</script>",
                                         "text/plain": "<Figure>", "image/png": PNG,
                                         "image/svg+xml": "<svg/>"}),
        new_output("display_data", data={"application/javascript": "x()"}),
        new_output("execute_result", data={"image/png": NOT_A_PNG}, execution_count=3),
    ))
    shown, script, fake = nb.cells[index_of(nb, "q1_answer")].outputs
    assert dict(shown.data) == {"text/plain": "<Figure>", "image/png": PNG}
    assert script.data == {"text/plain": "[the grader removed this output: "
                                         "application/javascript; only text and PNG or JPEG "
                                         "images are shown]"}
    assert fake.data == {"text/plain": "[the grader removed this output: image/png; only text "
                                       "and PNG or JPEG images are shown]"}
    assert fake.execution_count == 3


def test_output_metadata_keeps_an_images_integer_size_and_streams_are_stdout_or_stderr(tmp_path):
    stream = new_output("stream", name="stdout", text="hi\n")
    stream.name = "/dev/tty"
    nb = made_inert(tmp_path, with_outputs(
        new_output("display_data", data={"image/png": PNG}, metadata={
            "image/png": {"width": 10, "height": "9", "onload": "x()"}, "isolated": True}),
        stream,
    ))
    image, stream = nb.cells[index_of(nb, "q1_answer")].outputs
    assert image.metadata == {"image/png": {"width": 10}}
    assert stream.name == "stdout" and stream.text == "hi\n"


def test_the_courses_markdown_renders_and_the_students_is_shown_as_text(tmp_path):
    nb = release()
    nb.cells.append(new_markdown_cell("<img src=x onerror='alert(1)'> ```"))
    nb.cells.append(new_raw_cell("<script>alert(1)</script>"))
    nb = made_inert(tmp_path, nb)
    assert nb.cells[0].source == release().cells[0].source  # a locked cell of release/
    assert nb.cells[2].source == release().cells[2].source  # the release's own text
    assert nb.cells[-2].source == "````text\n<img src=x onerror='alert(1)'> ```\n````"
    assert nb.cells[-1].cell_type == "markdown"
    assert nb.cells[-1].source == "```text\n<script>alert(1)</script>\n```"


def test_a_cell_keeps_only_well_formed_nbgrader_metadata(tmp_path):
    nb = release()
    nb.cells[0].metadata["tags"] = ["x"]
    nb.cells[1].metadata["nbgrader"]["onclick"] = "x()"
    nb.cells[3].metadata["nbgrader"]["grade_id"] = "q1 <b>"
    nb.cells[4].metadata["nbgrader"]["points"] = True
    nb = made_inert(tmp_path, nb)
    assert nb.cells[0].metadata == {"nbgrader": release().cells[0].metadata["nbgrader"]}
    assert [dict(c.metadata) for c in nb.cells[1:5]] == [{}, {}, {}, {}]
    assert nb.cells[6].metadata == release().cells[6].metadata


def test_the_notebook_keeps_only_its_kernel_and_language(tmp_path):
    nb = release()
    nb.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {"state": {}}}
    nb.metadata["autograd_course"] = {"flags": []}
    assert made_inert(tmp_path, nb).metadata == KERNEL
    found = resources()
    found["nbgrader"]["notebook"] = "missing"  # no student version: a plain Python 3 kernel
    plain, _ = MakeInert(config=course(tmp_path)).preprocess(release(), found)
    assert plain.metadata == inert.PYTHON


def test_text_loses_escape_sequences_and_c1_controls(tmp_path):
    nb = made_inert(tmp_path, with_outputs(
        new_output("stream", name="stderr", text="\x1b[31mred\x1b[0m \x9b31m"),
        new_output("error", ename="\x1b[1mValueError", evalue="\x1b]8;;http://x\x07no",
                   traceback=["\x1b[0;31mTraceback\x1b[0m"]),
        new_output("execute_result", data={"text/plain": "\x1b[2Kdone"}, execution_count=1),
    ))
    stream, error, result = nb.cells[index_of(nb, "q1_answer")].outputs
    assert stream.text == "red 31m"
    assert (error.ename, error.evalue, error.traceback) == ("ValueError", "no", ["Traceback"])
    assert result.data["text/plain"] == "done"


def test_a_test_cells_verdict_is_wrapped_and_an_answers_output_is_not(tmp_path):
    long_line = "word " * 40
    nb = release()
    for grade_id in ("q1_answer", "q1_answer_test"):
        nb.cells[index_of(nb, grade_id)].outputs = [
            new_output("stream", name="stdout", text=long_line)]
    nb = made_inert(tmp_path, nb)
    answer = nb.cells[index_of(nb, "q1_answer")].outputs[0].text
    verdict = nb.cells[index_of(nb, "q1_answer_test")].outputs[0].text
    assert answer == long_line
    assert max(len(line) for line in verdict.splitlines()) <= inert.VERDICT_WIDTH
    assert verdict.split() == long_line.split()


def test_outputs_are_capped_by_cell_and_notebook_and_a_verdict_counts_for_its_cell(tmp_path,
                                                                                  monkeypatch):
    monkeypatch.setattr(inert, "MAX_CELL", 100)
    monkeypatch.setattr(inert, "MAX_NOTEBOOK", 150)
    nb = release()
    text = "x" * 9 + "\n"
    nb.cells[index_of(nb, "q1_answer")].outputs = [new_output("stream", name="stdout",
                                                              text=text * 12)]
    nb.cells[index_of(nb, "q1_answer_test")].outputs = [new_output("stream", name="stdout",
                                                                   text=text * 9)]
    nb.cells[index_of(nb, "q2_more")].outputs = [new_output("stream", name="stdout",
                                                            text=text * 8)]
    nb = made_inert(tmp_path, nb)
    first = nb.cells[index_of(nb, "q1_answer")].outputs
    assert first[0].text == (text * 12)[:100] and "20 bytes more were not kept" in first[1].text
    assert nb.cells[index_of(nb, "q1_answer_test")].outputs[0].text == text * 9  # all of it
    last = nb.cells[index_of(nb, "q2_more")].outputs
    assert last[0].text == (text * 8)[:50] and "30 bytes more were not kept" in last[1].text


def test_the_students_files_in_autograded_get_names_served_as_text(tmp_path):
    graded = tmp_path / "autograded" / "ada" / "ps1"
    elsewhere = tmp_path / "elsewhere"
    for folder in (graded, elsewhere):
        folder.mkdir(parents=True)
        for name in ("evil.html", "nb.ipynb", "timestamp.txt", "data.csv"):
            (folder / name).write_text("<script>alert(1)</script>")
    made_inert(tmp_path, release(), metadata={"path": str(graded)})
    assert sorted(p.name for p in graded.iterdir()) == ["data.csv", "evil.html.txt", "nb.ipynb",
                                                       "timestamp.txt"]
    made_inert(tmp_path, release(), metadata={"path": str(elsewhere)})
    assert "evil.html" in {p.name for p in elsewhere.iterdir()}


def test_code_cells_keep_their_ids_and_integer_execution_counts(tmp_path):
    nb = release()
    nb.cells[3].execution_count = "7"
    nb.cells[4].execution_count = 7
    nb.cells.append(new_code_cell("x", id="mine"))
    nb.cells.append(nbformat.from_dict({"cell_type": "code", "source": "y", "metadata": {},
                                        "outputs": [], "execution_count": None}))
    nb = made_inert(tmp_path, nb)
    assert [c.get("id") for c in nb.cells[:-1]] == [c.id for c in release().cells] + ["mine"]
    assert "id" not in nb.cells[-1]  # none made up for a cell without one
    assert (nb.cells[3].execution_count, nb.cells[4].execution_count) == (None, 7)
