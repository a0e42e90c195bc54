"""The graded exercises: notebook structure, nbgrader validation, release/ and the tests' tests.

Fast part (in-process, no Jupyter kernel): every question runs as in a student's kernel
(``run_local``: the visible checks as the student sees them) and as grading runs it
(``run_judged``: the test cell in the judge, the answer in an in-process kernel, through the
same encoding and handles). The reference solution must pass both silently, and every typical
wrong answer of ``exercise_answers.WRONG_ANSWERS`` must get its diagnosis from the judge.
Slow part (one nbgrader process per check, all notebooks at once): ``nbgrader validate`` on
source/, ``nbgrader validate --invert`` on release/, and release/ == what nbgrader generates.
"""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
import warnings
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat
import numpy as np
import pytest
import torch
from support import nearcopy
from support.inprocess import run_judged, run_local
from support.units import UNITS

from autograd_course.grading.release import generate
from autograd_course.kernel import checks, hints
from autograd_course.kernel.checks import CheckError
from autograd_course.testkit import WRONG_ANSWERS

ROOT = Path(__file__).resolve().parent.parent
HIDDEN = "### BEGIN HIDDEN TESTS"
GRADE_ID = re.compile(r"q(\d+)_[a-z0-9_]+")


def source_path(unit: str) -> Path:
    return ROOT / "source" / unit / f"{unit}.ipynb"


def release_path(unit: str) -> Path:
    return ROOT / "release" / unit / f"{unit}.ipynb"


def nbgrader_meta(cell) -> dict:
    return cell.metadata.get("nbgrader", {})


_LOADED: dict[str, nbformat.NotebookNode] = {}


def load(unit: str):
    if unit not in _LOADED:
        _LOADED[unit] = nbformat.read(source_path(unit), as_version=4)
    return _LOADED[unit]


def questions(unit: str) -> list[str]:
    """The grade_ids of the solution cells of ``unit``, in order."""
    return [
        nbgrader_meta(c)["grade_id"]
        for c in load(unit).cells
        if nbgrader_meta(c).get("solution") and c.cell_type == "code"
    ]


ALL_QUESTIONS = [(unit, qid) for unit in UNITS for qid in questions(unit)]
ALL_WRONG = [
    pytest.param(unit, qid, w, id=f"{unit}-{qid}-{w.label}")
    for (unit, qid), answers in WRONG_ANSWERS.items()
    for w in answers
]


def numbers_of(value) -> list[str]:
    """Ways an expected value could be printed in a message (for the 'never reveal' check)."""
    if value is None or isinstance(value, bool | str | type):
        return []  # names and choices are short words: they could be any message's words
    if isinstance(value, list | tuple | set | dict):
        items = value.values() if isinstance(value, dict) else value
        return [text for item in items for text in numbers_of(item)]
    if torch.is_tensor(value):
        values = value.detach().flatten().tolist()
    else:
        values = [float(value)]
    texts = []
    for v in values:
        if abs(v) < 1e-3:
            continue  # 0.0 and tiny values print like many harmless things
        texts += [f"{v:.4f}", f"{v:.3f}", repr(v)]
    return texts


# --- structure --------------------------------------------------------------------------------


def _bound_names(source: str) -> set[str]:
    """The names a cell binds in the notebook's namespace: assignments, imports, for and with
    targets, defs and classes at its top level (not the locals of its functions)."""
    bound: set[str] = set()

    def visit(node):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            bound.add(node.name)
            return  # its body binds locals
        if isinstance(node, ast.Lambda | ast.comprehension | ast.GeneratorExp | ast.ListComp
                      | ast.SetComp | ast.DictComp):
            return
        if isinstance(node, ast.Import | ast.ImportFrom):
            bound.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            bound.add(node.id)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(source))
    return bound


@pytest.mark.parametrize("unit", UNITS)
def test_no_test_cell_rebinds_a_name_the_notebook_provides(unit):
    # e.g. `hint = "..."` in a test cell replaced the notebook's hint() by a string, and
    # hint("q3") then failed, just when a learner wanted it
    nb = load(unit)
    provided = _bound_names(nb.cells[1].source)  # the imports cell
    assert "hint" in provided
    for cell in nb.cells:
        if nbgrader_meta(cell).get("grade") and cell.cell_type == "code":
            rebound = _bound_names(cell.source) & provided
            assert not rebound, f"{nbgrader_meta(cell)['grade_id']} rebinds {sorted(rebound)}"


