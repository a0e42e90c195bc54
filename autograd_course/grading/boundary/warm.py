"""Warm grading kernels: one zygote per grading process, a forked kernel for each notebook.

A cold grading kernel is a new Python process in bubblewrap that imports torch (and, at its
first optimiser step, ``torch._dynamo``): about half of grading a submission. A
:class:`Zygote` does that once: it is :mod:`autograd_course.kernel.zygote` started in the sandbox's
fixed part (:func:`.sandbox.zygote_command`), and for each notebook it forks a child that
makes its own namespaces, file systems, user, limits and seeds before it starts the kernel
(the steps are listed in :mod:`autograd_course.kernel.zygote`). :class:`WarmProvisioner` is
jupyter_client's provisioner of such a kernel, so nbclient and the judge talk to it as to any
other.

:func:`zygote` gives the process's zygote, started (in the background) at its first use and
started again if it died; notebooks graded while it starts get cold kernels, unless the
process's :func:`plan` says to wait for it (a grading worker, which starts its zygote as it
starts, and the warm check's service once its first check is answered). A process that
grades one notebook (``check`` of one) never starts one: a zygote's start costs more than a
cold kernel. Where it cannot run
(no bubblewrap, no ``fork``) it gives None with the reason, and the grader starts cold
kernels, as before.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from jupyter_client.provisioning import LocalProvisioner

from autograd_course.grading.boundary import sandbox
from autograd_course.grading.boundary.folders import KERNEL_FOLDERS, Folders

#: Seconds a zygote may take to import and prime torch, on a loaded machine.
START_SECONDS = 120
#: Seconds a zygote may take to answer one request (a fork).
SPAWN_SECONDS = 30


class ZygoteError(RuntimeError):
    """The zygote could not start, or could not fork a kernel."""


class Zygote:
    """A warm parent of grading kernels (:mod:`autograd_course.kernel.zygote`) in the
    sandbox's fixed part, which hides ``private``. Each kernel's folders are made under
    :attr:`spool`.

    It is started here and becomes ready (imports and primes torch) on its own: see
    :meth:`wait`. The thread that makes it must outlive it (bubblewrap's ``--die-with-parent``
    ends it with that thread)."""

    def __init__(self, private: tuple[Path, ...]):
        # under /tmp, which each forked kernel covers with its own (autograd_course.kernel.zygote)
        self.spool = Path(tempfile.mkdtemp(
            prefix=f"{KERNEL_FOLDERS}{os.getpid()}-zygote-", dir="/tmp"))
        os.chmod(self.spool, 0o755)
        argv = sandbox.zygote_command(self.spool, private=private)
        if argv is None:
            self.close()
            raise ZygoteError("bubblewrap cannot run here")
        self._log = open(self.spool / "zygote.log", "wb")  # noqa: SIM115 - held while it runs
        self._started = time.perf_counter()
        self.ready: dict | None = None  # its first reply, once it came
        self.process = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=self._log, close_fds=True)

    def wait(self, seconds: float) -> bool:
        """Whether it is ready, waiting at most ``seconds`` for it (0: only look); a zygote
        that failed to start raises :class:`ZygoteError`."""
        if self.ready is None:
            left = START_SECONDS - (time.perf_counter() - self._started)
            if not select.select([self.process.stdout], [], [], max(0, min(seconds, left)))[0]:
                if left <= seconds:
                    raise ZygoteError(f"the zygote was not ready in {START_SECONDS} s: "
                                      + self._tail())
                return False
            self.ready = self._read(0)
            self.ready["wall"] = round(time.perf_counter() - self._started, 3)
        return True

    def alive(self) -> bool:
        return self.process.poll() is None

    def spawn(self, request: dict) -> ForkedKernel:
        """Fork a kernel for ``request`` (see :func:`request`); its process as the grader sees
        it."""
        try:
            self.process.stdin.write(json.dumps(request).encode() + b"\n")
            self.process.stdin.flush()
        except OSError as exc:
            raise ZygoteError(f"the zygote is gone: {exc}") from exc
        reply = self._read(SPAWN_SECONDS)
        return ForkedKernel(self._host_pid(reply["pid"]))

    def _read(self, seconds: float) -> dict:
        out = self.process.stdout
        ready, _, _ = select.select([out], [], [], seconds)
        line = out.readline() if ready else b""
        if not line:
            raise ZygoteError("the zygote did not answer: " + self._tail())
        reply = json.loads(line)
        if "error" in reply:
            raise ZygoteError(reply["error"])
        return reply

    def _tail(self) -> str:
        with contextlib.suppress(OSError):
            text = (self.spool / "zygote.log").read_text(errors="replace").strip()
            return " / ".join(text.splitlines()[-3:])[-400:] or "it wrote nothing"
        return "no log"

    def _host_pid(self, inner: int) -> int:
        """The id, in the grader's PID namespace, of the process the zygote knows as
        ``inner`` (the zygote lives in a PID namespace of its own)."""
        import psutil

        depth = len(_nspids(self.process.pid))
        for _ in range(50):
            for child in psutil.Process(self.process.pid).children(recursive=True):
                ids = _nspids(child.pid)
                if len(ids) > depth and ids[depth] == inner:
                    return child.pid
            time.sleep(0.01)
        raise ZygoteError(f"the forked kernel {inner} is not among the zygote's processes")

    def close(self) -> None:
        process = getattr(self, "process", None)
        if process is not None:
            with contextlib.suppress(OSError):
                process.stdin.close()
            process.kill()
            process.wait()
            process.stdout.close()
        if getattr(self, "_log", None) is not None:
            self._log.close()
        shutil.rmtree(self.spool, ignore_errors=True)


def _nspids(pid: int) -> list[int]:
    """A process's ids in each PID namespace it is in, from the outermost (``NSpid``)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("NSpid:"):
                    return [int(n) for n in line.split()[1:]]
    except OSError:
        pass
    return []


