"""The grading kernel's provisioning: started from the sandbox's command line, logged, watched.

:class:`SandboxedExecute` is nbgrader's ``Execute`` with the kernel started from a command line
it is given (the sandbox's, :mod:`.sandbox`) instead of a kernelspec the notebook names; the
kernel's own stdout and stderr go to a log; a watchdog kills it when it uses more memory than
allowed; a time-out of a cell is noted for the subclass (:mod:`.preprocessors.execute`) to
explain. The subclass sees only this module's small API: :meth:`~SandboxedExecute.use_kernel`,
:attr:`~SandboxedExecute.cell_timed_out`, :meth:`~SandboxedExecute.kernel_pid`,
:attr:`~SandboxedExecute.kernel_started`, :attr:`~SandboxedExecute.watchdog`.

This is the one module that relies on private parts of jupyter_client and nbclient; each use
says what it relies on, so that an upgrade that breaks one is found here.
"""

from __future__ import annotations

import contextlib
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path

import zmq
from jupyter_client.kernelspec import KernelSpec, KernelSpecManager
from jupyter_client.manager import AsyncKernelManager
from jupyter_core.utils import run_sync
from nbgrader.preprocessors import Execute

from autograd_course.grading import sandbox

GRADING_KERNEL = "autograd-course-grading"
#: The largest message a grading kernel may send the grader (outputs included).
MAX_MESSAGE = 256 * 2**20


class GradingKernelManager(AsyncKernelManager):
    """A kernel manager whose connection file the sandboxed kernel's user (``owner``) can
    read, and whose clients refuse messages over :data:`MAX_MESSAGE` (a kernel flooding its
    outputs cannot fill the grader's memory with them)."""

    owner: int = sandbox.NOBODY

    def _context_default(self):
        # jupyter_client (private): the traitlets default of ``context``, the zmq context every
        # client of this manager uses; the option set here applies to all their sockets.
        context = super()._context_default()
        context.setsockopt(zmq.MAXMSGSIZE, MAX_MESSAGE)
        return context

    def write_connection_file(self, **kwargs) -> None:
        super().write_connection_file(**kwargs)
        if os.geteuid() == 0:
            os.chown(self.connection_file, self.owner, self.owner)


class OneKernelSpec(KernelSpecManager):
    """Knows one kernel spec, the grading kernel's, whatever the notebook names."""

    def __init__(self, spec: KernelSpec, **kwargs):
        super().__init__(**kwargs)
        self.spec = spec

    def get_kernel_spec(self, kernel_name: str) -> KernelSpec:
        return self.spec


def private_bytes(pid: int) -> int:
    """The memory a process has to itself (its private pages, resident or swapped), from
    ``/proc/PID/smaps_rollup``: unlike its resident size, pages it shares with its parent
    after a fork, or with other processes (the libraries), are not counted."""
    try:
        text = Path(f"/proc/{pid}/smaps_rollup").read_text()
    except OSError:
        import psutil

        return psutil.Process(pid).memory_info().rss  # not Linux, or gone: its resident size
    total = 0
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key in ("Private_Clean", "Private_Dirty", "Swap"):
            total += int(value.split()[0]) * 1024
    return total


def tree_private_bytes(pid: int) -> int:
    """:func:`private_bytes` of a process and all its descendants."""
    import psutil

    process = psutil.Process(pid)
    total = private_bytes(pid)
    for child in process.children(recursive=True):
        with contextlib.suppress(psutil.Error, ProcessLookupError, ValueError):
            total += private_bytes(child.pid)
    return total


