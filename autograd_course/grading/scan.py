"""Read a student's code outside the kernel and name attempts to tamper with grading.

The scan looks at the cells a student can edit (solution cells and free cells), never at
the locked cells the grader restores. It is deliberately narrow, so that honest code is
not flagged: it reports code that replaces or deletes attributes of the modules the tests
rely on, rebinds the names of the course's check helpers, reaches into the IPython shell,
or runs code built at run time (``exec``/``eval``/``compile``/``__import__``).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

# Modules whose attributes tests rely on: assigning or deleting any of their attributes is
# tampering (``torch.allclose = ...``, ``del np.isclose``, ``sys.modules[...] = ...``).
PROTECTED_ROOTS = {
    "torch",
    "np",
    "numpy",
    "math",
    "sys",
    "builtins",
    "__builtins__",
    "IPython",
    "ipykernel",
    "autograd_course",
    "checks",
    "unittest",
    "pytest",
}
# Attributes of protected modules that are settings a student may change.
SETTINGS = ("torch.backends.",)
FORBIDDEN_IMPORTS = {
    "builtins",
    "IPython",
    "ipykernel",
    "ctypes",
    "gc",
    "importlib",
    "autograd_course.grading",
    "traitlets",
    "zmq",
    "jupyter_client",
}
DYNAMIC_CALLS = {"exec", "eval", "compile", "__import__", "globals", "vars", "breakpoint"}
ATTRIBUTE_CALLS = {"setattr", "delattr"}
# Magics that only change how a cell is shown or timed, or reload code: name -> the start
# its argument must have ("" for any).
HARMLESS_MAGICS = {"matplotlib": "", "time": "", "timeit": "", "capture": "", "precision": "",
                   "config": "InlineBackend", "load_ext": "autoreload", "autoreload": "",
                   "who": "", "whos": ""}


@dataclass(frozen=True)
class Finding:
    """One suspicious construct: where it is and what it does."""

    cell: str
    line: int
    what: str

    def __str__(self) -> str:
        return f"{self.cell}, line {self.line}: {self.what}"


def _root_name(node: ast.AST) -> str | None:
    while isinstance(node, ast.Attribute | ast.Subscript):
        node = node.value
    if isinstance(node, ast.Call):
        node = node.func
    return node.id if isinstance(node, ast.Name) else None


def _dotted(node: ast.AST) -> str:
    try:
        return ast.unparse(node)
    except Exception:  # pragma: no cover - unparse handles every node ast.parse gives
        return "?"


def _to_python(source: str) -> str:
    """Turn IPython syntax (magics, shell escapes) into Python, as the kernel would."""
    try:
        from IPython.core.inputtransformer2 import TransformerManager
    except ImportError:  # pragma: no cover - IPython is a dependency of the course
        return source
    try:
        return TransformerManager().transform_cell(source)
    except Exception:
        return source


class _Visitor(ast.NodeVisitor):
    def __init__(self, cell: str, protected_names: dict[str, str]):
        self.cell = cell
        self.protected_names = protected_names
        self.findings: list[Finding] = []

    def flag(self, node: ast.AST, what: str) -> None:
        self.findings.append(Finding(self.cell, getattr(node, "lineno", 0), what))

    def _check_target(self, target: ast.AST, verb: str) -> None:
        if isinstance(target, ast.Tuple | ast.List):
            for element in target.elts:
                self._check_target(element, verb)
            return
        if isinstance(target, ast.Attribute | ast.Subscript):
            if _dotted(target).startswith(SETTINGS):
                return  # library settings, such as torch.backends.cudnn.deterministic
            if _root_name(target) in PROTECTED_ROOTS:
                self.flag(target, f"{verb} {_dotted(target)}")
            elif _root_name(target) == "get_ipython":
                self.flag(target, f"{verb} {_dotted(target)} of the IPython shell")
        elif isinstance(target, ast.Name) and target.id in self.protected_names:
            self.flag(target, f"rebinds the name '{target.id}' that the tests use")

    def visit_Assign(self, node: ast.Assign) -> None:
        for target in node.targets:
            self._check_target(target, "replaces")
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self._check_target(node.target, "modifies")
        self.generic_visit(node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self._check_target(node.target, "replaces")
        self.generic_visit(node)

    def visit_Delete(self, node: ast.Delete) -> None:
        for target in node.targets:
            self._check_target(target, "deletes")
        self.generic_visit(node)

    def _check_definition(self, node) -> None:
        if node.name in self.protected_names:
            self.flag(node, f"redefines '{node.name}' that the tests use")

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        self._check_definition(node)
        self.generic_visit(node)

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> None:
        self._check_definition(node)
        self.generic_visit(node)

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self._check_definition(node)
        self.generic_visit(node)

    def _check_import(self, node, module: str, names: list[ast.alias]) -> None:
        for alias in names:
            full = f"{module}.{alias.name}" if module else alias.name
            if any(full == m or full.startswith(m + ".") for m in FORBIDDEN_IMPORTS):
                self.flag(node, f"imports {full}")
            bound = alias.asname or alias.name.split(".")[0]
            if bound in self.protected_names and self.protected_names[bound] != full:
                self.flag(node, f"rebinds the name '{bound}' that the tests use")

    def visit_Import(self, node: ast.Import) -> None:
        self._check_import(node, "", node.names)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = node.module or ""
        if any(module == m or module.startswith(m + ".") for m in FORBIDDEN_IMPORTS):
            self.flag(node, f"imports from {module}")
        else:
            self._check_import(node, module, node.names)

    def visit_Name(self, node: ast.Name) -> None:
        if node.id in {"__builtins__", "__loader__", "__spec__"}:
            self.flag(node, f"uses {node.id}")
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Name) and func.id in DYNAMIC_CALLS:
            self.flag(node, f"runs code built at run time ({func.id})")
        elif isinstance(func, ast.Name) and func.id in ATTRIBUTE_CALLS and node.args:
            if _root_name(node.args[0]) in PROTECTED_ROOTS | {"get_ipython"} | set(
                self.protected_names
            ):
                self.flag(node, f"{func.id} on {_dotted(node.args[0])}")
        elif isinstance(func, ast.Attribute) and _root_name(func) == "get_ipython":
            magic = (
                node.args[0].value if node.args and isinstance(node.args[0], ast.Constant) else ""
            )
            argument = (node.args[1].value if len(node.args) > 1
                        and isinstance(node.args[1], ast.Constant) else "")
            harmless = (func.attr in {"run_line_magic", "run_cell_magic"}
                        and magic in HARMLESS_MAGICS
                        and str(argument).strip().startswith(HARMLESS_MAGICS[magic]))
            if not harmless:
                self.flag(node, f"uses the IPython shell ({_dotted(func)})")
            body = node.args[2] if func.attr == "run_cell_magic" and len(node.args) > 2 else None
            if isinstance(body, ast.Constant) and isinstance(body.value, str):
                # a cell magic's body is code too (%%time, %%capture run it)
                self.findings.extend(scan_source(body.value, self.cell, self.protected_names))
            return
        elif isinstance(func, ast.Name) and func.id == "get_ipython":
            self.flag(node, "uses the IPython shell (get_ipython)")
        self.generic_visit(node)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if node.attr in {
            "__code__",
            "__globals__",
            "__dict__",
            "__closure__",
            "f_globals",
            "f_locals",
            "__subclasses__",
        }:
            self.flag(node, f"reaches into {node.attr}")
        self.generic_visit(node)


def scan_source(
    source: str, cell: str, protected_names: dict[str, str] | None = None
) -> list[Finding]:
    """Return the tampering findings in one cell's source (IPython syntax allowed).

    ``protected_names`` maps the names the tests use (bound by the locked cells) to what
    they were imported from; re-importing the same thing is fine, rebinding it is not.
    """
    try:
        tree = ast.parse(_to_python(source))
    except SyntaxError:
        return []  # code that does not parse cannot tamper; it fails on its own
    visitor = _Visitor(cell, dict(protected_names or {}))
    visitor.visit(tree)
    return visitor.findings


def imported_names(source: str) -> dict[str, str]:
    """Return the names a (locked) cell binds by importing, mapped to what they import."""
    try:
        tree = ast.parse(_to_python(source))
    except SyntaxError:
        return {}
    names = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            module = node.module or "" if isinstance(node, ast.ImportFrom) else ""
            for alias in node.names:
                full = f"{module}.{alias.name}" if module else alias.name
                names[alias.asname or alias.name.split(".")[0]] = full
    return names
