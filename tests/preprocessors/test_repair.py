"""RepairSubmission: a submission's nbgrader cells made those of release/, each repair noted.

One test (or two) per rule of the module docstring of ``preprocessors/repair.py``, on the tiny
course of :mod:`.course`.
"""

from __future__ import annotations

import copy

import nbformat
from nbformat.v4 import new_code_cell

from autograd_course.grading.preprocessors import RepairSubmission
from autograd_course.grading.preprocessors.cells import end_notes, start_notes

from .course import (
    STUB,
    answer_cell,
    course,
    gradebook,
    index_of,
    release,
    resources,
    with_hidden_tests,
)

FORGOTTEN = (": nbgrader metadata the course does not know was removed; it was graded as an "
             "ordinary cell")


def repaired(root, nb, student_version=None, db_url=None):
    """``nb`` after RepairSubmission, and the notes it left for the grade record."""
    found = resources(db_url=db_url) if db_url else resources()
    start_notes(found)
    nb, _ = RepairSubmission(config=course(root, student_version)).preprocess(nb, found)
    return nb, end_notes(found)


def test_a_submission_as_released_is_left_as_it_is(tmp_path):
    nb, notes = repaired(tmp_path, release())
    assert nb == release() and notes == []


def test_nbgrader_metadata_the_course_does_not_know_is_removed(tmp_path):
    nb = release()
    nb.cells.append(answer_cell("q9_mine", "x = 1"))
    damaged = new_code_cell("y = 2")
    damaged.metadata["nbgrader"] = "not a dict"
    nb.cells.append(damaged)
    nb, notes = repaired(tmp_path, nb)
    assert "nbgrader" not in nb.cells[-2].metadata and "nbgrader" not in nb.cells[-1].metadata
    assert notes == [f"cell 9 ('x = 1'){FORGOTTEN}", f"cell 10 ('y = 2'){FORGOTTEN}"]


def test_damage_to_many_cells_is_noted_for_five_then_counted(tmp_path):
    nb = release()
    nb.cells += [answer_cell(f"mine_{i}", f"x = {i}") for i in range(8)]
    _, notes = repaired(tmp_path, nb)
    assert len(notes) == 6 and notes[4] == f"cell 13 ('x = 4'){FORGOTTEN}"
    assert notes[5] == f"and 3 more cells{FORGOTTEN}"


def test_a_copied_test_cell_is_ordinary_and_the_one_with_the_release_id_stays_graded(tmp_path):
    nb = release()
    at = index_of(nb, "q1_answer_test")
    copied = copy.deepcopy(nb.cells[at])
    copied.id = "pasted"
    nb.cells.insert(at, copied)  # the copy comes first
    nb, notes = repaired(tmp_path, nb)
    assert "nbgrader" not in nb.cells[at].metadata
    assert nb.cells[at + 1].id == "cell-4" and nb.cells[at + 1].metadata["nbgrader"][
        "grade_id"] == "q1_answer_test"
    assert notes == ["cell 5 ('check(answer)') is a copy of the test cell 'q1_answer_test' "
                     "(copied with its nbgrader metadata); the copy was graded as an ordinary "
                     "cell"]


def test_without_the_release_id_the_first_copy_stays_graded(tmp_path):
    nb = release()
    at = index_of(nb, "q1_answer")
    nb.cells[at].id = "renamed"
    copied = copy.deepcopy(nb.cells[at])
    copied.id = "pasted"
    copied.source = "answer = 2"
    nb.cells.insert(at + 1, copied)
    nb, notes = repaired(tmp_path, nb)
    assert nb.cells[at].metadata["nbgrader"]["grade_id"] == "q1_answer"
    assert "nbgrader" not in nb.cells[at + 1].metadata
    assert notes == ["cell 5 ('answer = 2') is a copy of the cell 'q1_answer' (copied with its "
                     "nbgrader metadata); the copy was graded as an ordinary cell"]


