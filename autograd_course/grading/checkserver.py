"""The warm check's service: ``autograd-course check`` for one course, kept ready.

    python -P -m autograd_course.grading.checkserver COURSE_ROOT SOCKET

The course's Jupyter server extension starts it (:class:`autograd_course.warmcheck.Service`,
which says what asks it and how); it serves one course, for its user, until the server stops.

- It listens on ``SOCKET`` (made by this user only, mode 0600), then imports the grader, so
  that its first check need not wait for that.
- Each connection asks one check (:func:`answer`): the report ``check`` prints for the
  notebook, by the same function (:func:`autograd_course.cli.check_lines`). Checks run one at
  a time, in the order asked. A connection from another user or user namespace, or with a
  request that is no bounded JSON object of the known shape (:func:`request_of`), is closed
  unanswered; a request whose verdict variables (thread counts, ``PYTHONPATH``, what the
  config names: :func:`.warmcheck.verdict_environment`) differ from this process's is
  ``declined``: the asker checks cold, with its own.
- The first check is graded with a cold kernel, as ``check`` grades one notebook; its kernel's
  start also starts the grading child's zygote, beside it, where the service may use two
  cores or more (the second is mostly idle while a check runs). Once it is answered
  (:func:`.selfcheck.prewarm`), each later check is graded in a warm kernel forked from the
  zygote, waiting for it where it still starts, as a grading worker's notebooks do.
- Before each check it compares the code it runs with the code on disk (:func:`code_now`):
  where they differ it answers ``stale`` and ends, and the server starts a new one.
- An asker that hangs up stops its check (:func:`.selfcheck.abandon`): the next one need not
  wait for it. A check that fails in the grader itself (not in the notebook) is closed
  unanswered (the asker checks cold) and the grading child is replaced; so is a child whose
  report says its kernel ran without the sandbox or the seccomp filter, whose probes a later
  check must make again.
- It ends with the server: on SIGTERM, or when its parent is gone, at once, also in the
  middle of a check (:func:`stop`): its grading child goes with its zygote and kernels, and
  its socket and temporary folders are removed.

It says one line on stdout per check answered (the notebook, the seconds it took).
"""

from __future__ import annotations

import contextlib
import os
import select
import shutil
import signal
import socket
import sys
import tempfile
import threading
import time
import traceback
from importlib import metadata
from pathlib import Path

from autograd_course import warmcheck

#: The package this service runs.
PACKAGE = Path(__file__).resolve().parent.parent
#: The distributions whose versions a check's verdict may depend on (with Python's own).
DISTRIBUTIONS = ("nbgrader", "nbconvert", "nbformat", "nbclient", "jupyter_client",
                 "ipykernel", "torch", "numpy")
#: Seconds a client may take to send its request.
REQUEST_SECONDS = 10.0
#: What a report says when its kernel ran without the sandbox or the seccomp filter
#: (``execute.NOT_SANDBOXED``, ``sandbox.SECCOMP_OFF``): probes a later check makes again.
UNPROTECTED = ("note: not sandboxed:", "note: seccomp off:")


def code_now() -> tuple:
    """The code a check runs, as it is on disk now: each file of this package (path, size,
    modification time), Python's version and those of :data:`DISTRIBUTIONS`."""
    files = sorted((str(path.relative_to(PACKAGE)), info.st_size, info.st_mtime_ns)
                   for path in PACKAGE.rglob("*") if "__pycache__" not in path.parts
                   for info in [path.stat()] if path.is_file())
    return (tuple(files), sys.version,
            tuple(metadata.version(name) for name in DISTRIBUTIONS))


def listen(path: Path) -> socket.socket:
    """A socket listening at ``path``, readable and writable by this user only; a socket
    left there by a service that is gone is replaced (OSError when one still answers)."""
    if path.is_socket():
        if warmcheck.answers(path):
            raise OSError(f"a service already listens at {path}")
        path.unlink()  # nobody listens: a service that ended without removing it
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)
    try:
        server.bind(str(path))
    finally:
        os.umask(old)
    server.listen(16)
    return server


def request_of(message: dict) -> tuple[Path, str | None, dict, dict]:
    """The notebook (absolute), student, environment and verdict environment a request names;
    ValueError for a request of another shape."""
    notebook, student = message.get("notebook"), message.get("student")
    environ, verdict = message.get("environ"), message.get("verdict_environ")
    if not (isinstance(notebook, str) and os.path.isabs(notebook)
            and (student is None or isinstance(student, str))
            and all(isinstance(e, dict) and all(isinstance(k, str) and isinstance(v, str)
                                                for k, v in e.items())
                    for e in (environ, verdict))):
        raise ValueError("a request that names no notebook, student and environment")
    environ = {k: v for k, v in environ.items() if k in warmcheck.ENVIRONMENT}
    return Path(notebook), student, environ, verdict


