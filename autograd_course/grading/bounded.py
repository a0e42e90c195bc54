"""One wall-clock budget per submission, held by the parent of the work it bounds.

A :class:`Child` runs the calls its parent sends, one at a time; the parent keeps the clock
(why, and the plain-nbgrader case: docs/design.md#autograd_coursegradingboundedpy):

- each call has its seconds (:meth:`Child.call`, or :meth:`Child.send` and :meth:`Child.receive`
  for many children at once); past them the child and every process under it are killed
  (:func:`kill_tree`), and the call raises :class:`Overrun`; the next call needs a new child;
- a child that dies during a call raises :class:`Died`; an exception in the call comes back as
  itself; any other ``BaseException``, or one that cannot be pickled, as :class:`Raised`;
- a child whose parent dies exits, calling its ``on_orphan``;
- a child, and all it starts, is out of reach of the terminal's Ctrl-C (SIGINT ignored,
  ``setsid``): only the parent is interrupted, and it kills its children (:meth:`Child.kill`);
- children import this package from where the parent did (``PYTHONSAFEPATH``,
  :func:`.boundary.sandbox.package_environment`).

Users: :mod:`.runner` (on a Dask worker, :func:`.tasks.grade_within`) and :mod:`.selfcheck`.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import pickle
import shutil
import signal
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

#: What :meth:`Child.receive` gives while the call still runs.
PENDING = object()


class Overrun(Exception):
    """The call ran past its budget; its child was killed."""


class Died(Exception):
    """The child died during the call (a signal, out of memory)."""


class Raised(Exception):
    """The call raised what the parent must not raise itself (``SystemExit``, any
    ``BaseException`` that is not an ``Exception``), or what cannot be pickled: its type and
    message."""


def said(exc: BaseException) -> str:
    """A call's exception as a reason: its type and message."""
    return str(exc) if isinstance(exc, Raised) else f"{type(exc).__name__}: {exc}"


def context(preload: list[str]):
    """The start method of children: ``forkserver`` with ``preload`` imported once in the
    server (children fork from it), else ``spawn``."""
    if "forkserver" in multiprocessing.get_all_start_methods():
        found = multiprocessing.get_context("forkserver")
        found.set_forkserver_preload(preload)
        return found
    return multiprocessing.get_context("spawn")


def start_early(ctx) -> None:
    """Start ``ctx``'s forkserver now, if it has one (:func:`context`) not running yet, as a
    child is started (:func:`_started_apart`): it imports its preload while the caller goes
    on, and the first :class:`Child` forks at once instead of waiting for those imports."""
    if ctx.get_start_method() == "forkserver":
        from multiprocessing import forkserver

        with _started_apart():
            forkserver.ensure_running()
        _early[:] = [forkserver._forkserver._forkserver_pid]  # noqa: SLF001 - to stop it


_early: list[int | None] = []  # the forkserver start_early started, while no child used it


def stop_early() -> None:
    """Stop the forkserver that :func:`start_early` started when no :class:`Child` was
    started from it (a run that found nothing to grade): at once, even mid-import, rather
    than leave it behind the caller until its imports are done."""
    from multiprocessing import forkserver

    server = forkserver._forkserver  # noqa: SLF001 - multiprocessing's one forkserver
    if not _early or _early[0] is None or server._forkserver_pid != _early[0]:  # noqa: SLF001
        return
    with contextlib.suppress(ProcessLookupError):
        os.kill(_early.pop(), signal.SIGKILL)
    server._stop()  # noqa: SLF001 - closes its pipe and socket, and reaps it


_starting = threading.Lock()


