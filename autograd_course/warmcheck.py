"""The warm check: a learner's hidden-test check answered by a process that stays ready.

A cold ``autograd-course check`` starts Python, imports nbgrader, starts a grading child that
imports torch and the judge, copies the prepared course and grades the notebook in a cold
sandboxed kernel: seconds, each time. In self-study the learner's JupyterLab keeps those ready
instead: the course's server extension (:mod:`.validate`) starts the **service**
(:mod:`autograd_course.grading.checkserver`, :class:`Service`) for the server's course, and
stops it with the server. The check cell (:mod:`.selfstudy`), nbgrader's Validate button and
``autograd-course check`` ask it first (:func:`ask`) and fall back to the cold check whenever
it does not answer: no service (a terminal without JupyterLab, a course server, another
machine), one still busy starting, or one whose code is older than the package on disk.

What the service answers is what ``autograd-course check`` prints for the notebook, computed
by the same function (:func:`autograd_course.cli.check_lines`) in the same sandbox: the
grading child and its warm kernels are those of a ``check`` of many notebooks, each notebook in
a kernel of its own, forked from a zygote (the isolation tests of warm kernels hold for them).

The service is the learner's own process, reached on a Unix socket (:func:`address`, mode
0600) in Jupyter's runtime folder, which must be the user's alone (mode 0700; where that path
is too long for a socket, a folder of the user's alone in the temporary folder); each side
checks that the other runs as the same user (``SO_PEERCRED``). It is Linux's, as the sandbox
is.

Messages are one JSON object per line, one request and one answer per connection, each bounded
(:data:`REQUEST_LIMIT`, :data:`ANSWER_LIMIT`). A request names the notebook (absolute), the
``--student`` given (or None), the environment that decides the student id and the report's
words (:data:`ENVIRONMENT`) and the variables the verdict may depend on
(:func:`verdict_environment`); the answer holds ``lines`` (what ``check`` prints after the
notebook's path) and ``error`` (its line on stderr, or None); or ``stale`` (the service's code
is older than the package's), or ``declined`` (the asker's verdict variables are not the
service's): the asker checks cold.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import signal
import socket
import stat
import struct
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path

from autograd_course import CHECKED_FROM

#: The environment variables a check's student id and words depend on: the JupyterHub user,
#: the user name as :func:`getpass.getuser` reads it, and where the check was asked from.
ENVIRONMENT = ("JUPYTERHUB_USER", "LOGNAME", "USER", "LNAME", "USERNAME", CHECKED_FROM)
#: The most bytes of a request (a path and a few names) and of an answer (a bounded report).
REQUEST_LIMIT = 64 * 1024
ANSWER_LIMIT = 4 * 2**20
#: Seconds to connect: a service that does not accept at once is not there (or is gone).
CONNECT_SECONDS = 2.0
#: The longest path a Unix socket's address may have (Linux: 108 bytes with the final NUL).
MAX_ADDRESS = 107
#: Set to "0" in the environment, the check never asks a service (``check --cold`` does so).
SWITCH = "AUTOGRAD_COURSE_WARM_CHECK"
#: The environment variables a verdict may depend on besides those the course's config names
#: (:func:`verdict_environment`): what the grader gives the student's kernel
#: (``sandbox.kernel_environment``: the thread counts, ``PYTHONPATH``).
KERNEL_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "PYTHONPATH")


def verdict_environment(root: Path, environ: Mapping[str, str]) -> dict[str, str]:
    """The variables of ``environ`` a check's verdict may depend on: :data:`KERNEL_VARIABLES`
    and every variable whose name the course's ``nbgrader_config.py`` mentions. The service
    answers only a request whose values are its own (else the asker checks cold)."""
    try:
        text = (Path(root) / "nbgrader_config.py").read_text(errors="replace")
    except OSError:
        text = ""
    named = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", text)) | set(KERNEL_VARIABLES)
    return {name: value for name, value in environ.items() if name in named}


def private(folder: Path) -> bool:
    """Whether ``folder`` is a folder of this user's alone (mode 0700 or less, no link)."""
    try:
        info = folder.lstat()
    except OSError:
        return False
    return (stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid()
            and not info.st_mode & 0o077)