class ForkedKernel:
    """The first process of a forked kernel, as Popen-like as jupyter_client's provisioner
    needs: its PID namespace's PID 1, the kernel and everything that started run under it;
    killing it kills them all."""

    def __init__(self, pid: int):
        import psutil

        self.pid = pid
        self._process = psutil.Process(pid)
        self.returncode: int | None = None
        self.stdin = self.stdout = self.stderr = None

    def poll(self) -> int | None:
        import psutil

        if self.returncode is None:
            try:
                running = self._process.status() != psutil.STATUS_ZOMBIE
            except psutil.Error:
                running = False
            if not running:
                self.returncode = -signal.SIGKILL
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired("forked kernel", timeout)
            time.sleep(0.02)
        return self.returncode

    def send_signal(self, signum: int) -> None:
        """An interrupt goes to the namespace's PID 1, which hands it to the kernel; any other
        signal ends them all."""
        import psutil

        children = []
        if signum == signal.SIGINT:
            with contextlib.suppress(psutil.Error):
                for kernel in self._process.children():
                    kernel.send_signal(signum)
            return
        with contextlib.suppress(psutil.Error):
            children = self._process.children(recursive=True)
        for process in [*children, self._process]:
            with contextlib.suppress(psutil.Error):
                process.kill()

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def terminate(self) -> None:
        self.send_signal(signal.SIGKILL)


