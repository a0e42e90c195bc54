"""A visible test cell's error in the learner's notebook: one red line for "not answered".

In an IPython kernel, ``_short_errors_in_test_cells`` installs a handler of NameError and
NotImplementedError (the package does so once, when it is imported): a visible test cell that
meets the blank stub or a name its answer cell never defined shows :class:`NotAnswered` as one
line; one whose call of the learner's function meets a name that function uses but no cell
run so far defined (a cell the notebook asks to run, skipped) shows that NameError as one line,
with the function and its line, and the two ways out. Every other error, and every error of
the learner's own cells, keeps its traceback.

A failed check's message, and this one line, are shown broken at spaces into lines of
:data:`~..wrapping.WIDTH` columns (:func:`~..wrapping.wrapped`): JupyterLab breaks a longer line
of an error anywhere, mid-word.
"""

from __future__ import annotations

from collections.abc import Mapping

from autograd_course.kernel.checks.errors import (
    NotAnswered,
    _is_the_stub,
    _not_defined,
    _not_implemented,
    _red_line,
)

#: Every visible test cell calls it: how a kernel tells a test cell from the learner's own.
_TEST_CELL_MARK = "visible_checks_passed("


def _cell_source(tb) -> tuple[str, str]:
    """The file name and the source of the notebook cell a traceback runs through (its first
    ``<module>`` frame), or ("", "")."""
    import linecache

    while tb is not None:
        code = tb.tb_frame.f_code
        if code.co_name == "<module>":
            return code.co_filename, "".join(linecache.getlines(code.co_filename))
        tb = tb.tb_next
    return "", ""


class _UndefinedInFunction:
    """A NameError met in the learner's own function, called by a visible test cell: shown as
    one line (:meth:`_render_traceback_`), like a failed check."""

    def __init__(self, name: str | None, function: str, line: int, cell: str):
        what = f"name {name!r}" if name else "a name"
        self.message = (f"{what} is not defined, in {function} (line {line} of {cell}): run "
                        "the cell above that defines it (one the notebook asks you to run, "
                        "say), or every cell above: Run ▸ Run All Above Selected Cell. If no "
                        "cell defines it, check its spelling.")

    def _render_traceback_(self) -> list[str]:
        return [_red_line("NameError", self.message)]


def _unanswered_in_test_cell(value, tb, cells: Mapping[str, object] | None = None
                             ) -> NotAnswered | _UndefinedInFunction | None:
    """The one-line error for an exception of a visible test cell that means "this question
    cannot run yet", else None: the blank stub's NotImplementedError (at any depth), a
    NameError raised by the test cell's own code (a name its answer cell defines, never run),
    or a NameError raised in the learner's own function, a notebook cell's code (``cells``:
    the file names of the cells run so far, to their execution counts), for a name that
    function uses and no cell run so far defines (a skipped cell, or a misspelt name: the
    line names both). Every error of the learner's own cells keeps its traceback."""
    filename, source = _cell_source(tb)
    if _TEST_CELL_MARK not in source:
        return None
    last = tb
    while last.tb_next is not None:
        last = last.tb_next
    raiser = last.tb_frame.f_code
    if _is_the_stub(value):
        return _not_implemented(f"{raiser.co_name}(...)" if raiser.co_name.isidentifier()
                                else "your answer")
    if isinstance(value, NameError) and raiser.co_filename == filename:
        return _not_defined(getattr(value, "name", None))
    if isinstance(value, NameError) and raiser.co_filename in (cells or {}):
        function = (f"your function {raiser.co_name}" if raiser.co_name.isidentifier()
                    else "your code")
        count = cells[raiser.co_filename]
        cell = f"your cell [{count}]" if isinstance(count, int) else "its cell"
        return _UndefinedInFunction(getattr(value, "name", None), function,
                                    last.tb_lineno, cell)
    return None


def _show_error(shell, etype, value, tb, tb_offset=None):
    """IPython's handler of NameError and NotImplementedError (see
    :func:`_short_errors_in_test_cells`): one line for an unanswered question in a visible test
    cell, IPython's own traceback for everything else."""
    try:
        # the cells run so far, by file name (IPython's compiler keeps their execution counts)
        cells = getattr(getattr(shell, "compile", None), "_filename_map", None) or {}
        short = _unanswered_in_test_cell(value, tb, cells)
    except Exception:  # noqa: BLE001 - never let the course's handler hide the error
        short = None
    if short is None:
        shell.showtraceback((etype, value, tb), tb_offset=tb_offset, running_compiled_code=True)
        return None
    stb = short._render_traceback_()
    import sys

    sys.last_type, sys.last_value, sys.last_traceback = etype, value, tb
    shell._showtraceback(etype, value, stb)
    return stb


def _short_errors_in_test_cells() -> None:
    """In an IPython kernel (JupyterLab, ``nbgrader validate``), show the NameError or
    NotImplementedError of a question not answered yet as one line when a visible test cell
    meets it, as a failed check is shown, not as a traceback through the test's code. Done
    once, when the checks package is imported; a custom handler someone else set is left alone."""
    import sys

    if "IPython" not in sys.modules:  # not a kernel; and importing IPython costs time
        return
    shell = sys.modules["IPython"].get_ipython()
    if shell is None or not hasattr(shell, "set_custom_exc"):
        return
    if shell.custom_exceptions and not getattr(shell, "_autograd_course_errors", False):
        return
    shell.set_custom_exc((NameError, NotImplementedError), _show_error)
    shell._autograd_course_errors = True
