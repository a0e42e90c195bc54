"""The answer catalogue (``autograd_course.testkit.WRONG_ANSWERS``) against the tests' tests.

In-process, no Jupyter kernel: every question runs as in a student's kernel (``run_local``:
the visible checks as the student sees them) and as grading runs it (``run_judged``: the test
cell in the judge, the answer in an in-process kernel, through the same encoding and
handles). The reference solution must pass both silently, every typical wrong answer must get
its diagnosis from the judge, and every rule a prompt states is paired with a visible check.
"""

from __future__ import annotations

import pytest
from support.exercises import (
    ALL_QUESTIONS,
    HIDDEN,
    cell_of,
    load,
    nbgrader_meta,
    numbers_of,
)
from support.inprocess import run_judged, run_local

from autograd_course.kernel.checks import CheckError
from autograd_course.testkit import WRONG_ANSWERS

ALL_WRONG = [
    pytest.param(unit, qid, w, id=f"{unit}-{qid}-{w.label}")
    for (unit, qid), answers in WRONG_ANSWERS.items()
    for w in answers
]


def test_every_question_has_wrong_answers():
    assert set(WRONG_ANSWERS) == set(ALL_QUESTIONS)


# --- the tests' tests (in-process) ------------------------------------------------------------


@pytest.mark.parametrize(("unit", "qid"), ALL_QUESTIONS, ids=[f"{u}-{q}" for u, q in ALL_QUESTIONS])
def test_reference_answer_passes_silently(unit, qid):
    for _ in range(2):  # fresh random inputs each time
        run = run_local(load(unit), qid)
        assert run.error is None, f"{unit} {qid}: {run.error!r}"
        assert run.stderr == ""
        assert run.stdout.startswith(f"{qid.split('_')[0]}: ") and run.stdout.count("\n") == 1
        assert [str(w.message) for w in run.warnings] == [], "a warning would go to stderr"
        verdict = run_judged(load(unit), qid)
        assert verdict.passed, f"{unit} {qid}: {verdict.diagnostic}"
        assert verdict.stdout == "", "in the judge the visible checks print nothing"


@pytest.mark.parametrize(("unit", "qid", "answer"), ALL_WRONG)
def test_wrong_answer_is_diagnosed(unit, qid, answer):
    verdict = run_judged(load(unit), qid, solution=answer.code)
    if answer.noted:  # a fact the kernel reports of its own tensor: a note, no points lost
        assert verdict.passed, f"{verdict.diagnosis}: {verdict.message}"
        assert any(d in answer.diagnosis for d, _ in verdict.notes), verdict.notes
        said = " ".join(message for _, message in verdict.notes).lower()
        for text in answer.says:
            assert text.lower() in said, f"{text!r} not in {said!r}"
        visible = run_local(load(unit), qid, solution=answer.code, visible_only=True)
        assert visible.error is not None, "the learner's own visible checks catch it"
        return
    assert not verdict.passed, "the grader must not pass this wrong answer"
    message = verdict.message
    assert verdict.diagnosis in answer.diagnosis, f"{verdict.diagnosis}: {message}"
    for text in answer.says:
        assert text.lower() in message.lower(), f"{text!r} not in {message!r}"
    for text in answer.not_says:
        assert text.lower() not in message.lower(), f"{text!r} in {message!r}"
    error = verdict.error
    if isinstance(error, CheckError) and not error.reveal:
        for text in numbers_of(error.expected):
            assert text not in message, f"hidden test reveals {text}: {message}"
    visible = run_local(load(unit), qid, solution=answer.code, visible_only=True)
    assert visible.stderr == "", "a failing test cell still writes nothing to stderr"
    if answer.hidden_only:
        assert visible.error is None, f"visible checks should pass: {visible.error!r}"
    else:
        assert visible.error is not None, "the visible checks catch this mistake"


def prompt_of(unit: str, qid: str) -> str:
    """The text of question ``qid``: the markdown cells between its solution cell and the
    previous question's test cell."""
    cells, text = load(unit).cells, []
    at = next(i for i, c in enumerate(cells) if nbgrader_meta(c).get("grade_id") == qid)
    for cell in reversed(cells[:at]):
        if nbgrader_meta(cell).get("grade") or nbgrader_meta(cell).get("solution"):
            break
        if cell.cell_type == "markdown":
            text.insert(0, cell.source)
    return "\n".join(text)


def visible_part(unit: str, qid: str) -> str:
    return cell_of(unit, f"{qid}_test").source.split(HIDDEN)[0]


@pytest.mark.parametrize(("unit", "qid"), ALL_QUESTIONS, ids=[f"{u}-{q}" for u, q in ALL_QUESTIONS])
def test_every_rule_a_prompt_states_is_paired_with_a_visible_check(unit, qid):
    """Each catalogue answer that breaks a rule quotes the rule from the prompt, and (by
    test_wrong_answer_is_diagnosed) fails the visible checks; only predictions, hard-coded
    answers and gaming pass them. A question that asks for code pairs one rule at least."""
    prompt = " ".join(prompt_of(unit, qid).split())
    answers = WRONG_ANSWERS[(unit, qid)]
    format_only = "format_only=True" in visible_part(unit, qid)
    for answer in answers:
        if answer.breaks:
            assert not answer.hidden_only, f"{answer.label}: it breaks a stated rule"
            assert " ".join(answer.breaks.split()) in prompt, (answer.label, answer.breaks)
        if answer.hidden_only == "prediction":
            assert format_only, f"{answer.label}: only a prediction's value is hidden"
    if not format_only:
        assert any(a.breaks for a in answers), f"{qid}: no answer quotes a rule it breaks"