@pytest.mark.parametrize("unit", UNITS)
def test_notebook_structure(unit):
    nb = load(unit)
    assert (nb.nbformat, nb.nbformat_minor) >= (4, 5)
    assert nb.metadata.kernelspec.name == "python3"
    ids = [c.id for c in nb.cells]
    assert len(ids) == len(set(ids)), "cell ids must be unique"
    intro, imports = nb.cells[0], nb.cells[1]
    assert intro.cell_type == "markdown" and nbgrader_meta(intro).get("locked")
    assert imports.cell_type == "code" and nbgrader_meta(imports).get("locked")
    assert "import torch" in imports.source
    assert "from autograd_course.kernel.checks import" in imports.source
    grade_ids = [nbgrader_meta(c)["grade_id"] for c in nb.cells if nbgrader_meta(c)]
    assert len(grade_ids) == len(set(grade_ids)), "grade_ids must be unique"
    qids = questions(unit)
    assert len(qids) >= 3, "at least three questions"
    for number, qid in enumerate(qids, start=1):
        assert GRADE_ID.fullmatch(qid) and qid.startswith(f"q{number}_"), qid
        index = next(i for i, c in enumerate(nb.cells) if nbgrader_meta(c).get("grade_id") == qid)
        text, solution, test = nb.cells[index - 1], nb.cells[index], nb.cells[index + 1]
        assert text.cell_type == "markdown", f"{qid}: an instruction precedes the solution"
        assert nbgrader_meta(solution) | {"grade": False} == nbgrader_meta(solution)
        assert "### BEGIN SOLUTION" in solution.source and "### END SOLUTION" in solution.source
        meta = nbgrader_meta(test)
        assert meta["grade_id"] == f"{qid}_test"
        assert meta["grade"] and meta["locked"] and not meta["solution"]
        assert isinstance(meta["points"], int) and meta["points"] > 0
        assert test.source.count(HIDDEN) == 1 and "### END HIDDEN TESTS" in test.source
        visible = test.source.split(HIDDEN)[0]
        assert "check_" in visible, f"{qid}: the visible part checks something"
        assert "torch.allclose" not in test.source, "compare through autograd_course.kernel.checks"
    assert len([c for c in nb.cells if nbgrader_meta(c).get("grade")]) == len(qids)


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


def cell_of(unit: str, grade_id: str):
    """The cell of ``unit``'s source notebook with this grade id."""
    return next(c for c in load(unit).cells if nbgrader_meta(c).get("grade_id") == grade_id)


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


@pytest.mark.parametrize("unit", UNITS)
def test_assignments_carry_the_kernels_language_info(unit):
    """JupyterLab fills in a notebook's language_info from the kernel and marks the notebook
    modified if it changed: an assignment carries what the lessons' kernel wrote."""
    lesson = nbformat.read(ROOT / "notebooks" / f"{unit}.ipynb", as_version=4)
    for notebook in (load(unit), nbformat.read(release_path(unit), as_version=4)):
        assert notebook.metadata.language_info == lesson.metadata.language_info
        assert notebook.metadata.kernelspec == lesson.metadata.kernelspec


def lesson_code_cells(unit: str) -> list[str]:
    lesson = nbformat.read(ROOT / "notebooks" / f"{unit}.ipynb", as_version=4)
    return [c.source for c in lesson.cells if c.cell_type == "code"]


@pytest.mark.parametrize(("unit", "qid"), ALL_QUESTIONS, ids=[f"{u}-{q}" for u, q in ALL_QUESTIONS])
def test_no_reference_solution_is_a_near_copy_of_a_lesson_cell(unit, qid):
    """A question applies the lesson to a case it did not show: typing a lesson cell in
    again does not answer it."""
    cell = cell_of(unit, qid)
    if len(nearcopy.tokens(nearcopy.solution_code(cell.source))) < nearcopy.SHORTEST:
        return  # a one-line fix: too short for any comparison to mean something
    share, at = nearcopy.near_copy_share(cell.source, lesson_code_cells(unit))
    assert share < nearcopy.THRESHOLD, f"{qid}: {share:.0%} of it is lesson code cell {at}"


