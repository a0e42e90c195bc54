"""Answers that break a rule no test of values can check keep their points and are flagged.

A question's solution cell may say what its prompt forbids in the answer
(``"autograd_course": {"forbids": ["autograd"]}`` in its metadata, which release/ keeps): the
code scan (:mod:`autograd_course.grading.scan`) then flags those constructs in that answer
cell, as the grader runs it (:func:`~autograd_course.grading.preprocessors.execute.scan_cells`
with the release's notebook). A unit's catalogue module (``autograd_course.testkit.uNN_topic``)
may hold ``FLAGGED[grade_id]``, a list of ``(label, code)``: answers with right values that
break such a rule. Each must get the question's full points from the judge and be flagged for
its test cell; the reference solutions and the ``RIGHT`` answers of those questions must not be
flagged, and neither are the same constructs where no rule forbids them.
"""

from __future__ import annotations

import copy
import importlib
import pkgutil

import nbformat
import pytest
from support.exercises import ALL_QUESTIONS, cell_of, load, nbgrader_meta, release_path
from support.inprocess import run_judged
from support.units import UNITS

from autograd_course import testkit
from autograd_course.grading import scan
from autograd_course.grading.preprocessors.execute import scan_cells


def _catalogue(name: str) -> list[tuple[str, str, str, str]]:
    found = []
    for module in pkgutil.iter_modules(testkit.__path__):
        if module.name.startswith("u") and module.name[1:3].isdigit():
            unit = importlib.import_module(f"{testkit.__name__}.{module.name}")
            for qid, answers in getattr(unit, name, {}).items():
                found += [(module.name[1:], qid, label, code) for label, code in answers]
    return found


FLAGGED = _catalogue("FLAGGED")
RIGHT = _catalogue("RIGHT")


def _release(unit: str):
    return nbformat.read(release_path(unit), as_version=4)


def _forbids(unit: str) -> dict[str, tuple[str, ...]]:
    return scan.forbidden(_release(unit))


def _flags_for(unit: str, qid: str, code: str, course=None) -> list[str]:
    """What the scan flags for ``qid``'s test cell when its answer cell holds ``code``, with
    what ``course`` (the release's notebook by default) says each question forbids."""
    submission = _release(unit)
    answer = next(c for c in submission.cells if nbgrader_meta(c).get("grade_id") == qid)
    answer.source = code
    _, flagged = scan_cells(submission, _release(unit) if course is None else course)
    return flagged.get(f"{qid}_test", [])


RULED = [(unit, qid) for unit in UNITS for qid in _forbids(unit)]


def test_flagged_answers_name_questions_with_a_rule():
    assert FLAGGED, "the catalogue holds no flagged answer"
    assert {(unit, qid) for unit, qid, _, _ in FLAGGED} <= set(RULED)


def test_what_a_question_forbids_is_known_to_the_scan_and_on_its_answer_cell():
    for unit in UNITS:
        for cell in load(unit).cells:
            ours = cell.metadata.get("autograd_course")
            if ours is None:
                continue
            assert set(ours) == {"forbids"} and set(ours["forbids"]) <= set(scan.FORBIDDABLE)
            assert nbgrader_meta(cell).get("solution"), nbgrader_meta(cell)
    assert ("11_backprop_by_hand", "q1_mlp_backward") in RULED  # release/ keeps the marks


@pytest.mark.parametrize(("unit", "qid", "label", "code"), FLAGGED,
                         ids=[f"{u}-{q}-{label}" for u, q, label, _ in FLAGGED])
def test_a_flagged_answer_keeps_its_points_and_is_flagged(unit, qid, label, code):
    verdict = run_judged(load(unit), qid, solution=code)
    assert verdict.passed, f"{label}: {verdict.diagnosis}: {verdict.message}"
    flags = _flags_for(unit, qid, code)
    assert flags and all("uses autograd, which this question's prompt forbids" in f
                         for f in flags), flags


@pytest.mark.parametrize(("unit", "qid"), RULED, ids=[f"{u}-{q}" for u, q in RULED])
def test_the_reference_and_the_right_answers_are_not_flagged(unit, qid):
    answers = [cell_of(unit, qid).source] + [code for u, q, _, code in RIGHT
                                             if (u, q) == (unit, qid)]
    for code in answers:
        assert _flags_for(unit, qid, code) == [], code


def test_the_same_answers_are_not_flagged_where_nothing_is_forbidden():
    for unit, qid, label, code in FLAGGED:
        course = copy.deepcopy(_release(unit))
        for cell in course.cells:
            cell.metadata.pop("autograd_course", None)
        assert _flags_for(unit, qid, code, course) == [], label
    # nor in a cell of the student's own, where the prompt says to compare with autograd
    unit, qid, _, code = FLAGGED[0]
    submission = _release(unit)
    at = next(i for i, c in enumerate(submission.cells) if nbgrader_meta(c).get("grade_id") == qid)
    submission.cells.insert(at + 1, nbformat.v4.new_code_cell(code))
    assert scan_cells(submission, _release(unit)) == ([], {})


def test_every_question_is_known():
    assert set(RULED) <= set(ALL_QUESTIONS)
