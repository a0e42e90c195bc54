"""The part of the grader that runs inside the student's kernel.

The grader inserts a first cell that calls :func:`install` before any student code runs,
a cell that calls :func:`reset` before every test cell, and a cell that calls
:func:`canary` after it. ``install`` captures the original comparison functions, the
course's check helpers and the IPython hooks that decide how cells run and how errors are
reported; ``reset`` puts every one of them back and prints which ones the student's code
had changed; ``canary`` must fail, and the grader checks outside the kernel that it did.

Everything here can be undone by code that reads it and knows what to do, which is why
the grader also scans the student's code outside the kernel (:mod:`.scan`) and checks the
canaries' outcomes: see the threat model in the README's instructor section.
"""

from __future__ import annotations

import builtins
import importlib
import json
import sys

# (module, dotted attribute) pairs whose objects tests rely on.
PROTECTED = {
    "torch": [
        "allclose",
        "equal",
        "isclose",
        "testing.assert_close",
        "is_tensor",
        "no_grad",
        "Tensor.allclose",
        "Tensor.equal",
        "Tensor.backward",
        "Tensor.__eq__",
        "autograd.backward",
        "autograd.grad",
    ],
    "numpy": [
        "allclose",
        "isclose",
        "array_equal",
        "testing.assert_allclose",
        "testing.assert_array_equal",
        "testing.assert_array_almost_equal",
    ],
    "math": ["isclose"],
    "builtins": [
        "isinstance",
        "abs",
        "len",
        "print",
        "AssertionError",
        "all",
        "any",
        "type",
        "float",
        "int",
        "getattr",
        "hasattr",
        "repr",
        "str",
        "__import__",
    ],
    # every name of the course's check helpers, private ones too: the checks compare through
    # private references (_allclose, _close, _fail...) captured when they were imported
    "autograd_course.checks": None,
}
# Attributes of the IPython shell that decide how a cell runs and how its errors are shown.
SHELL_ATTRIBUTES = [
    "run_cell",
    "run_cell_async",
    "run_ast_nodes",
    "run_code",
    "showtraceback",
    "showsyntaxerror",
    "_showtraceback",
    "CustomTB",
    "transform_cell",
    "transform_ast",
    "should_run_async",
    "ex",
    "ev",
    "safe_execfile",
]
KERNEL_ATTRIBUTES = ["do_execute", "execute_request", "send_response"]
SHELL_LISTS = ["input_transformers_post", "ast_transformers", "custom_exceptions"]
TRANSFORMER_LISTS = ["cleanup_transforms", "line_transforms", "token_transformers"]

# Only these libraries may add event callbacks (matplotlib's inline backend adds one when
# pyplot is imported), and only from their installed files.
EVENT_LIBRARIES = {"matplotlib_inline", "matplotlib", "ipywidgets", "IPython", "ipykernel",
                   "comm", "traitlets"}

_captured: dict[str, tuple[object, str, object]] = {}
_shell_state: dict[str, object] = {}
_user_names: dict[str, object] = {}


_MISSING = object()


def _current(owner: object, name: str) -> object:
    """What ``owner.name`` is now; for a class, only what the class itself defines."""
    if isinstance(owner, type):
        return owner.__dict__.get(name, _MISSING)
    return getattr(owner, name, _MISSING)


def _resolve(root: object, dotted: str) -> tuple[object, str]:
    owner = root
    *path, name = dotted.split(".")
    for part in path:
        owner = getattr(owner, part)
    return owner, name


def _shell():
    try:
        from IPython import get_ipython
    except ImportError:  # not in IPython: nothing to protect
        return None
    return get_ipython()


def install() -> None:
    """Capture every protected object; call before any student code runs."""
    for module_name, attributes in PROTECTED.items():
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue
        if attributes is None:
            attributes = [n for n in vars(module) if not n.startswith("__")]
        for dotted in attributes:
            try:
                owner, name = _resolve(module, dotted)
                _captured[f"{module_name}.{dotted}"] = (owner, name, _current(owner, name))
            except AttributeError:
                continue
    # Names the tests look up in the notebook's namespace: the check helpers and the modules.
    for key, (_owner, name, original) in _captured.items():
        if key.startswith("autograd_course.checks."):
            _user_names[name] = original
    for alias, module_name in (("torch", "torch"), ("np", "numpy"), ("numpy", "numpy")):
        if module_name in sys.modules:
            _user_names[alias] = sys.modules[module_name]
    shell = _shell()
    if shell is not None:
        for name in SHELL_ATTRIBUTES:
            if name in shell.__dict__:
                _shell_state[name] = shell.__dict__[name]
        for name in SHELL_LISTS:
            _shell_state[name] = list(getattr(shell, name, ()) or ())
        manager = getattr(shell, "input_transformer_manager", None)
        _shell_state["input_transformer_manager"] = manager
        for name in TRANSFORMER_LISTS:
            _shell_state[f"manager.{name}"] = list(getattr(manager, name, ()) or ())
        for name in SHELL_ATTRIBUTES:  # the methods of the shell's class, and the kernel's
            if hasattr(type(shell), name):
                _captured[f"IPython shell class.{name}"] = (
                    type(shell),
                    name,
                    _current(type(shell), name),
                )
        kernel = getattr(shell, "kernel", None)
        for name in KERNEL_ATTRIBUTES:
            if kernel is not None and hasattr(type(kernel), name):
                _captured[f"ipykernel kernel class.{name}"] = (
                    type(kernel),
                    name,
                    _current(type(kernel), name),
                )
                _shell_state[f"kernel.{name}"] = kernel.__dict__.get(name)
        _shell_state["events"] = {k: list(v) for k, v in shell.events.callbacks.items()}
        _shell_state["custom_exceptions"] = shell.custom_exceptions
        _shell_state["CustomTB"] = shell.__dict__.get("CustomTB")


