"""The grading kernel's provisioning: started from the sandbox's command line, logged, watched.

:class:`SandboxedExecute` is nbgrader's ``Execute`` with the kernel started from a command line
it is given (the sandbox's, :mod:`.sandbox`) instead of a kernelspec the notebook names; the
kernel's own stdout and stderr go to a log; a watchdog kills it when it uses more memory than
allowed; a time-out of a cell is noted for the subclass (:mod:`..preprocessors.execute`) to
explain. The subclass sees only this module's small API: :meth:`~SandboxedExecute.use_kernel`,
:attr:`~SandboxedExecute.cell_timed_out`, :meth:`~SandboxedExecute.kernel_pid`,
:attr:`~SandboxedExecute.kernel_started`, :attr:`~SandboxedExecute.watchdog`.

- A kernel that never answers its first request (``kernel_info``), or cannot even be started,
  is the grader's failure, never the student's: no code of the submission runs before that
  answer (the kernel starts with ``python -P``, its working folder off the import path). Such
  a failure is kept (:func:`not_started`), so that the grading process can refuse to score the
  submission (:class:`KernelNotStarted`, raised by :mod:`..runner` and :mod:`..selfcheck`); a
  kernel that dies after it answered (the notebook killed it) stays the notebook's.
- This is the one module that relies on private parts of jupyter_client and nbclient; each use
  says what it relies on.
"""

from __future__ import annotations

import contextlib
import functools
import os
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from queue import Empty

import zmq
from jupyter_client.asynchronous import AsyncKernelClient
from jupyter_client.kernelspec import KernelSpec, KernelSpecManager
from jupyter_client.manager import AsyncKernelManager, _get_future
from jupyter_client.session import Session
from jupyter_core.utils import run_sync
from nbgrader.preprocessors import Execute
from traitlets import Any, Integer, Type

from autograd_course.grading.boundary import cgroups, sandbox, warm
from autograd_course.grading.boundary.folders import NOBODY, Folders, lock_sockets
from autograd_course.kernel.memory import tree_memory_bytes

GRADING_KERNEL = "autograd-course-grading"
#: The largest message a grading kernel may send the grader (outputs included).
MAX_MESSAGE = 64 * 2**20
#: The bytes of files a kernel may leave in its socket folder (where it can write there).
SOCKET_FILES = 16 * 2**20


#: The most bytes of a message's header, and of its parent header: honest ones are a few
#: hundred bytes, and jupyter_client reads every string of both as a possible date.
MAX_HEADER = 64 * 2**10
#: The most structure (brackets, braces, commas) a message from a kernel may carry. Honest
#: outputs and answers are mostly strings (text, base64 images and arrays); JSON of millions
#: of tiny containers would cost the grader gigabytes and seconds to parse.
MAX_STRUCTURE = 2_000_000
#: How often the grader looks whether a grading kernel it killed has ended. jupyter_client
#: looks every 0.1 s, and a killed kernel ends within milliseconds: the grader sat idle about
#: 70 ms of every submission, waiting for the next look.
KILLED_POLL_SECONDS = 0.005
#: Milliseconds between a grading client's tries to connect to its kernel's sockets (zmq's
#: default is 100). nbclient's client connects while the kernel starts, before the kernel has
#: made its sockets, and then waited for zmq's next try: about 60 ms of every kernel's start,
#: with both the grader and the kernel idle.
RECONNECT_MS = 5


class KernelNotStarted(RuntimeError):
    """A grading kernel never answered its first request, or could not be started: the
    grader's failure (its environment, its config), not the student's; its message says why."""


_not_started: list[str] = []  # why kernels of this process did not start, since last read


def not_started() -> list[str]:
    """Why each grading kernel this process tried to start since the last call did not start
    (empty when all did); the list is emptied."""
    found, _not_started[:] = list(_not_started), []
    return found


def structure(raw: str | bytes) -> int:
    """Brackets, braces and commas in ``raw`` (a message's bytes, or a string as decoded),
    counted with ``bytes.count`` or ``str.count``."""
    marks = ("[", "{", ",") if isinstance(raw, str) else (b"[", b"{", b",")
    return sum(map(raw.count, marks))


