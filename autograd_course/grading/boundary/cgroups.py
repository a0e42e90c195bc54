"""A cgroup per grading kernel: the memory Linux holds for it counted, processes and CPU bounded.

Each version's files, and why: docs/design.md#autograd_coursegradingboundarycgroupspy. Rules:

- **Where.** v2 where the grader's own cgroup can enable ``memory`` and ``pids`` for its
  children; else v1 where those hierarchies are mounted writable; else none (:func:`usable`
  says why). A kernel's cgroup is a child of the grader's own, named :data:`PREFIX` + the
  grader's pid + a count.
- **Memory.** One limit (:attr:`KernelCgroup.limit`), no swap, charges the memory Linux holds
  for the kernel, v1's TCP buffers apart (:data:`TCP_BYTES`); past it, the OOM killer ends a
  process (:meth:`KernelCgroup.oom_kills`). The grader reads :meth:`KernelCgroup.memory_bytes`.
- **Processes and CPU.** ``pids.max`` (threads included); CPU time per 100 ms period, where the
  ``cpu`` controller is there.
- **Entry.** Every process of a kernel starts inside (:func:`.sandbox.enter_cgroup`); a warm
  kernel's tree is moved in (:meth:`KernelCgroup.adopt`) before it is sent any code.
- **End.** :meth:`KernelCgroup.remove` kills what is left and removes the folders;
  :func:`sweep_stale` does that for the cgroups of a grader that died.
- **None.** Every grade record says so (:data:`NO_CGROUP`); the kernel keeps its rlimits.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import os
import signal
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from autograd_course.grading.boundary.folders import owner_gone
from autograd_course.kernel.memory import KERNEL_CGROUPS

#: The names of kernels' cgroups: the prefix, the grader's pid, a count.
PREFIX = KERNEL_CGROUPS
#: What a kernel's TCP buffers may hold under cgroup v1, which counts them apart (a kernel has
#: only a loopback of its own: an honest notebook holds none).
TCP_BYTES = 64 * 2**20
#: The CPU period of the CPU limit, in microseconds.
PERIOD_US = 100_000
NEEDED = ("memory", "pids")
#: The note of every notebook whose kernel had no cgroup.
NO_CGROUP = ("no cgroup: the kernel's memory was read from its processes only (memory Linux "
             "held for it, such as socket buffers, was not counted) and its processes were "
             "bounded by rlimits only")
OPTIONAL = ("cpu", "freezer")


@dataclass(frozen=True)
class Setup:
    """What this machine offers: the cgroup version and, per controller, the grader's own
    cgroup folder under which kernels' cgroups are made (v2: one folder for all)."""

    version: int
    parents: dict[str, Path]

    def describe(self) -> str:
        where = ", ".join(f"{name} {path}" for name, path in self.parents.items())
        return f"cgroup v{self.version}: {where}"


def _own_cgroups(text: str) -> dict[str, str]:
    """``/proc/self/cgroup`` as {controller: path}; the v2 path under the key ``""``."""
    found = {}
    for line in text.splitlines():
        _, controllers, path = line.split(":", 2)
        for name in controllers.split(",") if controllers else [""]:
            found[name] = path
    return found


def _mounts(text: str) -> list[tuple[str, str, str, str, set[str]]]:
    """The cgroup mounts of ``/proc/self/mountinfo``: (fstype, root, mount point, mount
    options, super options)."""
    found = []
    for line in text.splitlines():
        fields = line.split()
        dash = fields.index("-")
        kind = fields[dash + 1]
        if kind in ("cgroup", "cgroup2"):
            decode = lambda s: s.encode().decode("unicode_escape")  # noqa: E731 - octal escapes
            found.append((kind, decode(fields[3]), decode(fields[4]), fields[5],
                          set(fields[dash + 3].split(","))))
    return found


def _inside(mount: str, root: str, own: str) -> Path | None:
    """The folder of the cgroup ``own`` in a hierarchy mounted at ``mount`` from ``root``."""
    rel = os.path.relpath(own, root)
    if rel.startswith(".."):
        return None
    return Path(mount) / rel if rel != "." else Path(mount)