def reset(token: str) -> list[str]:
    """Restore every protected object and print ``token:reset:<names that were changed>``."""
    changed: list[str] = []
    for key, (owner, name, original) in _captured.items():
        if _current(owner, name) is not original:
            changed.append(key)
            if original is _MISSING:
                delattr(owner, name)
            else:
                setattr(owner, name, original)
    shell = _shell()
    if shell is not None:
        for name in SHELL_ATTRIBUTES:
            if shell.__dict__.get(name) is not _shell_state.get(name):
                changed.append(f"IPython shell.{name}")
                if name in _shell_state:
                    shell.__dict__[name] = _shell_state[name]
                else:
                    shell.__dict__.pop(name, None)
        for name in ("input_transformers_post", "ast_transformers"):
            if list(getattr(shell, name)) != _shell_state[name]:
                changed.append(f"IPython shell.{name}")
                setattr(shell, name, list(_shell_state[name]))
        if shell.input_transformer_manager is not _shell_state["input_transformer_manager"]:
            changed.append("IPython shell.input_transformer_manager")
            shell.input_transformer_manager = _shell_state["input_transformer_manager"]
        manager = shell.input_transformer_manager
        for name in TRANSFORMER_LISTS:
            if list(getattr(manager, name, ())) != _shell_state[f"manager.{name}"]:
                changed.append(f"IPython input_transformer_manager.{name}")
                setattr(manager, name, list(_shell_state[f"manager.{name}"]))
        kernel = getattr(shell, "kernel", None)
        for name in KERNEL_ATTRIBUTES:
            if kernel is not None and kernel.__dict__.get(name) is not _shell_state.get(
                f"kernel.{name}"
            ):
                changed.append(f"ipykernel kernel.{name}")
                kernel.__dict__.pop(name, None)
        for key in shell.events.callbacks:
            _shell_state["events"].setdefault(key, [])
            kept = _reconcile(list(shell.events.callbacks[key]), _shell_state["events"], key)
            if kept is not None:
                changed.append(f"IPython shell.events[{key!r}]")
                shell.events.callbacks[key] = kept
        if shell.custom_exceptions != _shell_state["custom_exceptions"]:
            changed.append("IPython shell.set_custom_exc")
            shell.set_custom_exc((), None)
        for user_name, original in _user_names.items():
            if user_name in shell.user_ns and shell.user_ns[user_name] is not original:
                changed.append(f"name '{user_name}'")
                shell.user_ns[user_name] = original
    builtins.print(f"{token}:reset:{json.dumps(sorted(set(changed)))}")
    return changed


def _from_library(hook: object) -> bool:
    """Whether an event callback comes from an installed library of :data:`EVENT_LIBRARIES`."""
    import os
    import site

    function = getattr(hook, "__func__", None) or getattr(hook, "func", None) or hook
    module_name = getattr(function, "__module__", None) or ""
    module = sys.modules.get(module_name)
    filename = os.path.realpath(getattr(module, "__file__", "") or "")
    installed = [os.path.realpath(p) for p in site.getsitepackages()]
    return (module_name.split(".")[0] in EVENT_LIBRARIES
            and any(filename.startswith(p + os.sep) for p in installed))


def _reconcile(current: list, state: dict, key: str) -> list | None:
    """Compare a hook list with its baseline in ``state[key]``.

    Callbacks that known libraries add from their installed files (matplotlib's inline backend
    registers one when pyplot is imported) join the baseline. If anything else was added, or
    a callback of the baseline was removed, return the list to restore (baseline plus the
    libraries' callbacks); otherwise None.
    """
    baseline = state[key]
    added = [hook for hook in current if not any(hook is b or hook == b for b in baseline)]
    removed = [b for b in baseline if not any(b is hook or b == hook for hook in current)]
    from_libraries = [hook for hook in added if _from_library(hook)]
    state[key] = baseline + from_libraries
    if removed or len(from_libraries) != len(added):
        return list(state[key])
    return None


def canary(token: str) -> None:
    """Fail on purpose; the grader checks outside the kernel that this failure was reported."""
    raise AssertionError(token)