class BoundedSession(Session):
    """jupyter_client's Session on the grader's side of a grading kernel: it refuses a message
    whose parts hold more than ``max_bytes`` in all (zmq bounds each part, not their number:
    40 parts of 50 MiB would be 2 GiB in the grader), whose header or parent header is over
    :data:`MAX_HEADER` (jupyter_client parses each string in them as a possible date), whose
    JSON parts hold more than
    :data:`MAX_STRUCTURE` values together, or that it cannot read as a Jupyter message (a wrong
    signature, a message cut off or made up). It calls ``on_refused(reason)`` first, if given
    (the grader stops the kernel there), then raises ValueError(reason). The reason names the
    kind of refusal only, never the message, so it is the same in every grading. Both are
    traits, so that the copies (``Session.clone``) jupyter_client makes for its clients keep
    them."""

    max_bytes = Integer(MAX_MESSAGE, help="The most bytes of one message, all parts together.")
    on_refused = Any(None, allow_none=True, help="Called with the reason of a refusal.")

    def deserialize(self, msg_list, content=True, copy=True):
        if sum(len(part) for part in msg_list) > self.max_bytes:
            self._refuse(TOO_LARGE)
        # the header and the parent header: a million date-like strings would cost seconds
        if any(len(part) > MAX_HEADER for part in msg_list[1:3]):
            self._refuse(HEADER_TOO_LARGE)
        # the signature, then header, parent header, metadata and content: JSON, scanned once
        # here, so that jupyter_client's own unpacker reads only what passed the scan
        if sum(structure(getattr(part, "bytes", part)) for part in msg_list[1:5]) > (
                MAX_STRUCTURE):
            self._refuse(TOO_STRUCTURED)
        try:
            return super().deserialize(msg_list, content=content, copy=copy)
        except ValueError as exc:
            self._refuse(unreadable(
                "a wrong signature" if "Signature" in str(exc) else "not a Jupyter message"))
        except Exception:  # noqa: BLE001 - a signed message the kernel made up
            self._refuse(unreadable("not a Jupyter message"))

    def _refuse(self, reason: str):
        if self.on_refused is not None:
            self.on_refused(reason)
        raise ValueError(reason)


def unreadable(why: str) -> str:
    """The reason a kernel is stopped for a message the grader refuses (see BoundedSession)."""
    return f"the kernel sent the grader a message it does not read: {why}"


#: Refused for its size: by BoundedSession once the message is in, or by the watchdog while
#: it arrives (the same words, so that a grading gives the same reason whichever came first).
TOO_LARGE = unreadable("too large in all its parts together, or more than the grader's "
                       "memory allows")
TOO_STRUCTURED = unreadable(f"more than {MAX_STRUCTURE} values")
HEADER_TOO_LARGE = unreadable(f"a header over {MAX_HEADER // 2**10} KiB")


def judge_client(kernel_manager, limit: int):
    """A blocking client of a grading kernel for the judge, over the shell and control
    channels, that refuses messages over ``2 * limit`` bytes or :data:`MAX_STRUCTURE`."""
    import zmq
    from jupyter_client.blocking import BlockingKernelClient

    context = zmq.Context()
    context.setsockopt(zmq.MAXMSGSIZE, 2 * limit)  # a flood is cut off by zmq itself
    client = BlockingKernelClient(context=context, session=BoundedSession(max_bytes=2 * limit))
    client.load_connection_info(kernel_manager.get_connection_info())
    # The kernel is up (nbclient waited for it): a request sent before the sockets finish
    # connecting is queued by zmq, so no wait for readiness is needed here.
    client.start_channels(iopub=False, stdin=False, hb=False, control=True)
    return client