def test_the_near_copy_test_finds_a_copy_renamed_and_commented():
    """The detector flags the lesson's own walk, renamed, commented and in a solution
    cell, and tells a short answer's scattered tokens apart from a copy."""
    lesson = lesson_code_cells("07_engine")
    walk = next(c for c in lesson if c.startswith("def topological_order"))
    body = walk.split("\n\n\nprint(")[0].replace("visited", "seen").replace("order", "nodes")
    copy = body.replace('    """', '    ### BEGIN SOLUTION\n    # my own walk\n    """', 1)
    copy += "\n    ### END SOLUTION"
    assert nearcopy.near_copy_share(copy, lesson)[0] >= nearcopy.THRESHOLD
    # rules in several regions of a given class, as 07 Q1 had: the lesson's own class with
    # each rule's line as a solution region
    rules = re.sub(r"\n( +)(return .*)\n", r"\n\1### BEGIN SOLUTION\n\1\2\n\1### END SOLUTION\n",
                   next(c for c in lesson if "class Value" in c))
    assert rules.count("BEGIN SOLUTION") >= 6
    assert nearcopy.near_copy_share(rules, lesson)[0] >= nearcopy.THRESHOLD
    # 08 Q2's few tokens are all in a long lesson cell, in order but far apart: the stretch
    # tells that apart from a copy
    freeze = cell_of("08_training", "q2_freeze").source
    solution = nearcopy.tokens(nearcopy.solution_code(freeze))
    lesson = lesson_code_cells("08_training")
    assert max(nearcopy.share_in_order(solution, nearcopy.tokens(c)) for c in lesson) >= (
        nearcopy.THRESHOLD)
    assert nearcopy.near_copy_share(freeze, lesson)[0] < nearcopy.THRESHOLD


def test_no_visible_test_imports_the_grader():
    """The visible part of a test cell runs in the learner's kernel, which has no grader
    (autograd_course.grading is not in the sandbox): only hidden parts may import it."""
    for unit in UNITS:
        for cell in load(unit).cells:
            if nbgrader_meta(cell).get("grade"):
                assert "autograd_course.grading" not in cell.source.split(HIDDEN)[0], (
                    unit, nbgrader_meta(cell)["grade_id"])


@pytest.mark.parametrize(("unit", "qid"), ALL_QUESTIONS, ids=[f"{u}-{q}" for u, q in ALL_QUESTIONS])
def test_every_question_has_hints_of_two_levels_at_least(unit, qid, capsys):
    number = qid.split("_")[0]
    texts = hints.texts_of(unit)[number]
    assert len(texts) >= 2 and all(len(t) > 20 for t in texts)
    hint = hints.hints_for(unit)
    for level in range(1, len(texts) + 2):  # one more: the last hint again
        hint(number)
        shown = capsys.readouterr().out
        assert shown.startswith(f"Hint {min(level, len(texts))}/{len(texts)} for {number}:")
    assert f'hint = hints_for("{unit}")' in load(unit).cells[1].source  # the locked imports
    assert 'hint("q1")' in load(unit).cells[0].source  # the introduction says how


def test_hints_name_only_existing_questions(capsys):
    for unit in UNITS:
        numbers = {qid.split("_")[0] for qid in questions(unit)}
        assert set(hints.texts_of(unit)) == numbers, unit
    hints.hints_for("01_gradients")("q9")
    assert "No hints for 'q9'" in capsys.readouterr().out


# --- fairness: a correct answer never fails a hidden test ------------------------------------


ACCUMULATED_VERSIONS = {
    "float64": lambda w0, x, t, n: n * 2 * (w0 * x - t) * x,
    "float32 tensor": lambda w0, x, t, n: (
        n * 2 * (torch.tensor(w0) * x - t) * x).item(),
    "float32 tensors throughout": lambda w0, x, t, n: float(
        n * 2 * (torch.tensor(w0) * torch.tensor(x) - torch.tensor(t)) * torch.tensor(x)),
    "numpy float32": lambda w0, x, t, n: n * 2 * (np.float32(w0) * np.float32(x)
                                                  - np.float32(t)) * np.float32(x),
    "numpy float64": lambda w0, x, t, n: float(np.multiply(n * 2 * (w0 * x - t), x)),
}


