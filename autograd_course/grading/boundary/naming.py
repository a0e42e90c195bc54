"""What a name in a kernel's reply may mean to the judge: fixed tables, never a lookup.

A student's exception arrives as a class made here from the judge's own builtins
(:data:`BUILTIN_ERRORS`) and :class:`StudentError`; a module the kernel names is the judge's own
only when the judge already holds it (:func:`_held_module`), else the caller's inert handle.
Nothing here imports, or looks up a name the kernel chose but in these tables and ``sys.modules``.
"""

from __future__ import annotations

import builtins
import functools
import re
import types

from autograd_course.kernel.checks import StudentError

#: Exceptions of the student's code that do not arrive as their own type: those that steer the
#: interpreter rather than report an error.
NOT_AS_THEMSELVES = frozenset({"BaseException", "Exception", "SystemExit", "KeyboardInterrupt",
                               "GeneratorExit", "StopIteration", "StopAsyncIteration"})


#: The builtin exception types a student's exception may arrive as, by name: a fixed table of
#: the judge's own builtins, the only place a type name the kernel sends is looked up.
BUILTIN_ERRORS: dict[str, type[Exception]] = {
    name: value for name, value in vars(builtins).items()
    if isinstance(value, type) and issubclass(value, Exception) and name not in NOT_AS_THEMSELVES
}


@functools.cache
def _error_class_of(name: str) -> type[StudentError]:
    try:
        return type(name, (StudentError, BUILTIN_ERRORS[name]), {"__module__": __name__})
    except TypeError:  # a layout the two cannot share (OSError's, UnicodeError's)
        return StudentError


def _error_class(name: str) -> type[StudentError]:
    """The judge's class for a student's exception of the builtin type ``name``: it is that
    type and a :class:`StudentError` (made here from :data:`BUILTIN_ERRORS`, never from
    anything the kernel sends), or :class:`StudentError` alone for any other name."""
    return _error_class_of(name) if name in BUILTIN_ERRORS else StudentError


def _text(value, default: str, limit: int) -> str:
    """A string field of a reply, cut to ``limit``; ``default`` for anything but a string."""
    return value[:limit] if isinstance(value, str) else default


def student_error(label: str, raised: dict) -> StudentError:
    """A student's exception as the judge raises it: as the most specific builtin type it
    derives from (so that ``except ValueError:`` catches it, as in nbgrader), and a
    StudentError. Names are only strings here: what they name is looked up in
    :data:`BUILTIN_ERRORS` alone."""
    type_name = _text(raised.get("type"), "Exception", 100)
    bases = raised.get("builtins")
    first = _text(bases[0], "", 100) if isinstance(bases, list) and bases else type_name
    message = _text(raised.get("message"), "", 2000)
    try:
        return _error_class(first)(label, type_name, message)
    except TypeError:  # a builtin whose constructor takes other arguments (UnicodeDecodeError)
        return StudentError(label, type_name, message)


_MODULE_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]*(\.[A-Za-z][A-Za-z0-9_]*)*")


def _held_module(name: str) -> types.ModuleType | None:
    """The module the judge already holds under ``name`` (a module the student's kernel
    imported, as a test reads it, as in nbgrader), else None: the kernel's becomes an inert
    :class:`~autograd_course.kernel.wire.Handle`. Never an import: only ``sys.modules`` is
    read, for a public dotted name (no ``__main__``, no private module) whose module says it
    is that name."""
    import sys

    if len(name) > 200 or not _MODULE_NAME.fullmatch(name) or name.startswith("autograd_course"):
        return None  # the course's own modules (the grader's among them) are never handed out
    module = sys.modules.get(name)
    if not isinstance(module, types.ModuleType) or vars(module).get("__name__") != name:
        return None
    return module