class GradingClient(AsyncKernelClient):
    """nbclient's client of a grading kernel, whose sockets try to connect again every
    :data:`RECONNECT_MS`. It is ready once the kernel has answered ``kernel_info`` and its
    IOPub channel is connected (a message came on it); jupyter_client's own
    ``wait_for_ready`` then also waits for 0.2 s of silence on IOPub, about a third of a warm
    kernel's start, which nbclient does not need: it reads only the messages of its own
    requests."""

    def _context_default(self):
        # jupyter_client (private): an async client makes a zmq context of its own, not its
        # manager's. No zmq.MAXMSGSIZE here: zmq ends a connection that brings a larger part
        # for good, silently (the cell would wait for its timeout); the grader refuses a
        # message too large itself, with one reason (BoundedSession, and the watchdog).
        context = super()._context_default()
        context.setsockopt(zmq.RECONNECT_IVL, RECONNECT_MS)
        return context

    async def wait_for_ready(self, timeout: float | None = None) -> None:
        deadline = time.monotonic() + (float("inf") if timeout is None else timeout)
        while True:
            self.kernel_info()
            with contextlib.suppress(Empty):
                reply = await self.shell_channel.get_msg(timeout=1)
                if reply["msg_type"] == "kernel_info_reply":
                    await self.iopub_channel.get_msg(timeout=0.2)  # Empty: not connected yet
                    self._handle_kernel_info_reply(reply)
                    return
            if not await self._async_is_alive():
                raise RuntimeError("Kernel died before replying to kernel_info")
            if time.monotonic() > deadline:
                raise RuntimeError(f"Kernel didn't respond in {timeout:.0f} seconds")


def _pending_without_sleep(method):
    """jupyter_client's ``method`` (decorated with its ``in_pending_state``) as that decorator
    makes it, without its sleep: the manager's ``ready`` future is new while the method runs,
    and is set (or fails, logged) when it ends."""
    inner = method.__wrapped__

    @functools.wraps(inner)
    async def pending(self, *args, **kwargs):
        if self._attempted_start or not self._ready:
            self._ready = _get_future()
        try:
            out = await inner(self, *args, **kwargs)
        except Exception as error:
            self._ready.set_exception(error)
            self.log.exception(self._ready.exception())  # as jupyter_client: retrieved
            raise
        if self.owns_kernel:
            self._ready.set_result(None)
        return out

    return pending


class GradingKernelManager(AsyncKernelManager):
    """A kernel manager whose connection file the sandboxed kernel's user (``owner``) can
    read, and whose clients refuse messages over :data:`MAX_MESSAGE` (a kernel flooding its
    outputs cannot fill the grader's memory with them)."""

    owner: int = NOBODY
    client_factory = Type(GradingClient)  # the class of the clients ``client()`` makes

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        # the clients nbclient makes get copies (clones) of this session, made after
        # SandboxedExecute sets on_refused
        self.session = BoundedSession(max_bytes=MAX_MESSAGE, parent=self)

    def _context_default(self):
        # jupyter_client (private): the traitlets default of ``context``, the zmq context of
        # the manager's own sockets (a shutdown request's); its clients make their own
        context = super()._context_default()
        context.setsockopt(zmq.MAXMSGSIZE, MAX_MESSAGE)
        return context

    # jupyter_client (private): its in_pending_state wraps both, and sleeps 10 ms after each
    # "so tests can capture the state"; a worker waits that long twice per submission
    start_kernel = _pending_without_sleep(AsyncKernelManager.start_kernel)
    shutdown_kernel = _pending_without_sleep(AsyncKernelManager.shutdown_kernel)

    async def _async_wait(self, pollinterval: float = 0.1) -> None:
        # jupyter_client (private): after a kill (and a shutdown request), it waits for the
        # kernel's end, looking whether it is alive every ``pollinterval``
        await super()._async_wait(pollinterval=min(pollinterval, KILLED_POLL_SECONDS))

    def write_connection_file(self, **kwargs) -> None:
        super().write_connection_file(**kwargs)
        if os.geteuid() == 0:
            os.chown(self.connection_file, self.owner, self.owner)


NO_CGROUP = cgroups.NO_CGROUP
_said: set[str] = set()  # why kernels have no cgroup, once each per process


def _cgroup_limits(plan: KernelPlan) -> tuple[int, int, float]:
    """The cgroup limits of ``plan``'s kernel: memory bytes, tasks, cores. The tasks are
    the kernel's process limit, which the cgroup counts with the sandbox's own two or three
    processes."""
    limits = plan.limits or sandbox.Limits(memory_mb=plan.memory_limit_mb)
    return limits.cgroup_bytes(), limits.processes, limits.cpus