@contextlib.contextmanager
def _started_apart():
    """While a child (or the forkserver) is started: SIGINT ignored, which the new process
    inherits (in the main thread only, where Python lets a handler be set), and the
    environment of :func:`.sandbox.package_environment` with ``PYTHONSAFEPATH``."""
    from autograd_course.grading.boundary.sandbox import package_environment

    env = {**package_environment(), "PYTHONSAFEPATH": "1"}
    main = threading.current_thread() is threading.main_thread()
    with _starting:
        saved = {name: os.environ.get(name) for name in env}
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN) if main else None
        os.environ.update(env)
        try:
            yield
        finally:
            for name, value in saved.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value
            if main:
                signal.signal(signal.SIGINT, previous)


class Child:
    """A worker process that runs its parent's calls one at a time (see the module).

    ``initializer(*initargs)`` runs first in it; ``on_orphan()`` runs there if the parent
    dies. Each child has a scratch folder of its own (:attr:`scratch`, removed with it,
    however it ends), given to ``initializer`` as its first argument."""

    def __init__(self, ctx, initializer: Callable | None = None, initargs: tuple = (),
                 on_orphan: Callable | None = None):
        _early.clear()  # the forkserver is in use
        self.scratch = Path(tempfile.mkdtemp(prefix="autograd-course-worker-"))
        self.conn, theirs = ctx.Pipe()
        self.process = ctx.Process(
            target=_serve, name="autograd-course-grading",
            args=(theirs, os.getpid(), initializer, (str(self.scratch), *initargs), on_orphan))
        # A Dask worker is a daemonic process, which multiprocessing lets have no children
        # (lest they outlive it): a child here ends with its parent anyway (_serve watches it).
        flags = multiprocessing.current_process()._config  # noqa: SLF001 - its own flags
        daemonic = flags.pop("daemon", None)
        try:
            with _started_apart():
                self.process.start()
        finally:
            if daemonic is not None:
                flags["daemon"] = daemonic
        theirs.close()
        self.deadline: float | None = None  # of the call in progress
        self.seconds = 0.0

    def send(self, fn: Callable, args: tuple, seconds: float) -> None:
        """Start the call ``fn(*args)``, which may take ``seconds``."""
        self.seconds, self.deadline = seconds, time.monotonic() + seconds
        self.conn.send((fn, args))

    @property
    def waitables(self) -> list:
        """What :func:`multiprocessing.connection.wait` wakes on: a reply, or the child's end."""
        return [self.conn, self.process.sentinel]

    def receive(self, timeout: float | None = None):
        """The call's result, waiting at most until its deadline (and ``timeout``, when
        given: then :data:`PENDING` if nothing came). Raises what the call raised,
        :class:`Overrun` or :class:`Died`."""
        from multiprocessing.connection import wait

        left = max(0.0, self.deadline - time.monotonic())
        ready = wait(self.waitables, left if timeout is None else min(left, timeout))
        if self.conn in ready:
            try:
                status, value = self.conn.recv()
            except (EOFError, OSError):  # it died while it answered
                return self._died()
            self.deadline = None
            if status == "error":
                raise value
            return value
        if self.process.sentinel in ready:
            return self._died()
        if time.monotonic() < self.deadline:
            return PENDING
        self.kill()
        raise Overrun(f"the submission's time budget of {self.seconds:g} s "
                      "(c.JudgedExecute.submission_seconds) was spent before its grading was "
                      "done: it was stopped")

    def call(self, fn: Callable, *args, seconds: float):
        """``fn(*args)`` in the child, within ``seconds`` (see :meth:`receive`)."""
        self.send(fn, args, seconds)
        while (result := self.receive()) is PENDING:
            continue
        return result

    @property
    def alive(self) -> bool:
        return self.process.is_alive()

    def _died(self):
        self.kill()
        raise Died(f"the grading process died (exit status {self.process.exitcode})")

    def kill(self) -> None:
        """Kill the child and everything under it, and remove its scratch folder. Only a
        child not yet reaped (``exitcode`` None) is looked for by its pid: once reaped, its pid
        may be another process's (what it started dies with it: ``--die-with-parent``)."""
        if self.process.pid is not None and self.process.exitcode is None:
            kill_tree(self.process.pid)
        self.process.join(5)
        self._cleanup()

    def kill_soon(self) -> None:
        """Stop the child and everything under it at once (:func:`kill_tree`), without waiting
        for it: :meth:`kill` then reaps it. For a parent that stops many children (Ctrl-C)."""
        if self.process.pid is not None and self.process.exitcode is None:
            kill_tree(self.process.pid)

    def close(self) -> None:
        """Let the child end (it finishes no call), else kill it."""
        close_all([self])

    def _cleanup(self) -> None:
        self.conn.close()
        shutil.rmtree(self.scratch, ignore_errors=True)