@pytest.mark.parametrize("version", list(ACCUMULATED_VERSIONS))
def test_accumulated_grad_grades_every_correct_version_on_1000_draws(version):
    formula = ACCUMULATED_VERSIONS[version]
    for _ in range(1000):
        w0, x, t, n = checks.accumulation_inputs()
        checks.check_accumulated_grad(formula(w0, x, t, n), w0, x, t, n)


def test_accumulated_grad_still_catches_each_wrong_factor_on_1000_draws():
    for _ in range(1000):
        w0, x, t, n = checks.accumulation_inputs()
        right = n * 2 * (w0 * x - t) * x
        for wrong_answer in (right / n, -right, right * (n + 1) / n, right / 2):
            with pytest.raises(CheckError):
                checks.check_accumulated_grad(wrong_answer, w0, x, t, n)


# --- what learners read ------------------------------------------------------------------------

DOCUMENT_WORDS = re.compile(
    r"seed (?:0\d\d|demo)|\bthe seeds?\b|seed's|\(seed|original demo|seed_table", re.I)


def learner_texts():
    for folder in ("notebooks", "source", "release"):
        for path in sorted((ROOT / folder).rglob("*.ipynb")):
            nb = nbformat.read(path, as_version=4)
            yield path, "\n".join(c.source for c in nb.cells)
    for path in sorted((ROOT / "demos").glob("*")):
        yield path, path.read_text()
    for path in sorted((ROOT / "autograd_course" / "hints").glob("*.py")):
        yield path, path.read_text()


LEARNER_TEXTS = list(learner_texts())


@pytest.mark.parametrize(("path", "text"), LEARNER_TEXTS, ids=[p.name for p, _ in LEARNER_TEXTS])
def test_learners_read_of_demos_by_their_names_never_of_seed_documents(path, text):
    assert not DOCUMENT_WORDS.search(text), DOCUMENT_WORDS.search(text).group(0)


# --- checks.py ----------------------------------------------------------------------------------


def diagnosis_of(fn, *args, **kwargs) -> CheckError:
    with pytest.raises(CheckError) as info:
        fn(*args, **kwargs)
    return info.value


EXPECTED = torch.tensor([1.5, -2.25, 3.125])


def test_check_tensor_accepts_the_right_answer():
    checks.check_tensor(EXPECTED.clone(), EXPECTED)
    checks.check_number(2.5, 2.5)


@pytest.mark.parametrize(
    ("actual", "diagnosis", "says"),
    [
        (None, "none", "None"),
        ([1.5, -2.25, 3.125], "type", "torch.Tensor"),
        (EXPECTED.sum(), "shape", "shape"),
        (EXPECTED.double(), "dtype", "dtype"),
        (torch.tensor([1, 2, 3]), "dtype", "dtype"),
        (-EXPECTED, "sign", "sign"),
        (2 * EXPECTED, "factor", "twice"),
        (3 * EXPECTED, "factor", "three times"),
        (EXPECTED / 2, "fraction", "1/2"),
        (torch.zeros(3), "zero", "zeros"),
        (torch.tensor([float("nan"), 0.0, 1.0]), "nan", "NaN"),
        (EXPECTED + 1, "values", "wrong values"),
    ],
)
def test_check_tensor_names_the_mistake(actual, diagnosis, says):
    error = diagnosis_of(checks.check_tensor, actual, EXPECTED, name="x.grad")
    assert error.diagnosis == diagnosis
    assert says in str(error) and "x.grad" in str(error)
    for text in numbers_of(EXPECTED):
        assert text not in str(error)


@pytest.mark.parametrize(("actual", "diagnosis", "says"), [
    (2 * EXPECTED, "accumulated", "accumulated over 2 backward() calls"),
    (torch.zeros(3), "zero", "cleared"),
])
def test_gradient_answers_tell_the_backward_story_and_others_do_not(actual, diagnosis, says):
    error = diagnosis_of(checks.check_tensor, actual, EXPECTED, name="x.grad", gradient=True)
    assert error.diagnosis == diagnosis and says in str(error)
    plain = diagnosis_of(checks.check_tensor, actual, EXPECTED, name="prediction")
    assert "backward()" not in str(plain) and "cleared" not in str(plain)