class OneKernelSpec(KernelSpecManager):
    """Knows one kernel spec, the grading kernel's, whatever the notebook names."""

    def __init__(self, spec: KernelSpec, **kwargs):
        super().__init__(**kwargs)
        self.spec = spec

    def get_kernel_spec(self, kernel_name: str) -> KernelSpec:
        return self.spec


def _folder_bytes(folder: Path) -> int:
    """The bytes of the files under ``folder``, at any depth (links not followed)."""
    total = 0
    for top, _, names in os.walk(folder):
        for name in names:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(top, name)).st_size
    return total


@dataclass
class Watchdog:
    """Kills a kernel (and every process it started) whose memory passes ``limit_mb``: where
    it has a ``cgroup`` (:mod:`.cgroups`), when Linux's out-of-memory killer ended one of its
    processes at the cgroup's limit (the memory Linux holds for it counted); elsewhere, when
    its processes' memory together passes ``limit_mb``; or that is still running at ``deadline``
    (``(time.monotonic() value, reason)``); or that fills its socket folder (``sockets``), the
    one folder of the host it can write (where the grader is not root); or that makes the
    grading process itself grow by more than ``grader_mb`` since the kernel started, which a
    message of many parts does while it arrives (zmq limits the size of each part, not their
    number; :class:`BoundedSession` refuses the message once it is in, with the same reason)."""

    limit_mb: int
    deadline: tuple[float, str] | None = None
    sockets: Path | None = None
    grader_mb: int = 1024
    cgroup: cgroups.KernelCgroup | None = None
    _killed: str | None = None
    _stop: threading.Event = field(default_factory=threading.Event, repr=False)

    @property
    def killed(self) -> str | None:
        """Why the kernel was stopped, or None. Read when the kernel is found dead: a kill
        by Linux's out-of-memory killer is seen here even before the next poll."""
        if self._killed is None and self._out_of_memory():
            self._killed = self._memory_reason()
        return self._killed

    def _memory_reason(self) -> str:
        return f"the kernel used more than {self.limit_mb} MiB"

    def _out_of_memory(self) -> bool:
        with contextlib.suppress(OSError, ValueError):
            return self.cgroup is not None and self.cgroup.oom_kills() > 0
        return False

    def watch(self, pid: int) -> None:
        """Start watching the process ``pid`` and its children, in a daemon thread."""
        import psutil

        self._pid = pid
        self._grader = psutil.Process()
        self._grader_start = self._grader.memory_info().rss
        threading.Thread(target=self._poll, args=(pid,), daemon=True,
                         name="grader-memory-watchdog").start()

    def stop(self) -> None:
        self._stop.set()

    def kill(self, reason: str) -> None:
        """Kill the kernel and every process it started now, for ``reason`` (the first reason
        given is kept as :attr:`killed`)."""
        import psutil

        if self._killed is None:
            self._killed = reason
        if self.cgroup is not None:
            self.cgroup.kill()
        try:
            process = psutil.Process(self._pid)
            for child in process.children(recursive=True):
                child.kill()
            process.kill()
        except (AttributeError, psutil.Error, OSError):  # not started, or already gone
            pass

    def _why(self, process, tick: int) -> str | None:
        limit = self.limit_mb * 2**20
        if self.cgroup is not None:
            if self._out_of_memory():
                return self._memory_reason()
        else:
            # The resident sizes, cheap to read, bound that memory from above (they count
            # shared pages too, once per process): only past the limit is smaps_rollup read.
            resident = process.memory_info().rss + sum(
                c.memory_info().rss for c in process.children(recursive=True))
            if resident > limit and tree_memory_bytes(process.pid) > limit:
                return self._memory_reason()
        if self.deadline is not None and time.monotonic() > self.deadline[0]:
            return self.deadline[1]
        if self._grader.memory_info().rss - self._grader_start > self.grader_mb * 2**20:
            return TOO_LARGE
        if self.sockets is not None and tick % 10 == 0 and _folder_bytes(self.sockets) > (
                SOCKET_FILES):
            return "the kernel wrote files into its socket folder"
        return None

    def _poll(self, pid: int) -> None:
        import psutil

        try:
            process = psutil.Process(pid)
            tick = 0
            while process.is_running() and not self._stop.is_set():
                why = self._why(process, tick)
                if why:
                    self.kill(why)
                    return
                tick += 1
                self._stop.wait(0.1)
        except (psutil.Error, OSError):
            return