def close_all(children: list[Child]) -> None:
    """Let every child of ``children`` end at once (each finishes no call: its zygote and
    folders go as it exits), then reap each, killing one still there 10 s later."""
    for child in children:
        try:
            child.conn.send(None)
        except OSError:
            pass
    deadline = time.monotonic() + 10
    for child in children:
        child.process.join(max(0.0, deadline - time.monotonic()))
        if child.process.exitcode is None:
            child.kill()
        child._cleanup()


def _serve(conn, parent: int, initializer, initargs, on_orphan) -> None:
    """A child's life: run each call it is sent, and send back its result or exception. It
    leaves the terminal's session and ignores SIGINT (its parent handles a Ctrl-C)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    with contextlib.suppress(OSError):  # already a session's leader
        os.setsid()

    def watch() -> None:
        while True:
            time.sleep(0.5)
            try:
                os.kill(parent, 0)
            except ProcessLookupError:
                if on_orphan is not None:
                    on_orphan()
                shutil.rmtree(initargs[0], ignore_errors=True)  # its scratch folder
                os._exit(1)

    threading.Thread(target=watch, name="watch-the-parent", daemon=True).start()
    if initializer is not None:
        initializer(*initargs)
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):
            return
        if message is None:
            return
        fn, args = message
        try:
            reply = ("ok", fn(*args))
        except KeyboardInterrupt:
            raise
        except Exception as exc:  # noqa: BLE001 - the call's failure goes to the parent
            reply = ("error", exc if _round_trips(exc) else Raised(f"{type(exc).__name__}: {exc}"))
        except BaseException as exc:  # noqa: BLE001 - SystemExit and the like, as data
            reply = ("error", Raised(f"{type(exc).__name__}: {exc}"))
        try:
            conn.send(reply)
        except Exception as exc:  # noqa: BLE001 - an exception (or result) pickle refuses
            conn.send(("error", Raised(f"{type(exc).__name__}: {exc}")))


def _round_trips(exc: Exception) -> bool:
    """Whether ``exc`` can be pickled and unpickled (an exception whose class needs other
    arguments than its message cannot be made again in the parent)."""
    try:
        pickle.loads(pickle.dumps(exc))
    except Exception:  # noqa: BLE001 - any failure means no
        return False
    return True


def descendants(pid: int) -> set[int]:
    """Every process under ``pid`` now (read from /proc: children, theirs, and so on)."""
    children: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()
        except OSError:  # it ended meanwhile
            continue
        children.setdefault(int(fields[1]), []).append(int(entry.name))
    found, todo = set(), [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def kill_tree(pid: int) -> None:
    """Kill ``pid`` and every process under it: each is stopped first (so none forks or is
    orphaned meanwhile), again until no new one appears, then all are killed."""
    stopped = {pid}
    _signal(pid, signal.SIGSTOP)
    for _ in range(100):
        new = descendants(pid) - stopped  # a stopped process keeps its children
        if not new:
            break
        for child in new:
            _signal(child, signal.SIGSTOP)
        stopped |= new
    for each in stopped:
        _signal(each, signal.SIGKILL)


def _signal(pid: int, which: int) -> None:
    try:
        os.kill(pid, which)
    except (ProcessLookupError, PermissionError):
        pass