def _detect(cgroup_text: str, mountinfo_text: str) -> tuple[Setup | None, str]:
    own = _own_cgroups(cgroup_text)
    mounts = _mounts(mountinfo_text)
    why = []
    for kind, root, point, options, _ in mounts:
        if kind != "cgroup2" or "" not in own or "rw" not in options.split(","):
            continue
        folder = _inside(point, root, own[""])
        if folder is None:
            continue
        try:
            offered = (folder / "cgroup.controllers").read_text().split()
        except OSError:
            continue
        if not set(NEEDED) <= set(offered):
            why.append(f"cgroup v2 at {point} offers no {'/'.join(NEEDED)} controllers")
            continue
        wanted = [n for n in (*NEEDED, "cpu") if n in offered]
        try:
            enabled = (folder / "cgroup.subtree_control").read_text().split()
            missing = [n for n in wanted if n not in enabled]
            if missing:
                (folder / "cgroup.subtree_control").write_text(
                    " ".join(f"+{n}" for n in missing))
        except OSError as exc:
            why.append(f"cgroup v2: {folder} cannot give its children the controllers "
                       f"({exc.strerror})")
            continue
        return Setup(2, {n: folder for n in wanted}), ""
    parents = {}
    for kind, root, point, options, supers in mounts:
        for name in (*NEEDED, *OPTIONAL):
            if kind == "cgroup" and name in supers and name in own and name not in parents:
                folder = _inside(point, root, own[name])
                if (folder is not None and "rw" in options.split(",")
                        and os.access(folder, os.W_OK)):
                    parents[name] = folder
    missing = [n for n in NEEDED if n not in parents]
    if not missing:
        return Setup(1, parents), ""
    why.append(f"cgroup v1: no writable {' and '.join(missing)} hierarchy of the grader's "
               "cgroup" + ("" if os.geteuid() == 0 else " (the grader is not root)"))
    return None, "; ".join(why)


@functools.cache
def usable() -> tuple[Setup | None, str]:
    """This machine's :class:`Setup` (a kernel's cgroup can be made and limited there), or
    None and why not."""
    try:
        setup, why = _detect(Path("/proc/self/cgroup").read_text(),
                             Path("/proc/self/mountinfo").read_text())
    except (OSError, ValueError) as exc:
        return None, f"the cgroups cannot be read: {exc}"
    if setup is None:
        return None, why
    try:  # one made, limited and removed: the proof that it works
        probe = KernelCgroup.create(setup, 64 * 2**20, 8, 1.0)
        probe.remove()
    except OSError as exc:
        return None, f"{setup.describe()}: a kernel's cgroup cannot be made ({exc})"
    sweep_stale(setup)
    return setup, ""


_count = itertools.count()


def _pids(procs: Path) -> set[int]:
    """The processes a ``cgroup.procs`` file lists (none when it cannot be read)."""
    with contextlib.suppress(OSError, ValueError):
        return {int(n) for n in procs.read_text().split()}
    return set()


