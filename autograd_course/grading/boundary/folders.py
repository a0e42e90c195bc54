"""The host side of each grading kernel: its folders, its user, and cleaning up after it.

- :func:`prepare_folders` makes a kernel's folders (:class:`Folders`) under a private base in
  the temporary folder; :func:`lock_sockets` makes its socket folder the grader's once the
  kernel is up;
- as root, :func:`kernel_user` lends each running kernel a user of its own from
  :data:`KERNEL_UIDS` (a lock file each, never two kernels at once, never one whose keys Linux
  still holds: :func:`holds_keys`), and kills every process left with it before giving it back;
- a grading process that was killed leaves its folders behind: :func:`sweep_stale_folders`
  removes those whose process is gone (:func:`owner_gone`, shared with :mod:`.cgroups`).

The command line that starts a kernel in these folders is :mod:`.sandbox`'s.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

NOBODY = 65534
#: The users grading kernels run as when the grader is root: one per running kernel, so that
#: the process limit (which counts per user) holds per kernel. Not in the host's passwd.
KERNEL_UIDS = range(1_990_000_000, 1_990_000_000 + 4096)
USER_LOCKS = Path("/tmp/autograd-course-kernel-users.d")
#: The prefix of the host folders of grading kernels (in the temporary folder), followed by
#: the grading process's id: a folder whose process is gone is swept away
#: (:func:`sweep_stale_folders`).
KERNEL_FOLDERS = "autograd-course-kernel-"


@dataclass(frozen=True)
class Folders:
    """The host folders of one grading kernel, under ``base`` (private to the grader).

    ``files`` holds the submission's other files, copied into the kernel's working folder
    ``work`` when it starts; ``ipc`` holds its sockets and connection file; ``home`` is the
    unsandboxed kernel's home (a sandboxed one has its home in its own ``/tmp``).
    """

    base: Path
    files: Path
    work: Path
    ipc: Path
    home: Path

    @property
    def output(self) -> Path:
        """The FIFO the kernel's own stdout and stderr go to (:class:`.provision.KernelLog`)."""
        return self.base / "kernel.out"

    @property
    def log(self) -> Path:
        """What the grader kept of the kernel's own stdout and stderr."""
        return self.base / "kernel.log"

    @property
    def filter(self) -> Path:
        """The system-call filter bubblewrap installs (:func:`.sandbox._filter_option`)."""
        return self.base / "seccomp.bpf"


def prepare_folders(base: Path, uid: int | None = None) -> Folders:
    """Make a kernel's host folders under ``base``; the socket folder is the kernel's (its
    user's, as root) until :func:`lock_sockets`."""
    folders = Folders(base, base / "files", base / "work", base / "ipc", base / "home")
    for path in (folders.files, folders.work, folders.ipc, folders.home):
        path.mkdir(parents=True)
    if os.geteuid() == 0:
        os.chown(folders.ipc, NOBODY if uid is None else uid, NOBODY if uid is None else uid)
        os.chmod(base, 0o755)
    return folders


def lock_sockets(folders: Folders) -> None:
    """Once the kernel is up: its socket folder, and everything the kernel made in it (a
    folder of folders, say), becomes the grader's and read-only to others, so that the kernel
    can use its sockets but no longer create or grow files there (as root only: otherwise
    the kernel has the grader's user, and the folder stays writable, each file under the
    file-size limit). Each folder is locked before it is listed: nothing new appears in it."""
    if os.geteuid() != 0:
        return
    pending = [folders.ipc]
    while pending:
        folder = pending.pop()
        with contextlib.suppress(OSError):
            os.chown(folder, 0, 0, follow_symlinks=False)
            os.chmod(folder, 0o755)
        with contextlib.suppress(OSError), os.scandir(folder) as entries:
            for entry in entries:
                with contextlib.suppress(OSError):
                    mode = entry.stat(follow_symlinks=False).st_mode
                    if stat.S_ISDIR(mode):
                        pending.append(Path(entry.path))
                    elif not stat.S_ISSOCK(mode):  # its sockets stay the kernel's
                        os.chown(entry.path, 0, 0, follow_symlinks=False)
                        if not stat.S_ISLNK(mode):
                            os.chmod(entry.path, 0o644)