def runtime_folder() -> Path | None:
    """Jupyter's runtime folder, when it is :func:`private`; else None: no warm check."""
    from jupyter_core.paths import jupyter_runtime_dir

    folder = Path(jupyter_runtime_dir())
    return folder if private(folder) else None


def short_folder() -> Path | None:
    """A folder of this user's alone in the system's temporary folder, made if missing, for
    a socket whose path in the runtime folder would be too long; None if it is not private."""
    import tempfile

    folder = Path(tempfile.gettempdir()) / f"autograd-course-{os.getuid()}"
    with contextlib.suppress(FileExistsError):
        folder.mkdir(mode=0o700)
    return folder if private(folder) else None


def address(root: Path) -> Path | None:
    """The socket of the service of the course at ``root`` (resolved): one per course and
    user, in :func:`runtime_folder` (in :func:`short_folder` where that path would be too long
    for a socket's); None where there is none (no private folder, not Linux)."""
    if sys.platform != "linux":
        return None
    folder = runtime_folder()
    if folder is None:
        return None
    digest = hashlib.sha256(str(Path(root).resolve()).encode()).hexdigest()[:16]
    name = f"autograd-course-check-{digest}.sock"
    if len(os.fsencode(folder / name)) > MAX_ADDRESS:
        folder = short_folder()
        if folder is None or len(os.fsencode(folder / name)) > MAX_ADDRESS:
            return None
    return folder / name


