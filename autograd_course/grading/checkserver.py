"""The warm check's service: ``autograd-course check`` for one course, kept ready.

    python -P -m autograd_course.grading.checkserver COURSE_ROOT SOCKET

The course's Jupyter server extension starts it (:class:`autograd_course.lab.warmcheck.Service`,
which says what asks it and how); it serves one course, for its user, until the server stops.

- It listens on ``SOCKET`` (made by this user only, mode 0600), then imports the grader, so
  that the first check need not wait for that.
- Each connection asks one check (:func:`answer`): the report ``check`` prints for the
  notebook, by the same function (:func:`autograd_course.cli.check_lines`). Checks run one at
  a time, in the order asked; a connection from another user, or with a request that is no
  bounded JSON object, is closed unanswered.
- The first check is graded as ``check`` grades one notebook, with a cold kernel. Once it is
  answered the grading child starts its zygote (:func:`.selfcheck.prewarm`), and each later
  check is graded in a warm kernel forked from it, as ``check`` of many notebooks grades its
  second and later ones: from then on a check costs what grading the notebook costs.
- Before each check it compares the code it runs with the code on disk (:func:`code_now`:
  this package's files, nbgrader's and torch's versions): where they differ it answers
  ``stale`` (the caller checks cold) and ends, and the server starts a new one.
- It ends with the server: on SIGTERM, or when its parent is gone.

It says one line on stdout per check answered (the notebook, the seconds it took).
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import sys
import threading
import time
from importlib import metadata
from pathlib import Path

from autograd_course.lab import warmcheck

#: The package this service runs.
PACKAGE = Path(__file__).resolve().parent.parent
#: Seconds a client may take to send its request.
REQUEST_SECONDS = 10.0


def code_now() -> tuple:
    """The code a check runs, as it is on disk now: each of this package's modules (path,
    size, modification time) and the versions of nbgrader and torch."""
    files = sorted((str(path.relative_to(PACKAGE)), info.st_size, info.st_mtime_ns)
                   for path in PACKAGE.rglob("*.py") if "__pycache__" not in path.parts
                   for info in [path.stat()])
    return (tuple(files), metadata.version("nbgrader"), metadata.version("torch"))


def listen(path: Path) -> socket.socket:
    """A socket listening at ``path``, readable and writable by this user only; a socket
    left there by a service that is gone is replaced (OSError when one still answers)."""
    if path.is_socket():
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
            try:
                probe.connect(str(path))
            except OSError:
                path.unlink()  # nobody listens: a service that ended without removing it
            else:
                raise OSError(f"a service already listens at {path}")
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)
    try:
        server.bind(str(path))
    finally:
        os.umask(old)
    server.listen(16)
    return server


def answer(root: Path, request: dict) -> dict:
    """The answer to one request: what ``check`` prints of the notebook after its path (the
    student id's line, then the report or the FAILED line) and its line on stderr."""
    from autograd_course import cli

    notebook, student = request.get("notebook"), request.get("student")
    environ = request.get("environ")
    if not (isinstance(notebook, str) and os.path.isabs(notebook)
            and (student is None or isinstance(student, str)) and isinstance(environ, dict)
            and all(isinstance(k, str) and isinstance(v, str) for k, v in environ.items())):
        raise ValueError("a request that names no notebook, student and environment")
    environ = {k: v for k, v in environ.items() if k in warmcheck.ENVIRONMENT}
    lines, error = cli.check_lines(root, Path(notebook), student, environ)
    return {"lines": lines, "error": error}


def _watch_parent(parent: int) -> None:
    """End this process (its atexit handlers stop the grading child) when ``parent`` is
    gone: the server was killed."""
    while True:
        time.sleep(0.5)
        if os.getppid() != parent:
            os.kill(os.getpid(), signal.SIGTERM)
            return


def serve(root: Path, path: Path) -> None:
    """Answer checks of the course at ``root`` on the socket at ``path`` until stopped."""
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # atexit: the children go too
    threading.Thread(target=_watch_parent, args=(os.getppid(),), daemon=True).start()
    server = listen(path)
    try:
        from autograd_course import cli  # noqa: F401 - imported before the first check
        from autograd_course.grading import selfcheck
        from autograd_course.grading.boundary import warm

        code = code_now()
        warm.plan(1)  # the first check grades one notebook, with a cold kernel
        warmed = False
        while True:
            conn, _ = server.accept()
            with conn:
                if not warmcheck.same_user(conn):
                    continue
                try:
                    conn.settimeout(REQUEST_SECONDS)
                    request = warmcheck.receive(conn, warmcheck.REQUEST_LIMIT)
                except (OSError, ValueError):
                    continue
                conn.settimeout(None)
                if code_now() != code:
                    with contextlib.suppress(OSError):
                        warmcheck.send(conn, {"stale": True})
                    return
                began = time.monotonic()
                try:
                    said = answer(root, request)
                except ValueError:
                    continue
                print(f"checked {request['notebook']} in {time.monotonic() - began:.2f} s",
                      flush=True)
                with contextlib.suppress(OSError):  # the asker went away (an interrupted cell)
                    warmcheck.send(conn, said)
            if not warmed:
                warmed = selfcheck.prewarm(root)
    finally:
        server.close()
        with contextlib.suppress(OSError):
            path.unlink()


def main(argv: list[str] | None = None) -> None:
    root, path = (argv if argv is not None else sys.argv[1:])
    serve(Path(root).resolve(), Path(path))


if __name__ == "__main__":
    main()