def test_dtype_messages_name_the_dtype_actually_used():
    ints = diagnosis_of(checks.check_tensor, torch.tensor([1, 2, 3]), EXPECTED)
    assert "makes integers" in str(ints)
    doubles = diagnosis_of(checks.check_tensor, EXPECTED.double(), EXPECTED)
    assert "makes integers" not in str(doubles) and "dtype=torch.float32" in str(doubles)


def test_check_untouched_names_what_happened():
    before = torch.ones(3)
    flagged = before.clone().requires_grad_(True)
    assert "set requires_grad on v" in str(diagnosis_of(checks.check_untouched, flagged, before,
                                                        "v"))
    filled = before.clone()
    filled.grad = torch.ones(3)
    assert "filled v.grad" in str(diagnosis_of(checks.check_untouched, filled, before, "v"))
    moved = before + 1
    assert "changed the values of v" in str(diagnosis_of(checks.check_untouched, moved, before,
                                                         "v"))
    checks.check_untouched(before.clone(), before, "v")


def test_a_check_error_shows_as_one_red_line_in_a_notebook():
    error = diagnosis_of(checks.check_number, 4.0, 2.0, name="x")
    lines = error._render_traceback_()
    assert len(lines) == 1 and "CheckError" in lines[0] and str(error) in lines[0]


def test_a_failing_check_in_a_real_kernel_shows_the_diagnosis_alone(root):
    from nbclient import NotebookClient

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        "import torch\nfrom autograd_course.kernel.checks import check_tensor\n"
        "check_tensor(torch.tensor([4.0]), torch.tensor([2.0]), name='x.grad', gradient=True)")])
    NotebookClient(nb, kernel_name="python3", allow_errors=True,
                   resources={"metadata": {"path": str(root)}}).execute()
    (error,) = [o for o in nb.cells[0].outputs if o.output_type == "error"]
    assert len(error.traceback) == 1, error.traceback  # no frames of checks.py
    assert "x.grad is twice the right gradient" in error.traceback[0]


def _stub(*args):
    raise NotImplementedError()  # the template's blank answer


def test_a_blank_answer_is_not_answered_in_one_line_not_a_traceback():
    error = diagnosis_of(checks.run_answer, _stub, torch.ones(2), name="grad_of(...)")
    assert isinstance(error, checks.NotAnswered) and error.diagnosis == "blank"
    assert "grad_of(...) is not answered yet" in str(error)
    assert "raise NotImplementedError()" in str(error)
    (line,) = error._render_traceback_()
    assert "NotAnswered" in line and str(error) in line
    error = diagnosis_of(checks.in_kernel, _stub, 1.0, name="a + b with its local rule")
    assert isinstance(error, checks.NotAnswered) and "a + b with its local rule" in str(error)


def test_a_not_implemented_error_with_a_message_is_not_a_blank_answer():
    def unsupported():
        raise NotImplementedError("Could not run 'aten::foo' with arguments from the Meta backend")

    for call in (checks.run_answer, checks.in_kernel):
        with pytest.raises(NotImplementedError, match="aten::foo"):
            call(unsupported)


KERNEL_CELLS = {
    "imports": "import torch\nfrom autograd_course.kernel.checks import (in_kernel, run_answer, "
               "check_tuple, visible_checks_passed)",
    "stub": "def grad_of(x):\n    # YOUR CODE HERE\n    raise NotImplementedError()",
    "via run_answer": "run_answer(grad_of, torch.ones(2))\nvisible_checks_passed('q1')",
    "via in_kernel": "def probe(f):\n    return f(torch.ones(2))\n\n"
                     "in_kernel(probe, grad_of)\nvisible_checks_passed('q1')",
    "called directly": "grad_of(torch.ones(2))\nvisible_checks_passed('q1')",
    "name not defined": "check_tuple(predicted, 2, name='predicted')\n"
                        "visible_checks_passed('q2', format_only=True)",
    "the learner's own cell": "print(predicted)",
    "the learner's own bug": "def mine(x):\n    return undefined_helper(x)",
    "a test meets that bug": "run_answer(mine, torch.ones(2))\nvisible_checks_passed('q3')",
}