def same_user(conn: socket.socket) -> bool:
    """Whether the process at the other end of ``conn`` runs as this process's user, in this
    process's user namespace (a sandboxed kernel has one of its own, whatever its uid)."""
    try:
        pid, uid, _gid = struct.unpack("3i", conn.getsockopt(
            socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i")))
        theirs = os.readlink(f"/proc/{pid}/ns/user")
    except OSError:
        return False
    return uid == os.getuid() and theirs == os.readlink("/proc/self/ns/user")


def send(conn: socket.socket, message: dict) -> None:
    """Send ``message``, one line of JSON."""
    conn.sendall(json.dumps(message).encode() + b"\n")


def receive(conn: socket.socket, limit: int) -> dict:
    """The one line of JSON ``conn`` sends, at most ``limit`` bytes (ValueError beyond it, or
    for anything but a JSON object; OSError when the other end goes away first)."""
    data = b""
    while not data.endswith(b"\n"):
        chunk = conn.recv(65536)
        if not chunk:
            raise ConnectionError("the other end closed the connection before a whole message")
        data += chunk
        if len(data) > limit:
            raise ValueError(f"a message over {limit} bytes")
    message = json.loads(data)
    if not isinstance(message, dict):
        raise ValueError("a message that is no JSON object")
    return message


def enabled(environ: Mapping[str, str]) -> bool:
    """Whether a check may ask a service (:data:`SWITCH` not "0")."""
    return environ.get(SWITCH, "") != "0"


def reachable(root: Path, environ: Mapping[str, str] | None = None) -> Path | None:
    """The socket of a service of the course at ``root`` that may answer (it is there, and
    ``environ`` does not switch the warm check off), or None."""
    environ = os.environ if environ is None else environ
    path = address(root) if enabled(environ) else None
    return path if path is not None and path.is_socket() else None


def ask(root: Path, notebook: Path, student: str | None = None,
        environ: Mapping[str, str] | None = None, timeout: float = 600.0) -> dict | None:
    """The service's answer for ``notebook`` (``lines``, ``error``), checked as ``student``
    with ``environ``'s :data:`ENVIRONMENT` (this process's by default) in the course at
    ``root``; None where no service answers it (none there, switched off, gone meanwhile, its
    code stale, or ``timeout`` seconds spent): the caller checks cold."""
    environ = os.environ if environ is None else environ
    path = reachable(root, environ)
    if path is None:
        return None
    request = {"notebook": str(Path(notebook).resolve()), "student": student,
               "environ": {name: environ[name] for name in ENVIRONMENT if name in environ},
               "verdict_environ": verdict_environment(root, environ)}
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        try:
            conn.settimeout(CONNECT_SECONDS)
            conn.connect(str(path))
            if not same_user(conn):
                return None
            conn.settimeout(timeout)
            send(conn, request)
            answer = receive(conn, ANSWER_LIMIT)
        except (OSError, ValueError):  # no service, one gone, a broken answer: check cold
            return None
    if answer.get("stale") or answer.get("declined") or not isinstance(answer.get("lines"), list):
        return None
    if not all(isinstance(line, str) for line in answer["lines"]):
        return None
    error = answer.get("error")
    return {"lines": answer["lines"], "error": error if isinstance(error, str) else None}


# -- the server's side: the service's process ----------------------------------------------------
def answers(path: Path) -> bool:
    """Whether a service listens at ``path`` (a socket file left by one that is gone does not
    answer)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        try:
            probe.settimeout(CONNECT_SECONDS)
            probe.connect(str(path))
        except OSError:
            return False
    return True


class Service:
    """The service process of the course at ``root``, started by the course's Jupyter server
    extension (:meth:`start`), started again when it has ended (its code went stale, or it
    failed: :meth:`watch`, called now and then by the server) and stopped with the server
    (:meth:`stop`). Its output goes to a log beside its socket."""

    #: Seconds before a service that ended soon after its start is started again: doubled at
    #: each such end in a row (from 5 s to 10 min), so a broken one costs little.
    BACK_OFF = (5.0, 600.0)
    #: Seconds a service must have run for its end to count as no failed start.
    SETTLED_SECONDS = 30.0

    def __init__(self, root: Path, log=None):
        from jupyter_core.paths import jupyter_runtime_dir

        self.root, self.log = Path(root).resolve(), log
        with contextlib.suppress(OSError):  # as Jupyter makes it, if it is not there yet
            Path(jupyter_runtime_dir()).mkdir(mode=0o700, parents=True, exist_ok=True)
        self.address = address(self.root)
        self.process: subprocess.Popen | None = None
        self.failures, self.started, self.next_start = 0, 0.0, 0.0

    def command(self) -> list[str]:
        """How the service runs: this Python, ``-P`` (no module of the working folder)."""
        return [sys.executable, "-P", "-m", "autograd_course.grading.checkserver",
                str(self.root), str(self.address)]

    def start(self) -> bool:
        """Start the service (where it has an address, and no other service of the course
        answers there: another JupyterLab's); whether one runs now."""
        if self.address is None:
            return False
        if answers(self.address):
            return True
        env = {k: v for k, v in os.environ.items() if k != "JPY_SESSION_NAME"}
        with open(self.address.with_suffix(".log"), "ab") as log:
            self.process = subprocess.Popen(self.command(), cwd=self.root, env=env,
                                            stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                            start_new_session=True)
        self.started = time.monotonic()
        return True

    def watch(self) -> None:
        """Start the service again if it has ended (and no other answers for the course),
        after a back-off that grows while it keeps ending soon after its start."""
        now = time.monotonic()
        if self.address is None or now < self.next_start:
            return
        if self.process is not None and self.process.poll() is None:
            return
        if self.process is not None:
            soon = now - self.started < self.SETTLED_SECONDS
            self.failures = self.failures + 1 if soon else 0
            self.process = None
            if self.failures:
                first, most = self.BACK_OFF
                pause = min(most, first * 2 ** (self.failures - 1))
                self.next_start = now + pause
                if self.log:
                    self.log.warning("autograd_course: the warm check's service ended soon "
                                     "after its start (see %s); checks run cold, and it is "
                                     "started again in %g s", self.address.with_suffix(".log"),
                                     pause)
                return
        self.start()

    def listening(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for the service to answer; whether it does."""
        deadline = time.monotonic() + timeout
        while self.process is not None and self.process.poll() is None:
            if self.address.is_socket() and answers(self.address):
                return True
            if time.monotonic() > deadline:
                return False
            time.sleep(0.05)
        return False

    def answered(self) -> int:
        """How many checks the course's services have answered: the lines of the log at its
        address, to which each service started there appends (:mod:`.checkserver`)."""
        try:
            log = self.address.with_suffix(".log").read_text(errors="replace")
        except OSError:
            return 0
        return sum(line.startswith("checked ") for line in log.splitlines())

    def stop(self) -> None:
        """Stop the service: on SIGTERM it kills its grading child (with the zygote and the
        kernels), removes its socket and ends, also in the middle of a check."""
        if self.process is None or self.process.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
