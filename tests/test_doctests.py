"""Every docstring example in the package runs, and prints what it says."""

from __future__ import annotations

import doctest
import importlib
import importlib.util
import pkgutil
from pathlib import Path

import matplotlib
import pytest

import autograd_course

matplotlib.use("Agg")


def _with_examples() -> list[str]:
    names = []
    for info in pkgutil.walk_packages(autograd_course.__path__, "autograd_course."):
        origin = importlib.util.find_spec(info.name).origin
        if ">>> " in Path(origin).read_text(encoding="utf-8"):
            names.append(info.name)
    return sorted(names)


MODULES = _with_examples()


def test_the_modules_with_examples_are_found():
    assert {"autograd_course.kernel.checks", "autograd_course.kernel.graphs",
            "autograd_course.lab.cost", "autograd_course.grading.report"} <= set(MODULES)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples failed"
