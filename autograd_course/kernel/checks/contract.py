"""The judge contract: what check code may ask of the judge that runs a test cell.

While the judge runs a test cell (grading), :data:`JUDGE` holds its session (the judge's
``Session`` sets and resets it around the cell); in a kernel it is None. Rules: check code
reaches the judge only through :data:`JUDGE`, and asks of it only what :class:`Judge` names;
a new need is added to :class:`Judge` first. (The student's functions are called through
:class:`~autograd_course.kernel.wire.RemoteFunction`, which is the wire's, not the checks'.)
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Protocol, runtime_checkable

import torch


@runtime_checkable
class Judge(Protocol):
    """The judge as check code sees it: the methods the checks call, and nothing else."""

    def note(self, diagnosis: str, message: str) -> None:
        """Show a diagnosis that costs no points with the running test's result, once."""

    def check_not_sent(self, expected) -> None:
        """Refuse an expected value that a test function carried into the kernel."""

    def generator(self) -> torch.Generator:
        """The generator of the running test's hidden inputs (seeded per test when grading)."""

    def call(self, target, args: tuple, kwargs: dict, *, label: str,
             no_grad: bool = False) -> tuple[object, list[str]]:
        """Call ``target`` in the student's kernel; return ``(result, warnings)``."""

    def proxy(self, target) -> object:
        """The kernel's stand-in for the test's own ``target``, whose calls come back here."""

    def current(self, value) -> object:
        """``value`` as the student's kernel holds it now (anything else as it is)."""

    def kernel_memory(self) -> int:
        """The kernel's memory in bytes, read from outside it."""

    def forget_all(self) -> None:
        """Make the kernel let go of every object it sent or received so far."""


#: The judge running the current test cell, when it runs in the judge (None in a kernel).
JUDGE: ContextVar[Judge | None] = ContextVar("autograd_course_judge", default=None)