class WarmProvisioner(LocalProvisioner):
    """jupyter_client's provisioner of a kernel forked by a :class:`Zygote`: the connection
    file is written as for any kernel, and the kernel is asked of the zygote instead of
    started as a command. With a ``cgroup`` (:mod:`.cgroups`), the forked tree (the child,
    its PID 1 and the kernel, still starting) is moved into it before this returns, so
    before the grader sends the kernel any of the notebook's code; a tree that cannot be
    moved is killed, and the kernel fails to start."""

    zygote: Zygote | None = None
    request: dict | None = None
    cgroup = None

    async def launch_kernel(self, cmd: list[str], **kwargs):
        km = self.parent
        self.request = dict(self.request, connection_file=km.connection_file)
        self.process = self.zygote.spawn(self.request)
        if self.cgroup is not None:
            try:
                self.cgroup.adopt(self.process.pid)
            except OSError as exc:
                self.process.kill()
                raise ZygoteError(f"the forked kernel could not enter its cgroup: {exc}"
                                  ) from None
        self.pid, self.pgid = self.process.pid, None
        self.cwd = self.request["work"]
        return self.connection_info

    async def send_signal(self, signum: int) -> None:
        if self.process:
            self.process.send_signal(signum)


def request(folders: Folders, limits: sandbox.Limits, uid: int | None) -> dict:
    """What a zygote needs to fork one notebook's kernel: its folders (at the paths the grader
    uses), user, limits, environment, thread count and ipykernel's arguments."""
    threads = int(os.environ.get("OMP_NUM_THREADS") or 0) or len(os.sched_getaffinity(0))
    request = {
        "spool": str(folders.base.parent), "files": str(folders.files),
        "work": str(folders.work), "ipc": str(folders.ipc), "home": str(folders.home),
        "log": str(folders.output), "uid": uid,
        "limits": {**asdict(limits), "shm_mb": sandbox.SHM_MB},
        "env": sandbox.kernel_environment(), "threads": threads,
        "argv": list(sandbox.kernel_options()),
    }
    if os.geteuid() == 0:
        request.update(passwd=str(folders.base / "passwd"), group=str(folders.base / "group"))
    return request


@dataclass
class Plan:
    """How many notebooks this process grades from here (None: not known), and whether a
    notebook waits for the zygote's start rather than taking a cold kernel meanwhile."""

    notebooks: int | None = None
    wait: bool = False


_plan = Plan()
_zygotes: dict[tuple[Path, ...], Zygote] = {}
_unavailable: list[str] = []


def plan(notebooks: int | None, wait: bool = False) -> None:
    """Say how many notebooks this process will grade (``check`` of N notebooks: N; a
    grading worker: None, many); a process that grades one never starts a zygote (its start
    costs more than one cold kernel). ``wait``: the first notebook waits for the zygote."""
    _plan.notebooks, _plan.wait = notebooks, wait


def pays() -> bool:
    """Whether a zygote can pay here: more than one notebook to grade, or not known."""
    return _plan.notebooks is None or _plan.notebooks > 1


def zygote(private: list[Path], most: float = START_SECONDS) -> tuple[Zygote | None, str]:
    """This process's zygote for a sandbox that hides ``private``, or None and why there is
    none ("" while it starts: a notebook graded meanwhile takes a cold kernel, unless the
    :func:`plan` says to wait: then it waits, ``most`` seconds at most).

    Zygotes are told apart by what their sandbox shows (the import-path folders that
    ``private`` leaves), not by ``private`` itself: ``check`` grades each notebook in a course
    of its own under the temporary folder, which no sandbox shows."""
    if _unavailable:
        return None, _unavailable[0]
    if not hasattr(os, "fork") or sys.platform != "linux":
        _unavailable.append("warm kernels need Linux's fork and namespaces")
        return None, _unavailable[0]
    key = tuple(sandbox.python_paths(private))
    found = _zygotes.get(key)
    try:
        if found is None or not found.alive():
            close_all()  # one at a time: a zygote holds memory (a dead one, files)
            found = _zygotes[key] = Zygote(private)
        if found.wait(min(most, START_SECONDS) if _plan.wait else 0):
            return found, ""
        return None, ""
    except (ZygoteError, OSError) as exc:
        close_all()
        _unavailable.append(f"the warm kernels' zygote could not start: {exc}")
        return None, _unavailable[0]


@atexit.register
def close_all() -> None:
    """Stop this process's zygote (at exit, or in a test)."""
    for found in _zygotes.values():
        found.close()
    _zygotes.clear()
    _unavailable.clear()
