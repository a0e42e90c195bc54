"""What a process holds: its private memory, read from ``/proc`` (Linux).

Used on both sides: a grader measures a student's kernel from outside it (the kernel cannot
forge what Linux reports about its process), and a learner's visible check measures its own
kernel. Private memory, unlike the resident size, leaves out the pages a process shares: the
libraries, and after a fork its parent's pages.

>>> import os
>>> private_bytes(os.getpid()) > 0
True
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path


def private_bytes(pid: int) -> int:
    """The memory the process ``pid`` has to itself: its private pages, resident or swapped
    (``/proc/PID/smaps_rollup``); its resident size where that file is missing."""
    try:
        text = Path(f"/proc/{pid}/smaps_rollup").read_text()
    except OSError:
        import psutil

        return psutil.Process(pid).memory_info().rss
    total = 0
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key in ("Private_Clean", "Private_Dirty", "Swap"):
            total += int(value.split()[0]) * 1024
    return total


def tree_private_bytes(pid: int) -> int:
    """:func:`private_bytes` of a process and all its descendants."""
    import psutil

    total = private_bytes(pid)
    for child in psutil.Process(pid).children(recursive=True):
        with contextlib.suppress(psutil.Error, OSError, ValueError):
            total += private_bytes(child.pid)
    return total


def own_private_bytes() -> int:
    """:func:`private_bytes` of this process."""
    return private_bytes(os.getpid())


def trim() -> None:
    """Collect garbage and give freed heap memory back to Linux (glibc's ``malloc_trim``), so
    that a measurement counts live objects only: glibc keeps freed blocks of up to 32 MiB in
    the heap once its mmap threshold has risen, and when it returns them is not up to the
    code measured."""
    import ctypes
    import gc

    gc.collect()
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").malloc_trim(0)
