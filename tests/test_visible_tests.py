"""Visible tests compare with literal values: no visible test cell defines the answer.

A visible test cell runs in the learner's kernel and is read there; a function it defines that
computes what the question asks (a closed form, the whole rule) can be pasted into the answer.
For every question of every unit, the cells up to its test cell run as in a learner's kernel
with the reference solution, and every call the visible part makes of the answer
(``run_answer``, ``in_kernel``) is recorded with its result. Then every function the visible
part defines is called on the same inputs, with the answer itself replaced by an object that
fails when used: a function that still gives the answer's result (or a part of it: an item of
a tuple) computes it on its own, and the question fails. Inputs are tried as the call had them,
one at a time, and a list of shapes also as their counts of entries (math.prod). Results that
say little (booleans, integers, None, a value equal to an input, zeros) are not compared.
"""

from __future__ import annotations

import contextlib
import copy
import io
import math
import types
import warnings

import pytest
import torch
from support.exercises import ALL_QUESTIONS, load
from support.exercises import bound_names as _bound_names
from support.inprocess import HIDDEN, _cells_up_to, _source

from autograd_course.kernel import checks


class Poison:
    """The answer, taken away: any use of it fails."""

    def __getattr__(self, name):
        raise RuntimeError("the answer is not available here")

    def __call__(self, *args, **kwargs):
        raise RuntimeError("the answer is not available here")


def visible_run(nb, qid: str, monkeypatch):
    """Run the cells up to ``qid``'s test cell and its visible part, as a learner's kernel does
    with the reference solution; the namespace, the answer's names, and the calls of the answer
    the visible part made, as (args, result)."""
    namespace: dict = {"__name__": "__main__"}
    before, test = _cells_up_to(nb, qid)
    calls: list[tuple[tuple, object]] = []

    def recording(real):
        def call(fn, *args, **kwargs):
            result = real(fn, *args, **kwargs)
            calls.append(((fn, *args), result))
            return result
        return call

    with monkeypatch.context() as patch:
        patch.setattr(checks, "run_answer", recording(checks.run_answer))
        patch.setattr(checks, "in_kernel", recording(checks.in_kernel))
        for cell, _ in before:
            with _quiet(), contextlib.suppress(Exception):
                exec(compile(_source(cell, qid, None), "<cell>", "exec"), namespace)
        visible = test.source.split(HIDDEN)[0]
        with _quiet():
            exec(compile(visible, f"<{qid}_test>", "exec"), namespace)
    solution = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == qid)
    return namespace, _bound_names(solution.source), calls, f"<{qid}_test>"


@contextlib.contextmanager
def _quiet():
    with (warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()),
          contextlib.redirect_stderr(io.StringIO())):
        warnings.simplefilter("ignore")
        yield


def _variants(args: tuple):
    """The inputs a visible function is tried on: the call's, each alone, and a list of
    shapes as its counts of entries."""
    yield args
    for arg in args:
        yield (arg,)
        if isinstance(arg, list) and arg and all(
                isinstance(s, tuple) and all(type(n) is int for n in s) for s in arg):
            yield ([math.prod(s) for s in arg],)


def _parts(value) -> list:
    return [value, *value] if isinstance(value, tuple | list) and len(value) <= 16 else [value]


def _telling(value, inputs: tuple) -> bool:
    """Whether finding ``value`` says something: not a bool, int or None, not zeros, not one
    of the inputs."""
    if value is None or isinstance(value, bool | int | str):
        return False
    if isinstance(value, float):
        return value != int(value) and not any(_plain_equal(value, a) for a in inputs)
    if isinstance(value, torch.Tensor):
        if not value.is_floating_point() or value.numel() == 0 or not bool(value.any()):
            return False
        return not any(isinstance(a, torch.Tensor) and a.shape == value.shape and bool(
            torch.equal(a.detach().double(), value.detach().double())) for a in inputs)
    if isinstance(value, tuple | list):  # a plan ("jacrev", 7), predicted numbers...
        return len(value) >= 2 and not all(isinstance(v, bool) for v in value) and all(
            isinstance(v, int | float | str) for v in value) and not any(
            _plain_equal(value, a) for a in inputs)
    return False


