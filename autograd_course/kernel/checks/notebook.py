"""A visible test cell's error in the learner's notebook: one red line for "not answered".

In an IPython kernel, ``_short_errors_in_test_cells`` installs a handler of NameError and
NotImplementedError (the package does so once, when it is imported): a visible test cell that
meets the blank stub or a name its answer cell never defined shows :class:`NotAnswered` as one
line. Every other error, and every error of the learner's own cells, keeps its traceback.

A failed check's message, and this one line, are shown broken at spaces into lines of
:data:`~..wrapping.WIDTH` columns (:func:`~..wrapping.wrapped`): JupyterLab breaks a longer line
of an error anywhere, mid-word.
"""

from __future__ import annotations

from autograd_course.kernel.checks.errors import (
    NotAnswered,
    _is_the_stub,
    _not_defined,
    _not_implemented,
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


def _unanswered_in_test_cell(value, tb) -> NotAnswered | None:
    """The one-line NotAnswered for an exception of a visible test cell that means "this
    question is not answered yet", else None: the blank stub's NotImplementedError (at any
    depth), or a NameError raised by the test cell's own code (a name its answer cell
    defines, never run). A NameError inside the learner's own functions is a bug of theirs
    and keeps its traceback, as does every error of the learner's own cells."""
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
    return None


def _show_error(shell, etype, value, tb, tb_offset=None):
    """IPython's handler of NameError and NotImplementedError (see
    :func:`_short_errors_in_test_cells`): one line for an unanswered question in a visible test
    cell, IPython's own traceback for everything else."""
    try:
        short = _unanswered_in_test_cell(value, tb)
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
