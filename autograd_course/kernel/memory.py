"""What a process holds, read from ``/proc`` (Linux).

Used on both sides: a grader measures a student's kernel from outside it, all its processes
together (:func:`tree_memory_bytes`: each process's share of the anonymous memory it uses, so
that forking, which makes every page shared, hides nothing), and a learner's visible check
measures its own kernel (:func:`private_bytes`). Private memory, unlike the resident size,
leaves out the pages a process shares: the libraries, and after a fork its parent's pages.

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


def anonymous_share_bytes(pid: int) -> int:
    """The process's share of the anonymous memory it uses (``Pss_Anon``, ``Pss_Shmem`` and
    ``SwapPss`` of ``/proc/PID/smaps_rollup``): a page it shares with ``n`` processes counts
    ``1/n``. Summed over processes that fork, it stays what they hold together, where their
    private memory would drop to nothing (a fork shares every page). :func:`private_bytes`
    where the kernel reports no such fields (Linux before 5.14)."""
    try:
        text = Path(f"/proc/{pid}/smaps_rollup").read_text()
    except OSError:
        return private_bytes(pid)
    fields = dict(line.partition(":")[::2] for line in text.splitlines())
    if "Pss_Anon" not in fields:
        return private_bytes(pid)
    return sum(int(fields[key].split()[0]) * 1024
               for key in ("Pss_Anon", "Pss_Shmem", "SwapPss") if key in fields)


#: The names of grading kernels' cgroups begin so (``grading.boundary.cgroups.PREFIX``).
KERNEL_CGROUPS = "autograd-course-kernel-"


def tree_memory_bytes(pid: int) -> int:
    """:func:`anonymous_share_bytes` of a process and all its descendants: the memory they
    hold together, however they share it among themselves."""
    import psutil

    total = anonymous_share_bytes(pid)
    for child in psutil.Process(pid).children(recursive=True):
        with contextlib.suppress(psutil.Error, OSError, ValueError):
            total += anonymous_share_bytes(child.pid)
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