def test_an_unanswered_question_shows_one_line_in_a_real_kernel(root):
    from nbclient import NotebookClient

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source)
                                         for source in KERNEL_CELLS.values()])
    NotebookClient(nb, kernel_name="python3", allow_errors=True,
                   resources={"metadata": {"path": str(root)}}).execute()
    errors = {}
    for label, cell in zip(KERNEL_CELLS, nb.cells, strict=True):
        found = [o for o in cell.outputs if o.output_type == "error"]
        if found:
            errors[label] = [re.sub(r"\x1b\[[0-9;]*m", "", line) for line in found[0].traceback]
    for label in ("via run_answer", "via in_kernel", "called directly", "name not defined"):
        assert len(errors[label]) == 1, (label, errors[label])  # no frames of checks.py
        assert errors[label][0].startswith("NotAnswered: "), errors[label]
    assert "grad_of(...) is not answered yet" in errors["via run_answer"][0]
    assert "raise NotImplementedError()" in errors["called directly"][0]
    assert "`predicted` is not defined yet" in errors["name not defined"][0]
    # the learner's own cells, and a bug inside their own function, keep their tracebacks
    assert len(errors["the learner's own cell"]) > 1
    assert len(errors["a test meets that bug"]) > 1
    assert "undefined_helper" in "\n".join(errors["a test meets that bug"])


class AddBackward0:  # a grad_fn's class: a name that starts with a vowel
    pass


@pytest.mark.parametrize("check", [
    lambda v: checks.check_equal(v, "AddBackward0", name="grad_fn name"),
    lambda v: checks.check_tensor(v, torch.ones(1), name="x.grad"),
    lambda v: checks.check_number(v, 1.0, name="slope"),
    lambda v: checks.check_number_format(v, name="slope"),
    lambda v: checks.check_bool_format(v, name="is_leaf"),
    lambda v: checks.check_tuple(v, 2, name="answer"),
    lambda v: checks.check_shape(v, (1,), name="x"),
    lambda v: checks.check_grad_fn_name(v, torch.ones(1), name="grad_fn name"),
    lambda v: checks.check_prediction_format(v, name="prediction"),
    lambda v: checks.run_answer(v, name="f(...)"),
], ids=["check_equal", "check_tensor", "check_number", "check_number_format",
        "check_bool_format", "check_tuple", "check_shape", "check_grad_fn_name",
        "check_prediction_format", "run_answer"])
def test_a_wrong_type_message_reads_right_for_any_type_name(check):
    for value in (AddBackward0(), object(), np.zeros(1)):
        message = str(diagnosis_of(check, value))
        assert not re.search(r"\ban? (?:AddBackward0|object|ndarray)\b", message), message
        assert f"its type is {type(value).__name__}" in message, message


def test_reveal_shows_values_only_when_asked():
    hidden = diagnosis_of(checks.check_tensor, EXPECTED + 1, EXPECTED)
    shown = diagnosis_of(checks.check_tensor, EXPECTED + 1, EXPECTED, reveal=True)
    assert "3.125" not in str(hidden) and "3.125" in str(shown)


def test_question_specific_mistakes():
    wrong = EXPECTED * 7
    error = diagnosis_of(
        checks.check_tensor, wrong, EXPECTED, mistakes=[(wrong, "custom", "you did X")]
    )
    assert error.diagnosis == "custom" and "you did X" in str(error)


def test_check_number():
    assert diagnosis_of(checks.check_number, torch.tensor(2.0), 2.0).diagnosis == "type"
    assert ".item()" in str(diagnosis_of(checks.check_number, torch.tensor(2.0), 2.0))
    assert diagnosis_of(checks.check_number, 4.0, 2.0).diagnosis == "factor"
    assert diagnosis_of(checks.check_number, 4.0, 2.0, gradient=True).diagnosis == "accumulated"
    assert diagnosis_of(checks.check_number, np.float32(2.5), 2.0).diagnosis == "values"
    checks.check_number(np.float32(2.0), 2.0)  # a numpy number is a number
    assert diagnosis_of(checks.check_number, -2.0, 2.0).diagnosis == "sign"
    assert diagnosis_of(checks.check_number, True, 1.0).diagnosis == "type"


