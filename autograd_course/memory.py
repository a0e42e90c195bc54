"""What a process holds, read from ``/proc`` (Linux).

Used on both sides: a grader measures a student's kernel from outside it, all its processes
together (:func:`tree_memory_bytes`: what the kernel's own cgroup holds, where it has one
(:func:`cgroup_bytes`), memory Linux holds for it included; elsewhere each process's share of
the anonymous memory it uses, so that forking, which makes every page shared, hides nothing),
and a learner's visible check measures its own kernel (:func:`private_bytes`). Private
memory, unlike the resident size, leaves out the pages a process shares: the libraries, and
after a fork its parent's pages.

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


#: The names of grading kernels' cgroups begin so (``grading.cgroups.PREFIX``).
KERNEL_CGROUPS = "autograd-course-kernel-"


def cgroup_bytes(pid: int) -> int | None:
    """What the grading kernel's cgroup that ``pid`` is in holds, in bytes (v2
    ``memory.current``; v1 ``memory.usage_in_bytes`` and TCP buffers, which v1 counts
    apart), or None where ``pid`` is in no kernel's cgroup (or it cannot be read)."""
    try:
        own = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
        mounts = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return None
    for line in own:
        _, controllers, path = line.split(":", 2)
        v2 = controllers == ""
        if not (v2 or "memory" in controllers.split(",")) or not os.path.basename(
                path).startswith(KERNEL_CGROUPS):
            continue
        for mount in mounts:
            fields = mount.split()
            kind, supers = fields[fields.index("-") + 1], fields[-1].split(",")
            if kind == ("cgroup2" if v2 else "cgroup") and (v2 or "memory" in supers):
                folder = Path(fields[4]) / os.path.relpath(path, fields[3])
                names = (("memory.current",) if v2 else
                         ("memory.usage_in_bytes", "memory.kmem.tcp.usage_in_bytes"))
                with contextlib.suppress(OSError, ValueError):
                    return sum(int((folder / name).read_text()) for name in names
                               if (folder / name).exists())
    return None


def tree_memory_bytes(pid: int) -> int:
    """What a process and all its descendants hold together: their kernel cgroup's memory
    (:func:`cgroup_bytes`) where they have one; else :func:`anonymous_share_bytes` of each,
    summed, however they share it among themselves."""
    import psutil

    found = cgroup_bytes(pid)
    if found is not None:
        return found
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