@dataclass
class Watchdog:
    """Kills a kernel (and every process it started) whose private memory, all its processes
    together, passes ``limit_mb``."""

    limit_mb: int
    killed: str | None = None
    _stop: threading.Event = field(default_factory=threading.Event, repr=False)

    def watch(self, pid: int) -> None:
        """Start watching the process ``pid`` and its children, in a daemon thread."""
        threading.Thread(target=self._poll, args=(pid,), daemon=True,
                         name="grader-memory-watchdog").start()

    def stop(self) -> None:
        self._stop.set()

    def _poll(self, pid: int) -> None:
        import psutil

        limit = self.limit_mb * 2**20
        try:
            process = psutil.Process(pid)
            while process.is_running() and not self._stop.is_set():
                if tree_private_bytes(pid) > limit:
                    self.killed = f"the kernel used more than {self.limit_mb} MiB"
                    for child in process.children(recursive=True):
                        child.kill()
                    process.kill()
                    return
                self._stop.wait(0.1)
        except psutil.Error:
            return


@dataclass
class KernelPlan:
    """How to start one grading kernel: its command line, its folders and its user."""

    argv: list[str]
    folders: sandbox.Folders
    memory_limit_mb: int
    uid: int | None = None
    log: object = None


class SandboxedExecute(Execute):
    """nbgrader's Execute, with a kernel started from the command line of a :class:`KernelPlan`.

    Call :meth:`use_kernel` before ``preprocess``; after it, call :meth:`release_kernel`.
    """

    def use_kernel(self, plan: KernelPlan) -> None:
        """Start the next notebook's kernel as ``plan`` says."""
        self._plan = plan
        self.kernel_started = False
        self.cell_timed_out: float | None = None
        self.watchdog = Watchdog(plan.memory_limit_mb)

    def release_kernel(self) -> None:
        """Stop watching the kernel and close its log."""
        self.watchdog.stop()
        if self._plan.log is not None:
            self._plan.log.close()

    def kernel_pid(self) -> int | None:
        """The process id of the kernel's command (bubblewrap's, when sandboxed)."""
        # jupyter_client (public attribute of LocalProvisioner): ``process``, the Popen object.
        provisioner = getattr(self.km, "provisioner", None)
        return getattr(getattr(provisioner, "process", None), "pid", None)

    def kernel_alive(self) -> bool:
        """Whether the kernel's process is still running (True while it is starting)."""
        provisioner = getattr(self.km, "provisioner", None)
        process = getattr(provisioner, "process", None)
        return process is None or process.poll() is None

    # -- nbclient's hooks ----------------------------------------------------------------
    def create_kernel_manager(self):
        plan = self._plan
        spec = KernelSpec(argv=plan.argv, display_name="autograd-course grading",
                          language="python", interrupt_mode="message", env={})
        self.kernel_name = GRADING_KERNEL
        self.km = GradingKernelManager(
            kernel_name=GRADING_KERNEL, kernel_spec_manager=OneKernelSpec(spec),
            transport="ipc", ip=str(plan.folders.ipc / "kernel"),
            connection_file=str(plan.folders.ipc / "kernel.json"), config=self.config)
        self.km.owner = sandbox.NOBODY if plan.uid is None else plan.uid
        return self.km

    async def async_start_new_kernel(self, **kwargs):
        # The kernel's own stdout and stderr (not the notebook's outputs) go to a log, which
        # is quoted when the kernel fails to start. nbclient passes these keyword arguments
        # through ``AsyncKernelManager.start_kernel`` to the provisioner's ``Popen``.
        folders = self._plan.folders
        self._plan.log = open(folders.base / "kernel.log", "wb")  # noqa: SIM115
        kwargs.update(cwd=str(folders.work), stdout=self._plan.log, stderr=self._plan.log)
        return await super().async_start_new_kernel(**kwargs)

    start_new_kernel = run_sync(async_start_new_kernel)

    def start_new_kernel_client(self):
        client = super().start_new_kernel_client()
        self.kernel_started = True
        sandbox.lock_sockets(self._plan.folders)  # its sockets are made: no more files there
        pid = self.kernel_pid()
        if pid is not None:
            self.watchdog.watch(pid)
        return client

    async def _async_handle_timeout(self, timeout, cell=None):
        # nbclient (private): called when a cell's reply does not come within its timeout;
        # with interrupt_on_timeout it interrupts the kernel and returns an error reply.
        self.cell_timed_out = timeout
        return await super()._async_handle_timeout(timeout, cell)