def test_changed_flags_are_restored_from_the_release(tmp_path):
    nb = release()
    test = nb.cells[index_of(nb, "q1_answer_test")]
    test.metadata["nbgrader"].update(points=100, locked=False)
    nb, notes = repaired(tmp_path, nb)
    assert nb.cells[index_of(nb, "q1_answer_test")] == release().cells[4]
    assert notes == ["cell 'q1_answer_test' had its type or nbgrader settings changed; they "
                     "were restored from the release"]


def test_a_changed_type_is_restored_and_an_answer_keeps_its_source(tmp_path):
    nb = release()
    at = index_of(nb, "q1_answer")
    as_markdown = nbformat.v4.new_markdown_cell("answer = 42", id="cell-3")
    as_markdown.metadata["nbgrader"] = copy.deepcopy(nb.cells[at].metadata["nbgrader"])
    nb.cells[at] = as_markdown
    imports = nb.cells[index_of(nb, "imports")]
    nb.cells[1] = nbformat.v4.new_markdown_cell(imports.source, id=imports.id,
                                                metadata=copy.deepcopy(imports.metadata))
    nb, notes = repaired(tmp_path, nb)
    assert nb.cells[at].cell_type == "code" and nb.cells[at].source == "answer = 42"
    assert nb.cells[1] == release().cells[1]
    assert len(notes) == 2 and all("had its type or nbgrader settings changed" in n
                                   for n in notes)


def test_a_deleted_cell_is_put_back_at_its_place(tmp_path):
    nb = release()
    del nb.cells[index_of(nb, "q1_answer_test")]
    del nb.cells[index_of(nb, "imports")]
    nb, notes = repaired(tmp_path, nb)
    assert nb == release()
    assert notes == ["deleted cells were put back: imports, q1_answer_test"]


def test_an_edited_locked_cell_is_noted_and_left_to_overwrite_cells(tmp_path):
    nb = release()
    nb.cells[index_of(nb, "imports")].source = "import os"
    nb.cells[index_of(nb, "q2_more")].source = "more = 3"  # an answer: edited, as it should be
    nb, notes = repaired(tmp_path, nb)
    assert nb.cells[index_of(nb, "imports")].source == "import os"  # OverwriteCells restores it
    assert notes == ["locked cell 'imports' was edited; the original was restored"]


def test_an_unedited_test_cell_gets_the_hidden_tests_the_gradebook_keeps(tmp_path,
                                                                          blank_gradebook):
    db_url = gradebook(tmp_path, blank_gradebook)
    nb, notes = repaired(tmp_path, release(), db_url=db_url)
    test = nb.cells[index_of(nb, "q1_answer_test")]
    assert test.source == with_hidden_tests(release().cells[4]).source and notes == []
    assert nb.cells[index_of(nb, "q1_answer")].source == STUB


def test_a_gradebook_source_of_another_checksum_is_left_to_overwrite_cells(tmp_path,
                                                                            blank_gradebook):
    db_url = gradebook(tmp_path, blank_gradebook, checksum_of=lambda cell: "0" * 32)
    nb, _ = repaired(tmp_path, release(), db_url=db_url)
    assert nb.cells[index_of(nb, "q1_answer_test")].source == "check(answer)"


def test_an_edited_test_cell_does_not_get_the_hidden_tests(tmp_path, blank_gradebook):
    nb = release()
    nb.cells[index_of(nb, "q1_answer_test")].source = "pass"
    nb, notes = repaired(tmp_path, nb, db_url=gradebook(tmp_path, blank_gradebook))
    assert nb.cells[index_of(nb, "q1_answer_test")].source == "pass"
    assert notes == ["locked cell 'q1_answer_test' was edited; the original was restored"]


def test_without_a_release_nothing_is_repaired(tmp_path):
    nb = release()
    nb.cells.append(answer_cell("q9_mine", "x = 1"))
    del nb.cells[index_of(nb, "imports")]
    expected = copy.deepcopy(nb)
    nb, notes = repaired(tmp_path, nb, student_version=False)
    assert nb == expected and notes == []