def answer(root: Path, notebook: Path, student: str | None, environ: dict) -> dict:
    """The answer to one request: what ``check`` prints of the notebook after its path (the
    student id's line, then the report or the FAILED line) and its line on stderr."""
    from autograd_course import cli

    lines, error = cli.check_lines(root, notebook, student, environ)
    return {"lines": lines, "error": error}


def _hung_up(conn: socket.socket) -> bool:
    """Whether the other end of ``conn`` has closed it (it sends nothing after its request)."""
    ready, _, _ = select.select([conn], [], [], 0)
    if not ready:
        return False
    try:
        return conn.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True


def _while_asked(conn: socket.socket, done: threading.Event) -> None:
    """Stop the check in progress (:func:`.selfcheck.abandon`) if its asker hangs up."""
    from autograd_course.grading import selfcheck

    while not done.wait(0.2):
        if _hung_up(conn):
            selfcheck.abandon()
            return


_stopping: list[Path] = []  # the socket and the scratch folder, once serving


def stop(*_) -> None:
    """End this process at once: its grading child (zygote, kernels) killed, its socket and
    scratch folder removed."""
    from autograd_course.grading import selfcheck

    with contextlib.suppress(Exception):
        selfcheck.drop_child()
    for path in _stopping:
        with contextlib.suppress(OSError):
            path.unlink() if path.is_socket() else shutil.rmtree(path)
    os._exit(0)


def _watch_parent(parent: int) -> None:
    """:func:`stop` this process when ``parent`` (the server) is gone."""
    while os.getppid() == parent:
        time.sleep(0.5)
    stop()


def serve(root: Path, path: Path) -> None:
    """Answer checks of the course at ``root`` on the socket at ``path`` until stopped."""
    server = listen(path)
    scratch = Path(tempfile.mkdtemp(prefix="autograd-course-service-"))
    tempfile.tempdir = str(scratch)  # each check's folder: removed by stop() too
    _stopping[:] = [path, scratch]
    signal.signal(signal.SIGTERM, stop)
    threading.Thread(target=_watch_parent, args=(os.getppid(),), daemon=True).start()
    from autograd_course import cli  # noqa: F401 - imported before the first check
    from autograd_course.grading import selfcheck
    from autograd_course.grading.boundary import warm

    code = code_now()
    # the first check's kernel starts the zygote and starts cold beside it, where a second
    # core can start the zygote; on one, the zygote starts once the first check is answered
    warm.plan(None if len(os.sched_getaffinity(0)) > 1 else 1)
    warmed = False
    while True:
        conn, _ = server.accept()
        with conn:
            if not warmcheck.same_user(conn):
                continue
            try:
                conn.settimeout(REQUEST_SECONDS)
                notebook, student, environ, verdict = request_of(
                    warmcheck.receive(conn, warmcheck.REQUEST_LIMIT))
            except (OSError, ValueError):
                continue
            conn.settimeout(None)
            if code_now() != code:
                with contextlib.suppress(OSError):
                    warmcheck.send(conn, {"stale": True})
                stop()
            if verdict != warmcheck.verdict_environment(root, os.environ):
                with contextlib.suppress(OSError):
                    warmcheck.send(conn, {"declined": "another environment"})
                continue
            began, done = time.monotonic(), threading.Event()
            threading.Thread(target=_while_asked, args=(conn, done), daemon=True).start()
            try:
                said = answer(root, notebook, student, environ)
            except Exception:  # noqa: BLE001 - the grader's failure: the asker checks cold
                traceback.print_exc()
                selfcheck.drop_child()
                continue
            finally:
                done.set()
            print(f"checked {notebook} in {time.monotonic() - began:.2f} s", flush=True)
            with contextlib.suppress(OSError):  # the asker went away (an interrupted cell)
                warmcheck.send(conn, said)
        if any(mark in " ".join(said["lines"]) for mark in UNPROTECTED):
            selfcheck.drop_child()  # its probes failed once: a new child makes them again
        if not warmed:
            warmed = selfcheck.prewarm(root)


def main(argv: list[str] | None = None) -> None:
    root, path = (argv if argv is not None else sys.argv[1:])
    serve(Path(root).resolve(), Path(path))


if __name__ == "__main__":
    main()