#: Bytes of a kernel's own stdout and stderr that the grader keeps (its log, quoted when it
#: does not start); the rest is read and dropped.
LOG_BYTES = 2**20


def log_tail(path: Path, lines: int = 3) -> str:
    """The last lines of a kernel's log, on one line (why it did not start)."""
    try:
        text = path.read_text(errors="replace").strip().splitlines()
    except OSError:
        return "no kernel log"
    return " / ".join(text[-lines:])[-400:] or "the kernel wrote nothing"


class KernelLog:
    """A kernel's own stdout and stderr (not the notebook's outputs): a FIFO in its host
    folder (:attr:`.folders.Folders.output`, which a forked kernel opens by name), copied
    by a grader thread into :attr:`.folders.Folders.log`, at most :data:`LOG_BYTES`. The
    kernel never holds a descriptor of a host file: through one it could reserve disk
    space (``fallocate`` with ``FALLOC_FL_KEEP_SIZE``) past every file-size limit."""

    def __init__(self, folders: Folders):
        self.folders = folders
        os.mkfifo(folders.output, 0o600)
        self._read = os.open(folders.output, os.O_RDONLY | os.O_NONBLOCK)
        self._held = os.open(folders.output, os.O_WRONLY)  # no end of file before the kernel's
        os.set_blocking(self._read, True)
        self._copier = threading.Thread(target=self._copy, name="kernel-log", daemon=True)
        self._copier.start()

    def writer(self):
        """A writing end, for a kernel started as a process (its stdout and stderr)."""
        return open(self.folders.output, "wb", buffering=0)  # noqa: SIM115 - the caller's

    def _copy(self) -> None:
        kept = 0
        with open(self.folders.log, "wb") as log:
            while chunk := os.read(self._read, 2**16):
                if kept < LOG_BYTES:
                    log.write(chunk[:LOG_BYTES - kept])
                    log.flush()
                    kept += len(chunk)

    def close(self) -> None:
        """Stop copying once the kernel's ends are closed (its processes are gone)."""
        os.close(self._held)
        self._copier.join(timeout=5)
        if not self._copier.is_alive():
            os.close(self._read)


@dataclass
class KernelPlan:
    """How to start one grading kernel: its command line, its folders and its user."""

    argv: list[str]
    folders: Folders
    memory_limit_mb: int
    uid: int | None = None
    log: object = None
    #: Fork the kernel from this zygote with this request (:mod:`.warm`), not from argv.
    warm: tuple | None = None
    #: The kernel's limits (for its cgroup); None: ``memory_limit_mb`` and the defaults.
    limits: sandbox.Limits | None = None


