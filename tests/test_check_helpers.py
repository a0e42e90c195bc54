"""Unit tests of the check helpers (``autograd_course.kernel.checks``) that test cells call.

Each helper accepts the right answer and names a typical mistake (its diagnosis code and
message), never revealing the expected values unless asked; a failing check shows as one
line in a notebook (two tests start a real kernel for that). The accumulated-gradient check
is fair: every correct way of computing it passes on 1000 random draws.
"""

from __future__ import annotations

import re
import warnings

import nbformat
import numpy as np
import pytest
import torch
from support.exercises import numbers_of

from autograd_course.kernel import checks
from autograd_course.kernel.checks import CheckError

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


# --- kernel/checks/ ------------------------------------------------------------------------------


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


def words(text: str) -> str:
    """``text``'s words, one space apart (a message in a notebook is broken into lines)."""
    return " ".join(text.split())


def test_a_check_error_shows_as_one_red_line_in_a_notebook():
    error = diagnosis_of(checks.check_number, 4.0, 2.0, name="x")
    lines = error._render_traceback_()
    assert len(lines) == 1 and "CheckError" in lines[0] and words(str(error)) in words(lines[0])
    # broken at spaces: JupyterLab would break a longer line anywhere, mid-word
    assert max(len(re.sub(r"\x1b\[[0-9;]*m", "", line)) for line in lines[0].splitlines()) <= 90


def test_a_failing_check_in_a_real_kernel_shows_the_diagnosis_alone(root):
    from nbclient import NotebookClient

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        "import torch\nfrom autograd_course.kernel.checks import check_tensor\n"
        "check_tensor(torch.tensor([4.0]), torch.tensor([2.0]), name='x.grad', gradient=True)")])
    NotebookClient(nb, kernel_name="python3", allow_errors=True,
                   resources={"metadata": {"path": str(root)}}).execute()
    (error,) = [o for o in nb.cells[0].outputs if o.output_type == "error"]
    assert len(error.traceback) == 1, error.traceback  # no frames of kernel/checks/
    assert "x.grad is twice the right gradient" in error.traceback[0]


def _stub(*args):
    raise NotImplementedError()  # the template's blank answer


def test_a_blank_answer_is_not_answered_in_one_line_not_a_traceback():
    error = diagnosis_of(checks.run_answer, _stub, torch.ones(2), name="grad_of(...)")
    assert isinstance(error, checks.NotAnswered) and error.diagnosis == "blank"
    assert "grad_of(...) is not answered yet" in str(error)
    assert "raise NotImplementedError()" in str(error)
    (line,) = error._render_traceback_()
    assert "NotAnswered" in line and words(str(error)) in words(line)
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
        assert len(errors[label]) == 1, (label, errors[label])  # no frames of kernel/checks/
        assert errors[label][0].startswith("NotAnswered: "), errors[label]
    assert "grad_of(...) is not answered yet" in errors["via run_answer"][0]
    assert "raise NotImplementedError()" in errors["called directly"][0]
    assert "`predicted` is not defined yet" in errors["name not defined"][0]
    # the learner's own cells keep their tracebacks; a name their function uses that no cell
    # run defines (a cell skipped, or a name misspelt) is one line naming both ways out
    assert len(errors["the learner's own cell"]) > 1
    assert len(errors["a test meets that bug"]) == 1, errors["a test meets that bug"]
    line = " ".join(errors["a test meets that bug"][0].split())
    assert line.startswith("NameError: name 'undefined_helper' is not defined, in your "
                           "function mine (line 2 of your cell ["), line
    assert "Run All Above Selected Cell" in line and "check its spelling" in line, line


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
