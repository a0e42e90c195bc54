"""The globals a test cell runs in: the judge's own names first, then the student's kernel.

Rules: builtins and dunder names never reach the kernel; any other missing name is asked of the
kernel at each read (nothing cached); deleting a kernel's name, or binding a kernel object back
under it, acts in the kernel too, as in nbgrader.
"""

from __future__ import annotations

import builtins
from typing import Protocol

_BUILTINS = frozenset(vars(builtins))


class KernelNames(Protocol):
    """What a :class:`Namespace` asks of the judge's session: the kernel's names."""

    def fetch(self, name: str): ...

    def delete(self, name: str) -> None: ...

    def bind(self, name: str, value) -> None: ...

    def handle_of(self, value) -> int | None: ...


class Namespace(dict):
    """The globals of test code: the judge's own names first, then the student's kernel.

    Builtins resolve before anything the kernel defines (a missing name raises KeyError so
    that Python falls back to builtins), and a name the kernel does not define either is a
    NameError, as usual. Nothing fetched is cached: each read sees the kernel as it is now.
    """

    def __init__(self, session: KernelNames):
        super().__init__(__name__="__judge__", __builtins__=builtins)
        self.session = session
        self.deleted: set[str] = set()

    def __missing__(self, name: str):
        if name in _BUILTINS or name.startswith("__"):
            raise KeyError(name)
        return self.session.fetch(name)

    def __delitem__(self, name: str):
        """``del NAME`` in a test: of a name the test bound, here; of the student's, in the
        kernel, as in nbgrader (later reads, here and in the kernel, find it missing)."""
        if dict.__contains__(self, name):
            dict.__delitem__(self, name)
        elif name in _BUILTINS or name.startswith("__"):
            raise KeyError(name)
        else:
            self.session.delete(name)
            self.deleted.add(name)

    def __setitem__(self, name: str, value):
        """A test's assignment binds the name here, for the tests; putting a kernel object
        back under a name the test deleted restores it in the kernel too, as in nbgrader."""
        if name in self.deleted and self.session.handle_of(value) is not None:
            self.session.bind(name, value)
            self.deleted.discard(name)
            dict.pop(self, name, None)
        else:
            dict.__setitem__(self, name, value)
