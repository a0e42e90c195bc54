"""Containment: whatever grading one notebook raises is that notebook's failure alone.

An exception that is a ``BaseException`` but not an ``Exception`` (``SystemExit``,
``GeneratorExit``, a class of its own) passes every ``except Exception:``, nbgrader's converter
included, which records a failing submission and goes on to the next: uncontained, it would
stop the whole run and leave every later student ungraded. The rules:

- ``KeyboardInterrupt`` is the person at the keyboard: it always propagates;
- any other ``BaseException`` that leaves a step of the course that grades one notebook (a
  preprocessor, an exporter: :func:`contained`) leaves it as :class:`GradingStopped`, an
  ``Exception`` with a plain reason; nbgrader then records that submission's failure, grades
  the next one, and exits with a non-zero status at the end;
- the judge makes such an exception in a test cell that test's failure (:func:`describe`).
"""

from __future__ import annotations

import functools

#: Characters of an exception's message kept in a reason.
MESSAGE_LIMIT = 200
#: How the reason of every :class:`GradingStopped` begins.
STOPPED = "grading this notebook stopped: "


class GradingStopped(Exception):  # noqa: N818 - named for what the instructor reads
    """Grading one notebook stopped on a ``BaseException`` that is not an ``Exception``."""


def describe(exc: BaseException) -> str:
    """``exc`` in plain words on one line: its type and the start of its message."""
    try:
        message = " ".join(str(exc).split())
    except Exception:  # noqa: BLE001 - a message that cannot be made is left out
        message = ""
    if len(message) > MESSAGE_LIMIT:
        message = message[:MESSAGE_LIMIT - 3] + "..."
    return type(exc).__name__ + (f" ({message})" if message else "")


def stopped(exc: BaseException, where: str) -> GradingStopped:
    """The :class:`GradingStopped` that stands for ``exc``, raised in ``where``."""
    return GradingStopped(f"{STOPPED}{where} raised {describe(exc)}; the notebook was not "
                          "graded")


def contained(step):
    """Make the method ``step`` (a preprocessor's or an exporter's) raise
    :class:`GradingStopped` for any ``BaseException`` but ``Exception`` and
    ``KeyboardInterrupt``, which pass unchanged."""

    @functools.wraps(step)
    def run(self, *args, **kwargs):
        try:
            return step(self, *args, **kwargs)
        except (Exception, KeyboardInterrupt):
            raise
        except BaseException as exc:  # noqa: BLE001 - the point: SystemExit, GeneratorExit...
            raise stopped(exc, type(self).__name__) from exc

    return run