def test_check_gradient_of_explains_none():
    no_requires = torch.ones(3)
    error = diagnosis_of(checks.check_gradient_of, no_requires, EXPECTED, name="x")
    assert error.diagnosis == "none" and "requires_grad=True" in str(error)
    leaf = torch.ones(3, requires_grad=True)
    error = diagnosis_of(checks.check_gradient_of, leaf, EXPECTED, name="x")
    assert error.diagnosis == "none" and "backward()" in str(error)
    nonleaf = leaf * 2
    nonleaf.sum().backward()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # reading .grad of a non-leaf must not warn
        error = diagnosis_of(checks.check_gradient_of, nonleaf, EXPECTED, name="y")
    assert error.diagnosis == "leaf" and "retain_grad()" in str(error)
    twice = torch.tensor([1.0, 2.0], requires_grad=True)
    for _ in range(2):
        (twice * twice).sum().backward()
    error = diagnosis_of(checks.check_gradient_of, twice, 2 * twice.detach(), name="x")
    assert error.diagnosis == "accumulated"


def test_check_no_graph_and_leaf():
    w = torch.ones(2, requires_grad=True)
    error = diagnosis_of(checks.check_no_graph, w * 2, "y")
    assert error.diagnosis == "graph" and "no_grad" in str(error)
    checks.check_no_graph((w * 2).detach())
    assert diagnosis_of(checks.check_is_leaf, w * 2, "x").diagnosis == "leaf"
    assert diagnosis_of(checks.check_is_leaf, w.detach(), "x").diagnosis == "requires_grad"
    checks.check_is_leaf(w)


def test_leaf_and_grad_fn_answers():
    w = torch.ones(2, requires_grad=True)
    y = w * 2
    checks.check_leaf_answer(True, w)
    checks.check_leaf_answer(False, y)
    assert "requires_grad" in str(diagnosis_of(checks.check_leaf_answer, True, y))
    checks.check_grad_fn_name("MulBackward0", y)
    checks.check_grad_fn_name(None, w)
    assert diagnosis_of(checks.check_grad_fn_name, str(y.grad_fn), y).diagnosis == "type"
    error = diagnosis_of(checks.check_grad_fn_name, "AddBackward0", y)
    assert error.diagnosis == "values" and "MulBackward0" not in str(error)


def test_copies_and_inference():
    t = torch.ones(3, requires_grad=True)
    checks.check_independent_copy(t.detach().clone(), t)
    assert diagnosis_of(checks.check_independent_copy, t.detach(), t).diagnosis == "storage"
    assert diagnosis_of(checks.check_independent_copy, t.clone(), t).diagnosis == "graph"
    with torch.inference_mode():
        inference = t * 2
    with torch.no_grad():
        plain = t * 2
    checks.check_inference(inference)
    assert diagnosis_of(checks.check_inference, plain).diagnosis == "inference_mode"


def test_predictions():
    def fails():
        raise KeyError("x")

    checks.check_prediction("KeyError", fails)
    checks.check_prediction(KeyError, fails)
    checks.check_prediction(None, lambda: None)
    assert diagnosis_of(checks.check_prediction, "ValueError", fails).diagnosis == "exception"
    assert "KeyError" not in str(diagnosis_of(checks.check_prediction, "ValueError", fails))
    assert diagnosis_of(checks.check_prediction, None, fails).diagnosis == "exception"
    assert diagnosis_of(checks.check_prediction_format, 3).diagnosis == "type"


def test_run_answer_catches_warnings_and_nonleaf_grad(capsys):
    def noisy(x):
        warnings.warn("something", UserWarning, stacklevel=1)
        print("chatter")
        return x

    assert checks.run_answer(noisy, 3) == 3
    assert capsys.readouterr() == ("", "")

    def nonleaf_grad(x):
        y = x * 2
        y.sum().backward()
        return y.grad

    error = diagnosis_of(checks.run_answer, nonleaf_grad, torch.ones(2, requires_grad=True))
    assert error.diagnosis == "leaf"
    assert capsys.readouterr() == ("", "")


def test_fresh_inputs_ignore_the_global_seed():
    torch.manual_seed(0)
    a = checks.fresh(5)
    torch.manual_seed(0)
    b = checks.fresh(5)
    assert not torch.equal(a, b)
    assert a.dtype == torch.float32 and not a.requires_grad
    assert ((a >= -2) & (a < 2)).all()
    assert 1 <= checks.fresh_int(1, 3) <= 3
    assert checks.fresh().shape == ()