def owner_gone(name: str, prefix: str) -> bool:
    """Whether ``name`` is ``prefix`` + a grading process's id + ``-``... and that process is
    gone (a process that still runs, or is not ours to signal, is not; nor is a name without
    an id)."""
    pid = name.removeprefix(prefix).partition("-")[0]
    if not (name.startswith(prefix) and pid.isdigit() and len(pid) <= 10):
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except (OSError, OverflowError):  # not ours to signal, or not a process id
        return False
    return False


def sweep_stale_folders(temp: Path | None = None) -> list[Path]:
    """Remove the host folders of grading kernels (:data:`KERNEL_FOLDERS`) whose grading
    process is gone: one killed (by a person, or the machine's memory killer) could not clean
    up after itself. A folder whose process still runs, or whose name says no process, is
    left. Returns what was removed."""
    temp = Path(tempfile.gettempdir()) if temp is None else temp
    removed = []
    with contextlib.suppress(OSError):
        for entry in temp.iterdir():
            if entry.is_symlink() or not entry.is_dir() or not owner_gone(entry.name,
                                                                          KERNEL_FOLDERS):
                continue
            shutil.rmtree(entry, ignore_errors=True)
            removed.append(entry)
    return removed


_next_user = [os.getpid() * 7919]  # where this process looks for a free user next


@contextlib.contextmanager
def kernel_user() -> Iterator[int | None]:
    """A user of its own for one grading kernel, while it runs (as root; None otherwise).

    Users are taken from :data:`KERNEL_UIDS` with a lock file each, so that two kernels on
    this machine, in any grading process, never share one; a process takes them in turn, not
    the same one again. When the kernel is done, every process left with its user is killed
    (a fork flood's children, say) before the user is given back.
    """
    if os.geteuid() != 0:
        yield None
        return
    USER_LOCKS.mkdir(mode=0o700, exist_ok=True)
    for _ in range(len(KERNEL_UIDS)):
        uid = KERNEL_UIDS[_next_user[0] % len(KERNEL_UIDS)]
        _next_user[0] += 1
        handle = open(USER_LOCKS / str(uid), "a")  # noqa: SIM115 - held while the kernel runs
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            continue
        if holds_keys(uid):  # an earlier kernel's keys live: not lent while they do
            handle.close()
            continue
        try:
            _reap(uid)  # a grader killed before it could reap
            yield uid
        finally:
            _reap(uid)
            handle.close()
        return
    raise RuntimeError(f"all {len(KERNEL_UIDS)} kernel users are taken")


def holds_keys(uid: int) -> bool:
    """Whether Linux holds a key that ``uid`` owns (``/proc/key-users``; none where Linux has
    no keys). A user's keyrings outlive its processes, and one whose owner took away its own
    write permission cannot be emptied by that user again: a uid that owns any key is not
    lent (with the filter on, a kernel owns none but its session keyring, gone with it)."""
    try:
        with open("/proc/key-users") as f:
            lines = f.read().splitlines()
    except OSError:
        return False
    for line in lines:
        owner, _, counts = line.partition(":")
        if owner.strip() == str(uid):
            return int(counts.split()[1].split("/")[0]) > 0  # usage, then nkeys/ninstantiated
    return False


def _processes_of(uid: int) -> list[int]:
    found = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if os.stat(entry.path).st_uid == uid:
                    found.append(int(entry.name))
    return found


def _reap(uid: int, wait: float = 10.0) -> None:
    """Kill every process of ``uid`` and wait until none is left."""
    import time

    deadline = time.monotonic() + wait
    while (pids := _processes_of(uid)) and time.monotonic() < deadline:
        for pid in pids:
            with contextlib.suppress(OSError):
                os.kill(pid, 9)
        time.sleep(0.05)