class KernelCgroup:
    """One kernel's cgroup, a folder in each hierarchy (:attr:`folders`)."""

    def __init__(self, setup: Setup, folders: dict[str, Path], limit: int):
        self.setup, self.folders, self.limit = setup, folders, limit

    @classmethod
    def create(cls, setup: Setup, memory: int, pids: int, cpus: float) -> KernelCgroup:
        """Make the cgroup: ``memory`` bytes, ``pids`` tasks, ``cpus`` cores. Raises OSError
        (and removes what it made) when a limit cannot be set."""
        name = f"{PREFIX}{os.getpid()}-{next(_count)}"
        folders = {}
        for controller, parent in setup.parents.items():
            if parent / name not in folders.values():
                (parent / name).mkdir()
            folders[controller] = parent / name
        made = cls(setup, folders, memory)
        try:
            made._limit(memory, pids, cpus)
        except OSError:
            made.remove()
            raise
        return made

    def _limit(self, memory: int, pids: int, cpus: float) -> None:
        quota = max(1000, int(cpus * PERIOD_US))
        if self.setup.version == 2:
            self._write("memory", "memory.max", memory)
            self._write("memory", "memory.swap.max", 0, optional=True)
            self._write("memory", "memory.oom.group", 1)
            self._write("pids", "pids.max", pids)
            if "cpu" in self.folders:
                self._write("cpu", "cpu.max", f"{quota} {PERIOD_US}")
            return
        self._write("memory", "memory.limit_in_bytes", memory)
        self._write("memory", "memory.memsw.limit_in_bytes", memory, optional=True)
        self._write("memory", "memory.kmem.tcp.limit_in_bytes", TCP_BYTES, optional=True)
        self._write("pids", "pids.max", pids)
        if "cpu" in self.folders:
            self._write("cpu", "cpu.cfs_period_us", PERIOD_US)
            self._write("cpu", "cpu.cfs_quota_us", quota)

    def _write(self, controller: str, name: str, value, optional: bool = False) -> None:
        path = self.folders[controller] / name
        if optional and not path.exists():
            return
        path.write_text(f"{value}\n")

    def _read(self, controller: str, name: str) -> str:
        return (self.folders[controller] / name).read_text()

    def _events(self, controller: str, name: str) -> dict[str, int]:
        with contextlib.suppress(OSError, ValueError):
            return {k: int(v) for k, v in (line.split() for line in
                                           self._read(controller, name).splitlines())}
        return {}

    # -- what it holds -------------------------------------------------------------------
    def procs_files(self) -> list[Path]:
        """The ``cgroup.procs`` file of each folder (what a process writes its pid to)."""
        return [folder / "cgroup.procs" for folder in dict.fromkeys(self.folders.values())]

    def memory_bytes(self) -> int:
        """What the cgroup holds now, in bytes (v1: TCP buffers added)."""
        if self.setup.version == 2:
            return int(self._read("memory", "memory.current"))
        total = int(self._read("memory", "memory.usage_in_bytes"))
        with contextlib.suppress(OSError, ValueError):
            total += int(self._read("memory", "memory.kmem.tcp.usage_in_bytes"))
        return total

    def peak_bytes(self) -> int | None:
        """The most it held, where Linux keeps that (v1; v2 from Linux 5.19)."""
        name = "memory.peak" if self.setup.version == 2 else "memory.max_usage_in_bytes"
        with contextlib.suppress(OSError, ValueError):
            return int(self._read("memory", name))
        return None

    def oom_kills(self) -> int:
        """Processes the out-of-memory killer ended in this cgroup."""
        name = "memory.events" if self.setup.version == 2 else "memory.oom_control"
        return self._events("memory", name).get("oom_kill", 0)

    def pids_refused(self) -> int:
        """Forks and clones refused at ``pids.max``."""
        return self._events("pids", "pids.events").get("max", 0)

    def processes(self) -> list[int]:
        """The processes in it (in any of its folders)."""
        return sorted(set().union(*(_pids(path) for path in self.procs_files())))

    # -- entry and end -------------------------------------------------------------------
    def adopt(self, pid: int, seconds: float = 10.0) -> None:
        """Move the process ``pid`` and all its descendants into every folder, until none is
        left outside any (a process forked meanwhile is found in the next round). Raises
        OSError if the tree cannot be moved in ``seconds``.

        Each folder is checked on its own: a process forked between the writes of its parent
        into two hierarchies (v1) starts in one of this cgroup's folders and the other's old
        one, and counting it as in because one folder holds it left kernels uncharged."""
        import psutil

        deadline = time.monotonic() + seconds
        while True:
            try:
                tree = [pid] + [c.pid for c in psutil.Process(pid).children(recursive=True)]
            except psutil.Error as exc:
                raise OSError(f"the kernel {pid} is gone: {exc}") from None
            missing = {}
            for path in self.procs_files():
                held = _pids(path)
                missing[path] = [p for p in tree if p not in held]
            if not any(missing.values()):
                return
            if time.monotonic() > deadline:
                outside = sorted({p for found in missing.values() for p in found})
                raise OSError(f"the processes {outside} could not be moved into the cgroup")
            for path, outside in missing.items():
                for p in outside:
                    with contextlib.suppress(ProcessLookupError):
                        path.write_text(f"{p}\n")

    def kill(self, seconds: float = 10.0) -> bool:
        """Kill every process in the cgroup and wait until none is left; whether none is."""
        deadline = time.monotonic() + seconds
        killer = self.folders["memory"] / "cgroup.kill"
        freezer = self.folders.get("freezer")
        while self.processes() and time.monotonic() < deadline:
            if self.setup.version == 2 and killer.exists():
                with contextlib.suppress(OSError):
                    killer.write_text("1\n")
            else:  # frozen, no process forks while the others are killed
                with contextlib.suppress(OSError):
                    if freezer is not None:
                        (freezer / "freezer.state").write_text("FROZEN\n")
                    for p in self.processes():
                        with contextlib.suppress(OSError):
                            os.kill(p, signal.SIGKILL)
                    if freezer is not None:
                        (freezer / "freezer.state").write_text("THAWED\n")
            time.sleep(0.02)
        return not self.processes()

    def remove(self) -> None:
        """Kill what is left and remove the cgroup's folders (a few tries: a process killed
        leaves its cgroup when Linux has finished with it)."""
        self.kill()
        for folder in dict.fromkeys(self.folders.values()):
            for _ in range(100):
                try:
                    folder.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.05)


def create(memory: int, pids: int, cpus: float) -> tuple[KernelCgroup | None, str]:
    """A kernel's cgroup with these limits, or None and why there is none."""
    setup, why = usable()
    if setup is None:
        return None, why
    try:
        return KernelCgroup.create(setup, memory, pids, cpus), ""
    except OSError as exc:
        return None, f"{setup.describe()}: a kernel's cgroup cannot be made ({exc})"


def sweep_stale(setup: Setup | None = None) -> list[Path]:
    """Kill the processes of, and remove, the kernels' cgroups of graders that are gone (one
    killed could not clean up). Returns the folders removed."""
    setup = setup or usable()[0]
    if setup is None:
        return []
    removed = []
    for parent in dict.fromkeys(setup.parents.values()):
        with contextlib.suppress(OSError):
            for entry in parent.iterdir():
                if not (entry.is_dir() and owner_gone(entry.name, PREFIX)):
                    continue  # not a kernel's, or its grader still runs
                folders = {c: p / entry.name for c, p in setup.parents.items()}
                KernelCgroup(setup, folders, 0).remove()
                removed.append(entry)
    return removed


@contextlib.contextmanager
def kernel_cgroup(memory: int, pids: int, cpus: float
                  ) -> Iterator[tuple[KernelCgroup | None, str]]:
    """:func:`create`, removed at the end (its processes killed first)."""
    made, why = create(memory, pids, cpus)
    try:
        yield made, why
    finally:
        if made is not None:
            made.remove()