class SandboxedExecute(Execute):
    """nbgrader's Execute, with a kernel started from the command line of a :class:`KernelPlan`.

    Call :meth:`use_kernel` before ``preprocess``; after it, call :meth:`release_kernel`.
    Each kernel gets a cgroup of its own where the machine has one (:mod:`.cgroups`); where
    it has none, the notebook's notes say so (:data:`NO_CGROUP`).
    """

    def use_kernel(self, plan: KernelPlan) -> None:
        """Start the next notebook's kernel as ``plan`` says, in a cgroup of its own."""
        self._plan = plan
        self.kernel_started = False
        self._start_error: str | None = None  # why it did not start, if it did not
        self.cell_timed_out: float | None = None
        self.cgroup, why = cgroups.create(*_cgroup_limits(plan))
        #: what the kernel's cgroup saw, read before it was removed (see release_kernel)
        self.cgroup_report: dict | None = None
        if self.cgroup is None and why not in _said:
            _said.add(why)
            self.log.warning("no cgroup per grading kernel (%s): kernels are bounded by "
                             "rlimits only", why)
        if self.cgroup is not None and plan.warm is None:
            plan.argv = [*sandbox.enter_cgroup(self.cgroup.procs_files()), *plan.argv]
        self.watchdog = Watchdog(plan.memory_limit_mb, sockets=plan.folders.ipc,
                                 cgroup=self.cgroup)

    def release_kernel(self) -> None:
        """Stop watching the kernel, remove its cgroup (anything left in it killed) and
        close its log; a kernel that did not start is said in :func:`not_started`, with the
        last lines of its log."""
        self.watchdog.stop()
        if self.cgroup is not None:
            with contextlib.suppress(OSError, ValueError):
                self.cgroup_report = {
                    "folders": {k: str(v) for k, v in self.cgroup.folders.items()},
                    "limit": self.cgroup.limit, "peak": self.cgroup.peak_bytes(),
                    "oom_kills": self.cgroup.oom_kills(),
                    "pids_refused": self.cgroup.pids_refused()}
            self.cgroup.remove()
        if self._plan.log is not None:
            self._plan.log.close()
        if getattr(self, "_start_error", None) is not None:
            error, self._start_error = self._start_error, None
            _not_started.append(f"{error}: {log_tail(self._plan.folders.log)}")

    def preprocess(self, nb, resources, *args, **kwargs):
        try:
            return super().preprocess(nb, resources, *args, **kwargs)
        except Exception as exc:
            if not getattr(self, "kernel_started", True):  # it never answered kernel_info
                self._start_error = self.watchdog.killed or f"{type(exc).__name__}: {exc}"
            raise
        finally:
            if getattr(self, "cgroup", True) is None:
                from autograd_course.grading.preprocessors.cells import notes

                if NO_CGROUP not in notes(resources):
                    notes(resources).append(NO_CGROUP)

    def kernel_pid(self) -> int | None:
        """The process id of the kernel's command (bubblewrap's, when sandboxed; the forked
        kernel's first process, when warm)."""
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
        self.km.owner = NOBODY if plan.uid is None else plan.uid
        if plan.warm is not None:
            # jupyter_client (public): a manager given a provisioner before its start uses it
            self.km.provisioner = warm.WarmProvisioner(
                kernel_id=str(uuid.uuid4()), kernel_spec=spec, parent=self.km)
            self.km.provisioner.zygote, self.km.provisioner.request = plan.warm
            self.km.provisioner.cgroup = self.cgroup
        self.km.session.on_refused = self.watchdog.kill  # a message refused stops the kernel
        return self.km

    async def async_start_new_kernel(self, **kwargs):
        # The kernel's own stdout and stderr (not the notebook's outputs) go to a log, which
        # is quoted when the kernel fails to start. nbclient passes these keyword arguments
        # through ``AsyncKernelManager.start_kernel`` to the provisioner's ``Popen``.
        folders = self._plan.folders
        self._plan.log = KernelLog(folders)
        writer = self._plan.log.writer()
        kwargs.update(cwd=str(folders.work), stdout=writer, stderr=writer)
        try:
            return await super().async_start_new_kernel(**kwargs)
        finally:
            writer.close()  # the kernel has its own copy (a forked one opens the FIFO itself)

    start_new_kernel = run_sync(async_start_new_kernel)

    def start_new_kernel_client(self):
        client = super().start_new_kernel_client()
        self.kernel_started = True
        lock_sockets(self._plan.folders)  # its sockets are made: no more files there
        pid = self.kernel_pid()
        if pid is not None:
            self.watchdog.watch(pid)
        return client

    def _update_display_id(self, display_id, msg):
        # nbclient (private): rewrites, in place, every earlier output that carries the display
        # id of an update. Outputs are kept here without display ids (see
        # ``preprocessors.execute``), so an update, which the output budget does not see, can
        # never grow them: none applies.
        return None

    def handle_comm_msg(self, outs, msg, cell_index):
        # nbclient (public hook): keeps widget state and buffers from comm messages, outside
        # the output budget; a graded notebook keeps no widgets.
        return None

    async def _async_handle_timeout(self, timeout, cell=None):
        # nbclient (private): called when a cell's reply does not come within its timeout;
        # with interrupt_on_timeout it interrupts the kernel and returns an error reply.
        self.cell_timed_out = timeout
        return await super()._async_handle_timeout(timeout, cell)
