"""The judge contract: check code asks of the judge only what :class:`Judge` names, and the
judge's ``Session`` gives it.

The checks (``autograd_course/kernel/checks/``) reach the judge only by reading ``JUDGE``,
imported from :mod:`~autograd_course.kernel.checks.contract`; the attributes they use on it are
exactly the Protocol's; and the judge's ``Session`` is a :class:`Judge` whose methods accept
every call the Protocol allows.
"""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

from autograd_course.grading.boundary.judge import Session
from autograd_course.grading.boundary.links import InProcessLink
from autograd_course.kernel import checks
from autograd_course.kernel.checks import contract
from autograd_course.kernel.checks.contract import JUDGE, Judge

CHECKS = Path(checks.__file__).parent
CONTRACT = "autograd_course.kernel.checks.contract"
METHODS = sorted(name for name, value in vars(Judge).items()
                 if inspect.isfunction(value) and not name.startswith("_"))


def _modules() -> dict[str, ast.Module]:
    return {path.name: ast.parse(path.read_text(encoding="utf-8"))
            for path in sorted(CHECKS.glob("*.py"))}


def _is_judge_get(node: ast.AST) -> bool:
    """Whether ``node`` is ``JUDGE.get()``."""
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr == "get" and isinstance(node.func.value, ast.Name)
            and node.func.value.id == "JUDGE")


def _asked_of_the_judge(tree: ast.Module) -> set[str]:
    """The attributes a module reads on ``JUDGE.get()`` or on a name bound to it."""
    asked = set()
    for function in ast.walk(tree):
        if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        judges = {target.id for node in ast.walk(function) if isinstance(node, ast.Assign)
                  and _is_judge_get(node.value) for target in node.targets
                  if isinstance(target, ast.Name)}
        asked |= {node.attr for node in ast.walk(function) if isinstance(node, ast.Attribute)
                  and (_is_judge_get(node.value) or isinstance(node.value, ast.Name)
                       and node.value.id in judges)}
    return asked


def test_the_judges_session_is_a_judge():
    session = Session(InProcessLink())
    assert isinstance(session, Judge)
    assert checks.JUDGE is JUDGE and JUDGE.get() is None  # None outside a judged test cell


def _calls(signature: inspect.Signature):
    """Calls the signature allows, as (args, kwargs) after ``self``: required arguments alone,
    and every argument; positional-or-keyword ones by position, then by keyword."""
    parameters = list(signature.parameters.values())[1:]
    for everything in (False, True):
        chosen = [p for p in parameters if everything or p.default is p.empty]
        keyword = {p.name: p.name for p in chosen if p.kind is p.KEYWORD_ONLY}
        positional = [p for p in chosen if p.kind is p.POSITIONAL_OR_KEYWORD]
        yield [p.name for p in positional], keyword
        yield [], {**{p.name: p.name for p in positional}, **keyword}


@pytest.mark.parametrize("name", METHODS)
def test_the_sessions_methods_take_what_the_contract_passes(name):
    wanted = inspect.signature(getattr(Judge, name))
    given = inspect.signature(getattr(Session, name))
    for args, kwargs in _calls(wanted):
        given.bind(None, *args, **kwargs)  # raises TypeError when the session refuses it


def test_the_contract_names_exactly_what_the_checks_ask_of_the_judge():
    asked = set().union(*map(_asked_of_the_judge, _modules().values()))
    assert asked == set(METHODS)


def test_the_checks_reach_the_judge_only_through_the_contract():
    for name, tree in _modules().items():
        if name == "contract.py":
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                imported = {alias.name for alias in node.names}
                assert "JUDGE" not in imported or node.module == CONTRACT, name
                assert "ContextVar" not in imported, f"{name} makes a context of its own"
            if isinstance(node, ast.Import | ast.ImportFrom):
                modules = [node.module or ""] if isinstance(node, ast.ImportFrom) else [
                    alias.name for alias in node.names]
                assert not any(m.startswith("autograd_course.grading") for m in modules), name
        # JUDGE is only read: the judge alone sets it, around a test cell
        uses = [node for node in ast.walk(tree) if isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name) and node.value.id == "JUDGE"]
        assert all(node.attr == "get" for node in uses), name
    assert vars(contract)["JUDGE"] is JUDGE