def _plain_equal(value, other) -> bool:
    """``value == other`` for numbers, strings and sequences of them; False for anything else."""
    plain = (int, float, str, tuple, list)
    if not isinstance(other, plain) or type(other) is not type(value):
        return False
    if isinstance(other, tuple | list) and not all(isinstance(v, int | float | str)
                                                   for v in other):
        return False
    return value == other


def _same(found, expected) -> bool:
    if isinstance(expected, torch.Tensor):
        return (isinstance(found, torch.Tensor) and found.shape == expected.shape
                and found.is_floating_point() and bool(torch.allclose(
                    found.detach().double(), expected.detach().double(), rtol=1e-6,
                    atol=1e-12)))
    if isinstance(expected, float):
        return isinstance(found, float) and math.isclose(found, expected, rel_tol=1e-9)
    return _plain_equal(found, expected)


def solving_functions(nb, qid: str, monkeypatch) -> list[str]:
    """The functions a visible test cell defines that give the answer's result without it."""
    namespace, answer_names, calls, filename = visible_run(nb, qid, monkeypatch)
    answers = {id(namespace[n]) for n in answer_names if n in namespace}
    defined = [(name, f) for name, f in namespace.items()
               if isinstance(f, types.FunctionType) and f.__code__.co_filename == filename]
    found = []
    saved = {n: namespace[n] for n in answer_names if n in namespace}
    namespace.update({n: Poison() for n in saved})
    try:
        for name, function in defined:
            for args, result in calls:
                inputs = tuple(Poison() if id(a) in answers else a for a in args)
                targets = [r for r in _parts(result) if _telling(r, inputs)]
                if targets and _gives(function, inputs, targets):
                    found.append(f"{name} gives the answer's result")
                    break
    finally:
        namespace.update(saved)
    return found


def _gives(function, inputs: tuple, targets: list) -> bool:
    for variant in _variants(inputs):
        try:
            with _quiet():
                out = function(*variant)
        except Exception:  # noqa: BLE001, S112 - not callable this way
            continue
        if any(_same(part, target) for part in _parts(out) for target in targets):
            return True
    return False


@pytest.mark.parametrize(("unit", "qid"), ALL_QUESTIONS, ids=[f"{u}-{q}" for u, q in ALL_QUESTIONS])
def test_no_visible_test_cell_defines_a_function_that_gives_the_answer(unit, qid, monkeypatch):
    assert solving_functions(load(unit), qid, monkeypatch) == []


#: What the visible cells of 09 Q1 and 10 Q4 defined before they compared with literals: a
#: closed form of sinc' and the plan's rule (issue 28). Each, added to its visible cell again,
#: is found.
SHIPPED = {
    ("09_extending", "q1_sinc"): """
def sinc_closed_form(x):
    values, slopes = [], []
    for t in x.reshape(-1).tolist():
        values.append(1.0 if t == 0 else math.sin(t) / t)
        if abs(t) < 0.5:
            slopes.append(sum((-1) ** k * 2 * k * t ** (2 * k - 1) / math.factorial(2 * k + 1)
                              for k in range(12, 0, -1)))
        else:
            slopes.append((t * math.cos(t) - math.sin(t)) / t**2)
    return (torch.tensor(values, dtype=torch.float64).reshape(x.shape),
            torch.tensor(slopes, dtype=torch.float64).reshape(x.shape))
""",
    ("10_functional", "q4_jacobian_plan"): """
def plan_of(counts):
    first, last = counts[0], counts[-1]
    return ("jacfwd", first) if first < last else ("jacrev", last)
""",
}


@pytest.mark.parametrize(("unit", "qid"), list(SHIPPED))
def test_a_visible_cell_that_defines_the_answer_is_found(unit, qid, monkeypatch):
    nb = copy.deepcopy(load(unit))
    test = next(c for c in nb.cells
                if c.metadata.get("nbgrader", {}).get("grade_id") == f"{qid}_test")
    test.source = SHIPPED[unit, qid] + "\n\n" + test.source
    name = SHIPPED[unit, qid].split("def ")[1].split("(")[0]
    assert f"{name} gives the answer's result" in solving_functions(nb, qid, monkeypatch)
