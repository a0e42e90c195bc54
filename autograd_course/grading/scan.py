"""Read a student's code outside the kernel and flag what reaches beyond the student's answer.

A hint for a reviewer, never a defence and never a penalty: a finding marks the question for a
person to look at (formgrader shows it as needing a manual grade) and keeps the points the
judge gave (:mod:`.boundary.judge`). What is flagged, with examples, and why:
docs/design.md#autograd_coursegradingscanpy. Rules:

- it reads the cells a student can edit, never the locked cells the grader restores;
- flagged: replacing or deleting attributes of libraries and of the course package, or
  rebinding the names the tests use; reading the interpreter's internals to find other code's
  values; hooking into how results are shown or judged; acting outside the notebook (signals,
  databases, paths that leave the working folder, code built at run time);
- honest notebooks are not flagged: displaying, plotting, magics such as ``%matplotlib``,
  ``%pip`` and ``!ls``, importing ``gc`` or ``inspect`` for ordinary use;
- what a question's prompt forbids is flagged in that question's answer cell only: the course
  marks the solution cell (``"autograd_course": {"forbids": ["autograd"]}`` in its metadata,
  which nbgrader keeps in release/), and :func:`forbidden` reads the marks from the course's
  notebook, never from the submission. ``"autograd"`` (:data:`FORBIDDABLE`): a backward asked
  for by hand, which the tests call with autograd off; switching it back on or differentiating
  with it (``enable_grad``, ``.backward()``, ``torch.autograd``, ``torch.func``, a ``Function``
  of the answer's own, ``requires_grad_``) can still give right values, which no value check
  tells apart. A method of the answer's own named ``backward`` is flagged too: the reviewer
  tells.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

# Modules whose attributes tests rely on: assigning or deleting any of them is flagged.
LIBRARIES = {"torch", "np", "numpy", "math", "sys", "builtins", "__builtins__", "IPython",
             "ipykernel", "autograd_course", "checks", "unittest", "pytest", "nn", "F", "optim"}
SETTINGS = ("torch.backends.",)  # library settings a student may change
INTERNAL_IMPORTS = ("ctypes", "autograd_course.grading", "autograd_course.kernel.agent",
                    "autograd_course.kernel.wire", "autograd_course.testkit", "IPython.core",
                    "ipykernel", "traitlets", "zmq", "jupyter_client", "sqlite3",
                    "torch.overrides", "torch.utils._python_dispatch",
                    # the lessons' own tools, which some questions ask the student to write
                    "autograd_course.lab.cost", "autograd_course.lab.engine_pictures",
                    "autograd_course.lab.training")
# Calls that read other code's frames and objects, or act on other processes: unambiguous
# names, and names that are only suspicious with their module (torch.stack is not inspect's).
INTROSPECTION_CALLS = {"_getframe", "currentframe", "getouterframes", "getinnerframes",
                       "get_referrers", "get_referents", "get_objects", "settrace", "setprofile",
                       "killpg", "inspect.stack", "sys.displayhook", "sys.excepthook", "os.kill",
                       "signal.pthread_kill", "getclosurevars", "getsource", "getsourcelines"}
INTROSPECTION_ATTRIBUTES = {"__code__", "__globals__", "__closure__", "cell_contents",
                            "co_freevars", "co_consts", "f_globals", "f_locals",
                            "f_back", "__subclasses__", "__torch_function__",
                            "__torch_dispatch__", "__stdout__", "__stderr__", "display_pub",
                            "displayhook", "events", "input_transformers_post",
                            "input_transformers_cleanup", "ast_transformers", "set_custom_exc"}
HISTORY_NAMES = {"In", "Out", "_ih", "_oh", "_i", "_ii", "_iii", "__builtins__"}
DYNAMIC_CALLS = {"exec", "eval", "compile", "__import__", "breakpoint"}
ATTRIBUTE_CALLS = {"setattr", "delattr"}
#: What a question's prompt may forbid in its answer (the names a solution cell's
#: ``metadata["autograd_course"]["forbids"]`` may list), and what that covers.
FORBIDDABLE = {"autograd": "autograd (a backward asked for by hand)"}
#: Attributes (anywhere in a chain: ``torch.enable_grad``, ``loss.backward``) whose use records,
#: differentiates or switches autograd back on; the bare names among them are what
#: ``from torch import ...`` binds. ``torch.func`` is found by its module.
AUTOGRAD_ATTRIBUTES = {"enable_grad", "set_grad_enabled", "_set_grad_enabled", "backward",
                       "requires_grad_", "autograd", "Parameter"}
AUTOGRAD_NAMES = {"enable_grad", "set_grad_enabled", "_set_grad_enabled", "autograd",
                  "functorch"}
AUTOGRAD_MODULES = ("torch.autograd", "torch.func", "functorch")
#: The longest cell the scan reads, in characters; a longer one is a finding itself.
MAX_SOURCE = 200_000
#: What a cell the scan cannot read (Python's parser or the scan's own recursion gives up).
TOO_DEEP = "code nested too deeply to be read by the scan"


@dataclass(frozen=True)
class Finding:
    """One construct for a reviewer to look at: where it is and what it does."""

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
    return ast.unparse(node)


def _to_python(source: str) -> str:
    """Turn IPython syntax (magics, shell escapes) into Python, as the kernel would."""
    from IPython.core.inputtransformer2 import TransformerManager

    try:
        return TransformerManager().transform_cell(source)
    except Exception:  # noqa: BLE001 - a cell IPython cannot read either
        return source


def _leaves_folder(path: str) -> bool:
    return path.startswith(("/", "~")) or ".." in path.replace("\\", "/").split("/")


class _Visitor(ast.NodeVisitor):
    def __init__(self, cell: str, protected_names: dict[str, str],
                 forbids: tuple[str, ...] = ()):
        self.cell = cell
        self.protected_names = protected_names
        self.forbids = forbids
        self.aliases: dict[str, str] = {}
        self.findings: list[Finding] = []

    def flag(self, node: ast.AST, what: str) -> None:
        self.findings.append(Finding(self.cell, getattr(node, "lineno", 0), what))

    def _check_target(self, target: ast.AST, verb: str) -> None:
        if isinstance(target, ast.Tuple | ast.List):
            for element in target.elts:
                self._check_target(element, verb)
        elif isinstance(target, ast.Attribute | ast.Subscript):
            if _dotted(target).startswith(SETTINGS):
                return
            if self._library_root(target) or (
                    isinstance(target, ast.Attribute) and target.attr == "__code__"):
                self.flag(target, f"{verb} {_dotted(target)}")
        elif isinstance(target, ast.Name) and target.id in self.protected_names:
            self.flag(target, f"rebinds the name '{target.id}' that the tests use")

    def _library_root(self, target: ast.AST) -> bool:
        """Whether ``target`` is reached from a library: by its name, or through a name the
        cell bound to one (``import torch.func as t``, ``F = torch.autograd.Function``)."""
        root = _root_name(target)
        return root is not None and self.aliases.get(root, root).split(".")[0] in LIBRARIES

    def visit_Assign(self, node: ast.Assign) -> None:
        for target in node.targets:
            self._check_target(target, "replaces")
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self._check_target(node.target, "modifies")
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
        if node.name in ("__torch_function__", "__torch_dispatch__"):
            self.flag(node, f"defines {node.name} (overrides how torch functions answer)")
        self.generic_visit(node)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self._check_definition(node)
        self.generic_visit(node)

    def _check_import(self, node, module: str) -> None:
        if any(module == m or module.startswith(m + ".") for m in INTERNAL_IMPORTS):
            self.flag(node, f"imports {module}")

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._check_import(node, alias.name)
            bound = alias.asname or alias.name.split(".")[0]
            if bound in self.protected_names and self.protected_names[bound] != alias.name:
                self.flag(node, f"rebinds the name '{bound}' that the tests use")

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = node.module or ""
        self._check_import(node, module)
        for alias in node.names:
            full = f"{module}.{alias.name}"
            self._check_import(node, full)
            bound = alias.asname or alias.name
            if bound in self.protected_names and self.protected_names[bound] != full:
                self.flag(node, f"rebinds the name '{bound}' that the tests use")

    def visit_Name(self, node: ast.Name) -> None:
        if node.id in HISTORY_NAMES and isinstance(node.ctx, ast.Load):
            self.flag(node, f"reads {node.id} (the notebook's input history or builtins)")

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if node.attr in INTROSPECTION_ATTRIBUTES:
            self.flag(node, f"reaches into {_dotted(node)}")
        elif _dotted(node) == "sys.modules":
            self.flag(node, "reaches into sys.modules (loaded modules, by name)")
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        name = func.id if isinstance(func, ast.Name) else (
            func.attr if isinstance(func, ast.Attribute) else "")
        if isinstance(func, ast.Name) and name in DYNAMIC_CALLS:
            self.flag(node, f"runs code built at run time ({name})")
        elif name in ("import_module", "reload"):
            self.flag(node, f"imports a module by name at run time ({_dotted(func)})")
        elif isinstance(func, ast.Name) and name in ATTRIBUTE_CALLS and node.args:
            self.flag(node, f"{name} on {_dotted(node.args[0])}")
        elif isinstance(func, ast.Attribute) and (
                name in INTROSPECTION_CALLS or _dotted(func) in INTROSPECTION_CALLS):
            self.flag(node, f"calls {_dotted(func)}")
        elif name == "open" and node.args and isinstance(node.args[0], ast.Constant) and (
                isinstance(node.args[0].value, str) and _leaves_folder(node.args[0].value)):
            self.flag(node, f"opens {node.args[0].value!r}, outside the working folder")
        if isinstance(func, ast.Attribute) and func.attr == "run_cell_magic" and len(
                node.args) > 2 and isinstance(node.args[2], ast.Constant):
            body = node.args[2].value  # a cell magic's body is code too (%%time, %%capture)
            if isinstance(body, str):
                self.findings.extend(scan_source(body, self.cell, self.protected_names,
                                                 self.forbids))
        self.generic_visit(node)


def _snippet(node: ast.AST) -> str:
    if isinstance(node, ast.ClassDef):
        return f"class {node.name}({', '.join(_dotted(b) for b in node.bases)})"
    text = _dotted(node).splitlines()[0]
    return text if len(text) <= 80 else text[:79] + "…"


def _chain_uses_autograd(node: ast.Attribute, aliases: dict[str, str]) -> bool:
    """Whether an attribute chain (``torch.autograd.grad``, ``x.requires_grad_``, ``T.func``
    where ``T = torch``) names one."""
    while isinstance(node, ast.Attribute):
        if node.attr in AUTOGRAD_ATTRIBUTES or (
                node.attr == "func" and isinstance(node.value, ast.Name)
                and aliases.get(node.value.id, node.value.id) == "torch"):
            return True
        node = node.value
    return isinstance(node, ast.Name) and (
        node.id in AUTOGRAD_NAMES or _in_autograd(aliases.get(node.id, "")))


def _in_autograd(dotted: str) -> bool:
    return any(dotted == m or dotted.startswith(m + ".") for m in AUTOGRAD_MODULES)


def _imports_autograd(node: ast.Import | ast.ImportFrom) -> bool:
    if isinstance(node, ast.Import):
        modules = [alias.name for alias in node.names]
    else:
        module = node.module or ""
        modules = [module] + [f"{module}.{alias.name}" for alias in node.names]
        if module.startswith("torch") and any(
                alias.name in AUTOGRAD_ATTRIBUTES | AUTOGRAD_NAMES | {"func"}
                for alias in node.names):
            return True
    return any(m == a or m.startswith(a + ".") for m in modules for a in AUTOGRAD_MODULES)


def _uses_autograd(node: ast.AST, aliases: dict[str, str]) -> bool:
    """Whether this node records, differentiates or switches autograd back on."""
    if isinstance(node, ast.Attribute):
        return _chain_uses_autograd(node, aliases)
    if isinstance(node, ast.Name):
        return isinstance(node.ctx, ast.Load) and node.id in AUTOGRAD_NAMES
    if isinstance(node, ast.Import | ast.ImportFrom):
        return _imports_autograd(node)
    if isinstance(node, ast.ClassDef):  # a torch.autograd.Function of the answer's own
        return any(_dotted(base).split(".")[-1] == "Function" for base in node.bases)
    if isinstance(node, ast.keyword):  # torch.zeros(..., requires_grad=True)
        return node.arg == "requires_grad" and not (
            isinstance(node.value, ast.Constant) and not node.value.value)
    if isinstance(node, ast.Assign | ast.AugAssign):  # t.requires_grad = True
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        return any(isinstance(t, ast.Attribute) and t.attr == "requires_grad"
                   for t in targets)
    return False


def _autograd_findings(tree: ast.AST, cell: str, aliases: dict[str, str]) -> list[Finding]:
    """The uses of autograd in a cell whose question forbids it: one per line, the
    outermost construct (ast.walk visits a node before its parts)."""
    found: dict[int, Finding] = {}
    for node in ast.walk(tree):
        line = getattr(node, "lineno", None)
        if line is not None and line not in found and _uses_autograd(node, aliases):
            shown = (f"requires_grad={_dotted(node.value)}" if isinstance(node, ast.keyword)
                     else _snippet(node))
            found[line] = Finding(cell, line, "uses autograd, which this question's prompt "
                                  f"forbids: {shown}")
    return [found[line] for line in sorted(found)]


def forbidden(course) -> dict[str, tuple[str, ...]]:
    """What each question's prompt forbids in its answer, by the grade id of the answer
    (solution) cell: the names of :data:`FORBIDDABLE` that the cell's
    ``metadata["autograd_course"]["forbids"]`` lists. ``course`` is the course's own notebook
    (release/'s student version), never the submission, whose metadata the student writes;
    other names are left out (tests/test_flagged_answers.py holds the notebooks to known
    names)."""
    found = {}
    for cell in course.cells:
        meta = cell.get("metadata", {})
        ours, nbgrader = meta.get("autograd_course"), meta.get("nbgrader")
        if not (isinstance(ours, dict) and isinstance(nbgrader, dict)):
            continue
        names = ours.get("forbids", [])
        names = tuple(n for n in names if n in FORBIDDABLE) if isinstance(names, list) else ()
        if names and isinstance(nbgrader.get("grade_id"), str):
            found[nbgrader["grade_id"]] = names
    return found


def scan_source(source: str, cell: str, protected_names: dict[str, str] | None = None,
                forbids: tuple[str, ...] = ()) -> list[Finding]:
    """Return the findings in one cell's source (IPython syntax allowed).

    ``protected_names`` maps the names the tests use (bound by the locked cells) to what
    they were imported from; re-importing the same thing is fine, rebinding it is flagged.
    ``forbids``: what the question of this answer cell forbids (:func:`forbidden`), flagged too.
    """
    if len(source) > MAX_SOURCE:
        return [Finding(cell, 1, f"a cell of {len(source):,} characters, more than the scan "
                        f"reads ({MAX_SOURCE:,})")]
    try:
        tree = ast.parse(_to_python(source))
    except (SyntaxError, ValueError):
        return []  # code that does not parse does nothing; it fails on its own
    except (RecursionError, MemoryError):
        return [Finding(cell, 1, TOO_DEEP)]
    visitor = _Visitor(cell, dict(protected_names or {}), tuple(forbids))
    try:
        visitor.aliases = _aliases(tree)
        visitor.visit(tree)
        if "autograd" in forbids:
            visitor.findings += _autograd_findings(tree, cell, visitor.aliases)
    except (RecursionError, MemoryError):
        return [*visitor.findings, Finding(cell, 1, TOO_DEEP)]
    return visitor.findings


def _aliases(tree: ast.AST) -> dict[str, str]:
    """The names a cell binds to a library or to a part of one, each with the dotted name it
    stands for: by importing (``import torch.func as t``, ``from autograd_course import
    kernel``) or by assigning a dotted name that starts at a library (``F =
    torch.autograd.Function``), in the cell's order."""
    aliases: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            module = node.module or "" if isinstance(node, ast.ImportFrom) else ""
            for alias in node.names:
                full = f"{module}.{alias.name}" if module else alias.name
                aliases[alias.asname or alias.name.split(".")[0]] = (
                    full if alias.asname or module else alias.name.split(".")[0])
        elif (isinstance(node, ast.Assign) and len(node.targets) == 1
              and isinstance(node.targets[0], ast.Name)
              and isinstance(node.value, ast.Attribute | ast.Name)):
            root = _root_name(node.value)
            if root is not None:
                dotted = _dotted(node.value)
                aliases[node.targets[0].id] = aliases.get(root, root) + dotted[len(root):]
    return aliases


def imported_names(source: str) -> dict[str, str]:
    """Return the names a (locked) cell binds by importing, mapped to what they import."""
    try:
        tree = ast.parse(_to_python(source))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return {}
    names = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            module = node.module or "" if isinstance(node, ast.ImportFrom) else ""
            for alias in node.names:
                full = f"{module}.{alias.name}" if module else alias.name
                names[alias.asname or alias.name.split(".")[0]] = full
    return names
