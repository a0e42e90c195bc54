"""The package's layout is its trust boundary: who may import what.

- ``kernel/`` is all a graded kernel sees (the sandbox mounts it and ``__init__.py`` by name):
  none of its modules may reach ``grading/``, ``lab/`` or ``testkit/``, at import or later;
- ``lab/`` (the learner's tools) and ``grading/`` (the grader) never import each other;
- imports point down: into ``kernel/`` from anywhere, never out of it; and there is no circle.
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

import autograd_course
from autograd_course.grading.boundary import sandbox

PACKAGE = Path(autograd_course.__file__).resolve().parent
ABOVE_KERNEL = ("autograd_course.grading", "autograd_course.lab", "autograd_course.testkit",
                "autograd_course.cli")
#: Calls that import the module their first argument names.
IMPORTERS = ("import_module", "__import__")


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def area(module: str) -> str:
    """kernel, lab, boundary, grading, testkit, or the package's root (cli, __main__)."""
    parts = module.split(".")
    if parts[1:3] == ["grading", "boundary"]:
        return "boundary"
    return parts[1] if len(parts) > 1 and parts[1] in ("kernel", "lab", "grading", "testkit") \
        else "root"


def imports_of(module: str, unknown: list[str] | None = None) -> set[str]:
    """The package's modules that ``module`` imports anywhere in its code (in functions too),
    as written, relative imports resolved; ``importlib.import_module("autograd_course...")``
    with a literal name counts. Names of the package that are no module go to ``unknown``."""
    path = MODULES[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    unknown = [] if unknown is None else unknown
    for node in ast.walk(ast.parse(path.read_text())):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([node.module] if node.module else []))
            names = [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base
                     for a in node.names]
            if base.startswith("autograd_course") and base not in MODULES:
                unknown.append(f"line {node.lineno}: {base}")
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant) \
                and getattr(node.func, "attr", getattr(node.func, "id", None)) in IMPORTERS:
            names = [str(node.args[0].value)]  # import_module("autograd_course..."), __import__
        found.update(n for n in names if n in MODULES and n != module)
    return found


GRAPH = {module: imports_of(module) for module in MODULES}


def circles() -> list[list[str]]:
    """The graph's strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in GRAPH[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while (w := stack.pop()) != v:
                component.append(w)
            if component:
                found.append(sorted([v, *component]))

    for module in GRAPH:
        if module not in index:
            visit(module)
    return found


def test_the_graph_is_read_whole():
    # the scan sees the imports it must: a check that the checks below can fail
    assert "autograd_course.kernel.wire" in GRAPH["autograd_course.grading.boundary.judge"] \
        or any("autograd_course.kernel.wire" in GRAPH[m] for m in GRAPH if area(m) == "boundary")
    assert "autograd_course.grading.runner" in GRAPH["autograd_course.cli"]
    assert len(MODULES) > 60


def test_every_import_of_the_package_names_a_module_that_is_there():
    # a relative import left behind by a move fails only when its line runs
    unknown = {}
    for module in MODULES:
        imports_of(module, found := [])
        if found:
            unknown[module] = found
    assert unknown == {}


def test_there_is_no_import_circle():
    assert circles() == []


def named_in_strings(module: str) -> set[str]:
    """The package's modules that a string of ``module`` names as a word (what importlib
    could be handed at run time, beyond the literal calls :func:`imports_of` sees)."""
    words = {word.strip("'\"`()[],.:") for node in ast.walk(ast.parse(MODULES[module].read_text()))
             if isinstance(node, ast.Constant) and isinstance(node.value, str)
             for word in node.value.split()}
    return {w for w in words if w in MODULES and w != module}


def mounted_violations(mounted: set[str]) -> dict[str, list[str]]:
    """For each of the ``mounted`` modules, the package's modules it reaches that are not."""
    found = {m: sorted((GRAPH[m] | named_in_strings(m)) - mounted - {"autograd_course"})
             for m in mounted}
    return {m: reached for m, reached in found.items() if reached}


