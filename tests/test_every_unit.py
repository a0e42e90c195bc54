"""Every unit graded by autograd-course grade: references get every point, stubs none, and a
kernel that lies about its tensors gains nothing."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from support.units import UNITS

sys.path.insert(0, str(Path(__file__).parent / "fixtures"))
import liar  # noqa: E402
from support.commands import run

from autograd_course.testkit import classes as course


@pytest.fixture(scope="module")
def every_unit(tmp_path_factory, root):
    """Every assignment's reference answers and blank stub, and a liar's answers where the
    points once rested on facts the kernel reports, graded by autograd-course grade."""
    base = course.make_course(tmp_path_factory.mktemp("units") / "course", root, list(UNITS))
    for unit in UNITS:
        release = base / "release" / unit / f"{unit}.ipynb"
        answers = course.reference_answers(base / "source" / unit / f"{unit}.ipynb")
        course.submit(base, "reference", unit, unit, course.fill(release, answers))
        course.submit(base, "stub", unit, unit, course.fill(release, {}))
        if unit in liar.ANSWERS:
            path = course.submit(base, "liar", unit, unit,
                                 course.fill(release, liar.ANSWERS[unit]))
            (path.parent / "liar.py").write_text(liar.LIAR)
    result = run("grade", "--jobs", "2", cwd=base)
    assert result.returncode == 0, result.stderr[-2000:]
    return base


@pytest.mark.class_grading
@pytest.mark.parametrize("unit", UNITS)
def test_references_get_every_point_and_stubs_none(every_unit, unit):
    scores = course.gradebook_scores(every_unit, unit)
    rec = course.grade_record(every_unit, "reference", unit)
    scores.pop("liar", None)
    assert scores == {"reference": rec.max_score, "stub": 0.0}, [
        q["message"] for q in rec.questions if not q["passed"]]
    stub = course.grade_record(every_unit, "stub", unit)
    assert {q["diagnosis"] for q in stub.questions} == {"blank"}
    assert rec.flags == [] and stub.flags == [] and rec.sandboxed


@pytest.mark.class_grading
@pytest.mark.parametrize("unit", sorted(liar.ANSWERS))
def test_a_kernel_that_lies_about_its_tensors_gains_nothing(every_unit, unit):
    rec = course.grade_record(every_unit, "liar", unit)
    lied = {f"{qid}_test" for qid in liar.ANSWERS[unit]}
    assert {q["question"]: q["score"] for q in rec.questions if q["question"] in lied} == (
        dict.fromkeys(lied, 0)), rec.questions
    assert rec.score == 0 and rec.sandboxed