# --- nbgrader: validate, release ------------------------------------------------------------


def _nbgrader(*args, cwd) -> str:
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env["PYTHONUNBUFFERED"] = "1"  # keep nbgrader's log (stderr) and results (stdout) in order
    result = subprocess.run(
        [sys.executable, "-m", "nbgrader", *args],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    return result.stdout


def _split_by_notebook(output: str) -> dict[str, str]:
    """nbgrader validate's output, one section per notebook (keyed by unit)."""
    sections: dict[str, str] = {}
    current = None
    for line in output.splitlines():
        match = re.search(r"Validating '.*/(\d\d_[a-z_]+)\.ipynb'", line)
        if match:
            current = match.group(1)
            sections[current] = ""
        elif current:
            sections[current] += line + "\n"
    return sections


@pytest.fixture(scope="module")
def nbgrader_results(tmp_path_factory):
    """Validate all of source/, validate --invert all of release/, and regenerate release/,
    concurrently, each in one process, outside the course directory (no gradebook.db here)."""
    work = tmp_path_factory.mktemp("nbgrader")
    sources = [str(source_path(u)) for u in UNITS]
    releases = [str(release_path(u)) for u in UNITS]
    # A cell's timeout as generous as the suite's load needs: nbgrader's default (30 s) is
    # about 15 times the slowest test cell (08's, under 2 s on an idle machine).
    timeout = "--Execute.timeout=300"
    with ThreadPoolExecutor(3) as pool:
        validated = pool.submit(_nbgrader, "validate", timeout, *sources, cwd=work)
        inverted = pool.submit(_nbgrader, "validate", "--invert", timeout, *releases, cwd=work)
        generated = pool.submit(generate, ROOT, dest=work / "release")
        return {
            "source": _split_by_notebook(validated.result()),
            "release": _split_by_notebook(inverted.result()),
            "generated": generated.result(),
        }


@pytest.mark.parametrize("unit", UNITS)
def test_nbgrader_validate_source_passes(nbgrader_results, unit):
    output = nbgrader_results["source"].get(unit, "(not validated)")
    assert "Success! Your notebook passes all the tests." in output, output


@pytest.mark.parametrize("unit", UNITS)
def test_nbgrader_validate_invert_release_passes(nbgrader_results, unit):
    output = nbgrader_results["release"].get(unit, "(not validated)")
    assert "Success! The notebook does not pass any tests." in output, output


@pytest.mark.parametrize("unit", UNITS)
def test_release_is_exactly_what_nbgrader_generates(nbgrader_results, unit):
    generated = nbgrader_results["generated"] / unit
    committed = ROOT / "release" / unit
    assert sorted(p.name for p in generated.iterdir()) == sorted(
        p.name for p in committed.iterdir()
    )
    for path in generated.iterdir():
        assert json.loads((committed / path.name).read_text()) == json.loads(path.read_text())
        assert (committed / path.name).read_text() == path.read_text(), "byte-for-byte"


@pytest.mark.parametrize("unit", UNITS)
def test_release_has_no_solutions_or_hidden_tests(unit):
    text = release_path(unit).read_text()
    for marker in ("BEGIN SOLUTION", "END SOLUTION", "BEGIN HIDDEN TESTS", "END HIDDEN TESTS"):
        assert marker not in text
    release = nbformat.reads(text, as_version=4)
    release_lines = {
        line.strip()
        for c in release.cells
        if c.cell_type == "code"
        for line in c.source.splitlines()
    }
    secret, public = [], []
    for cell in load(unit).cells:
        meta, source = nbgrader_meta(cell), cell.source
        for begin, end in (
            ("### BEGIN SOLUTION", "### END SOLUTION"),
            (HIDDEN, "### END HIDDEN TESTS"),
        ):
            if meta.get("solution" if begin != HIDDEN else "grade") and begin in source:
                before, rest = source.split(begin, 1)
                hidden, after = rest.split(end, 1)
                secret.append(hidden)
                source = before + after
        public.append(source)
    public_lines = {line.strip() for line in "\n".join(public).splitlines()}
    for line in "\n".join(secret).splitlines():
        line = line.strip()
        if len(line) > 8 and line not in public_lines:
            assert line not in release_lines, f"{unit}: {line!r} is in release/"