def test_kernel_modules_import_only_kernel_modules():
    # the kernel side is what the sandbox mounts of the package, and all of kernel/
    mounted = {m for m, path in MODULES.items()
               if any(path == PACKAGE / name or PACKAGE / name in path.parents
                      for name in sandbox.PACKAGE_MOUNTS)}
    assert mounted == {m for m in MODULES if area(m) == "kernel"} | {"autograd_course"}
    assert mounted_violations(mounted) == {}
    # the check finds a grader module reached from a module that were mounted
    assert "autograd_course.grading.runner" in mounted_violations(
        mounted | {"autograd_course.cli"})["autograd_course.cli"]


def test_lab_and_grading_never_import_each_other():
    grader = {"grading", "boundary"}
    crossing = sorted(f"{m} -> {i}" for m in GRAPH for i in GRAPH[m]
                      if (area(m) == "lab" and area(i) in grader)
                      or (area(m) in grader and area(i) == "lab"))
    assert crossing == []


def test_the_testkit_is_imported_by_no_part_a_learner_or_kernel_runs():
    users = sorted(f"{m} -> {i}" for m in GRAPH for i in GRAPH[m]
                   if area(i) == "testkit" and area(m) in ("kernel", "lab", "grading", "boundary"))
    assert users == []


PROBE = r"""
import importlib, importlib.abc, json, pkgutil, sys
FORBIDDEN = tuple(json.loads(sys.argv[1]))
reached = []

class Refuse(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.startswith(FORBIDDEN):
            reached.append(name)
            raise ModuleNotFoundError(f"{name} is not there in a graded kernel")
        return None

sys.meta_path.insert(0, Refuse())
import autograd_course.kernel as kernel
failed = {}
names = [m.name for m in pkgutil.walk_packages(kernel.__path__, "autograd_course.kernel.")]
for name in names:
    try:
        importlib.import_module(name)
    except Exception as exc:
        failed[name] = f"{type(exc).__name__}: {exc}"
print(json.dumps({"imported": names, "reached": reached, "failed": failed}))
"""


def test_every_kernel_module_imports_with_the_rest_of_the_package_gone():
    # as in the sandbox: grading/, lab/ and testkit/ cannot be imported
    forbidden = [f"{name}." for name in ABOVE_KERNEL] + list(ABOVE_KERNEL)
    done = subprocess.run([sys.executable, "-c", PROBE, json.dumps(forbidden)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.splitlines()[-1])
    assert {"autograd_course.kernel.checks", "autograd_course.kernel.agent",
            "autograd_course.kernel.zygote", "autograd_course.kernel.hints"
            } <= set(report["imported"])
    assert report["reached"] == [] and report["failed"] == {}, report


def test_the_authors_map_names_every_module_and_no_other():
    # docs/authoring.md's "Where things are": the tree a newcomer reads must not drift
    docs = (PACKAGE.parent / "docs" / "authoring.md").read_text()
    tree = docs.split("## Where things are", 1)[1].split("```", 2)[1]
    tree = tree.split("\nnotebooks/", 1)[0]  # the package's part (the repository's follows)
    files = {p.name for p in PACKAGE.rglob("*.py")
             if not re.fullmatch(r"u\d\d_\w+\.py", p.name)}  # per-unit data: uNN_name.py
    words = set(re.findall(r"\w+", tree))  # a package's modules may be named without .py
    assert {f for f in files if f[:-3] not in words} == set(), "modules the tree does not name"
    assert set(re.findall(r"\w+\.py", tree)) - files - {"uNN_name.py"} == set(), "no module"
    for folder in ("kernel/", "lab/", "grading/", "boundary/", "checks/", "hints/",
                   "preprocessors/", "units/", "testkit/"):
        assert folder in tree, folder


def test_kernel_holds_only_modules_and_their_compiled_files():
    # the sandbox mounts kernel/ whole: a data file, or a compiled file whose module moved out,
    # would be there for students to read (marshal gives back a .pyc's constants)
    kernel = PACKAGE / "kernel"
    stray = []
    for path in kernel.rglob("*"):
        if path.is_dir():
            if path.name != "__pycache__" and not (path / "__init__.py").is_file():
                stray.append(path)
        elif path.parent.name == "__pycache__":
            if path.suffix != ".pyc" or not (path.parent.parent
                                             / f"{path.name.split('.')[0]}.py").is_file():
                stray.append(path)
        elif path.suffix != ".py":
            stray.append(path)
    assert [str(p.relative_to(PACKAGE)) for p in stray] == []
