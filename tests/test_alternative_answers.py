"""Correct answers other than the reference get full marks.

A unit's catalogue module (``autograd_course.testkit.uNN_topic``) may hold ``RIGHT[grade_id]``,
a list of ``(label, code)``: correct answers in another style than the reference solution
(another API the prompt, the lesson or PyTorch's notes allow). Each replaces the solution cell
and must pass the judge (the question's full points: its visible and hidden tests) and the
learner's visible checks, silently, as the reference does.
"""

from __future__ import annotations

import importlib
import pkgutil

import pytest
from support.exercises import ALL_QUESTIONS, load
from support.inprocess import run_judged, run_local

from autograd_course import testkit


def _right_answers() -> list[tuple[str, str, str, str]]:
    found = []
    for module in pkgutil.iter_modules(testkit.__path__):
        if module.name.startswith("u") and module.name[1:3].isdigit():
            unit = importlib.import_module(f"{testkit.__name__}.{module.name}")
            for qid, answers in getattr(unit, "RIGHT", {}).items():
                found += [(module.name[1:], qid, label, code) for label, code in answers]
    return found


RIGHT = _right_answers()


def test_right_answers_name_existing_questions():
    assert {(unit, qid) for unit, qid, _, _ in RIGHT} <= set(ALL_QUESTIONS)


@pytest.mark.parametrize(("unit", "qid", "label", "code"), RIGHT,
                         ids=[f"{u}-{q}-{label}" for u, q, label, _ in RIGHT])
def test_a_correct_alternative_gets_full_marks(unit, qid, label, code):
    verdict = run_judged(load(unit), qid, solution=code)
    assert verdict.passed, f"{label}: {verdict.diagnosis}: {verdict.message}"
    assert verdict.notes == [], verdict.notes
    visible = run_local(load(unit), qid, solution=code, visible_only=True)
    assert visible.error is None, f"{label}: {visible.error!r}"
    assert visible.stderr == "" and visible.stdout.startswith(f"{qid.split('_')[0]}: ")
