"""A real JupyterHub on loopback, with real OS accounts, as the course's deployment runs it.

:func:`running_hub` starts JupyterHub with the course's shared settings
(``deploy/jupyterhub_config.py``), local-process spawners and the proxy that ``make`` installs
(``deploy/node_modules``). Its users are real accounts (:class:`Accounts`), made as root and
removed afterwards; a run that was killed leaves accounts behind, which the next run sweeps
first (they all start with :data:`PREFIX`).

The users' processes must read this environment: Python, the virtual environment and the
course package. A checkout under a folder only root may enter (``/root``, a ``mktemp -d``
folder) hides them, so the Hub runs in a mount namespace of its own (:func:`view_commands`)
where each such folder is a tmpfs, mode 0755, holding only the entries needed, bound from the
real ones: nothing on the machine changes, and every file keeps its own owner and mode.
Commands the test runs as a user (:meth:`Hub.run_as`) enter the same namespace.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import pwd
import shlex
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BASE_CONFIG = ROOT / "deploy" / "jupyterhub_config.py"
PROXY = ROOT / "deploy" / "node_modules" / ".bin" / "configurable-http-proxy"
#: Every account the tests make starts with this.
PREFIX = "agchub-"
#: The token of the test's own Hub service, which spawns servers and makes users' tokens.
ADMIN_TOKEN = uuid.uuid4().hex
#: The Hub's log in password (DummyAuthenticator: only the allowed users may log in).
PASSWORD = "autograd-course-hub-test"


def free_port() -> int:
    """A TCP port free on loopback now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# -- accounts ---------------------------------------------------------------------------
class Accounts:
    """Real OS accounts for one test run, each with a private home (mode 0700)."""

    def __init__(self):
        self.names: list[str] = []

    @staticmethod
    def sweep() -> list[str]:
        """Remove accounts (and their processes) that an earlier, killed run left behind."""
        stale = [entry.pw_name for entry in pwd.getpwall() if entry.pw_name.startswith(PREFIX)]
        for name in stale:
            _remove_account(name)
        return stale

    def add(self, role: str) -> str:
        """Make the account ``PREFIX + role``; return its name."""
        name = PREFIX + role
        subprocess.run(["useradd", "--create-home", "--shell", "/bin/bash", name], check=True,
                       capture_output=True)
        os.chmod(home(name), 0o700)
        self.names.append(name)
        return name

    def remove(self) -> None:
        """Remove every account made, with its home and processes."""
        for name in self.names:
            _remove_account(name)
        self.names.clear()


def _remove_account(name: str) -> None:
    subprocess.run(["pkill", "-KILL", "-u", name], capture_output=True)
    subprocess.run(["userdel", "--remove", "--force", name], capture_output=True)


def home(name: str) -> Path:
    """The home folder of account ``name``."""
    return Path(pwd.getpwnam(name).pw_dir)


def give(path: Path, name: str) -> None:
    """Make ``name`` the owner of ``path`` and everything under it."""
    subprocess.run(["chown", "-R", f"{name}:{name}", str(path)], check=True)


# -- a view of this environment that the accounts can read ------------------------------
def _closed(path: Path) -> bool:
    return not os.stat(path).st_mode & 0o001


def needed_paths() -> list[Path]:
    """What the accounts' processes read: Python, the environment, the course package."""
    return [Path(sys.base_prefix).resolve(), Path(sys.prefix), ROOT]


def view_commands(paths: list[Path], hold: Path) -> list[str]:
    """Shell commands that, in a new mount namespace, let every account reach ``paths``:
    each folder on the way that others may not enter is covered by a tmpfs (mode 0755)
    holding the entries needed, bound from the real ones, kept under ``hold``."""
    exposed: dict[Path, set[str]] = {}
    for path in paths:
        for folder in [*reversed(path.parents), path]:
            if not _closed(folder):
                continue
            if folder == path:
                exposed.setdefault(folder, set()).update(os.listdir(folder))
            else:
                exposed.setdefault(folder, set()).add(path.relative_to(folder).parts[0])
    commands = []
    for i, folder in enumerate(sorted(exposed, key=lambda p: len(p.parts))):
        real = hold / str(i)
        q, r = shlex.quote(str(folder)), shlex.quote(str(real))
        commands += [f"mkdir -p {r}", f"mount --bind {q} {r}",
                     f"mount -t tmpfs -o mode=0755 autograd-course-view {q}"]
        for entry in sorted(exposed[folder]):
            src, dst = shlex.quote(str(real / entry)), shlex.quote(str(folder / entry))
            make = "mkdir" if (folder / entry).is_dir() else "touch"
            commands += [f"{make} {dst}", f"mount --bind {src} {dst}"]
    return commands


# -- the Hub ----------------------------------------------------------------------------
@dataclass
class Hub:
    """A running Hub: its public address, and the namespace its processes see."""

    base: str
    pid: int
    log: Path
    tokens: dict[str, str] = field(default_factory=dict)

    def request(self, method: str, path: str, token: str | None = None, *, json_body=None,
                form: dict | None = None, expect: int | None = None):
        """``method path`` with ``token``; the status and the answer (JSON when it is)."""
        data, headers = None, {}
        if token:
            headers["Authorization"] = f"token {token}"
        if json_body is not None:
            data, headers["Content-Type"] = json.dumps(json_body).encode(), "application/json"
        elif form is not None:
            data = urllib.parse.urlencode(form).encode()
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        request = urllib.request.Request(f"{self.base}/{path.lstrip('/')}", data=data,
                                         headers=headers, method=method)
        try:
            with urllib.request.urlopen(request, timeout=120) as response:
                status, body = response.status, response.read()
        except urllib.error.HTTPError as error:
            status, body = error.code, error.read()
        if expect is not None:
            assert status == expect, f"{method} {path}: {status} {body[:2000]!r}"
        try:
            return status, json.loads(body)
        except ValueError:
            return status, body.decode(errors="replace")

    def api(self, method: str, path: str, **kwargs):
        """The Hub's REST API, as the test's admin service."""
        return self.request(method, f"hub/api/{path}", ADMIN_TOKEN, **kwargs)

    def token(self, user: str) -> str:
        """An API token of ``user`` (with the user's own permissions)."""
        if user not in self.tokens:
            _, answer = self.api("POST", f"users/{user}/tokens", json_body={
                "note": "tests/test_hub.py", "expires_in": 3600}, expect=201)
            self.tokens[user] = answer["token"]
        return self.tokens[user]

    def spawn(self, user: str, timeout: float = 120) -> None:
        """Start ``user``'s server and wait until it is ready."""
        status, answer = self.api("POST", f"users/{user}/server")
        assert status in (201, 202), answer
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            _, model = self.api("GET", f"users/{user}")
            if (model.get("servers") or {}).get("", {}).get("ready"):
                return
            time.sleep(0.5)
        raise AssertionError(f"{user}'s server did not start:\n{self.log.read_text()[-4000:]}")

    def run_as(self, user: str, args: list[str], cwd: Path, timeout: float = 600,
               env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
        """Run ``args`` as ``user`` in the Hub's namespace, as that user's shell would (with
        this process's ``AUTOGRAD_COURSE_*`` variables, and ``env``'s)."""
        extra = env or {}
        entry = pwd.getpwnam(user)
        env = {**extra, "HOME": entry.pw_dir, "USER": user, "LOGNAME": user, "LANG": "C.UTF-8",
               "PATH": os.pathsep.join([str(Path(sys.executable).parent), "/usr/bin", "/bin"]),
               "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1")}
        env.update({k: v for k, v in os.environ.items() if k.startswith("AUTOGRAD_COURSE_")})
        return subprocess.run(
            ["nsenter", f"--mount=/proc/{self.pid}/ns/mnt", f"--wd={cwd}", "setpriv",
             f"--reuid={entry.pw_uid}", f"--regid={entry.pw_gid}", "--init-groups", "--",
             *args], env=env, capture_output=True, text=True, timeout=timeout)

    def execute(self, user: str, notebook: str, code: str, timeout: float = 120) -> str:
        """Run ``code`` in a kernel of ``user``'s server, started for ``notebook`` as
        JupyterLab starts one; return what it printed (and any traceback)."""
        token = self.token(user)
        _, session = self.request("POST", f"user/{user}/api/sessions", token, json_body={
            "path": notebook, "name": Path(notebook).name, "type": "notebook",
            "kernel": {"name": "python3"}}, expect=201)
        url = (self.base.replace("http", "ws", 1)
               + f"/user/{user}/api/kernels/{session['kernel']['id']}/channels")
        try:
            return asyncio.run(_execute(url, token, code, timeout))
        finally:
            self.request("DELETE", f"user/{user}/api/sessions/{session['id']}", token)


async def _execute(url: str, token: str, code: str, timeout: float) -> str:
    from tornado.httpclient import HTTPRequest
    from tornado.websocket import websocket_connect

    connection = await websocket_connect(
        HTTPRequest(url, headers={"Authorization": f"token {token}"}))
    msg_id = uuid.uuid4().hex
    connection.write_message(json.dumps({
        "header": {"msg_id": msg_id, "msg_type": "execute_request", "username": "",
                   "session": uuid.uuid4().hex, "version": "5.3", "date": ""},
        "parent_header": {}, "metadata": {}, "channel": "shell",
        "content": {"code": code, "silent": False, "store_history": False,
                    "user_expressions": {}, "allow_stdin": False}}))
    output = []
    try:
        while True:
            raw = await asyncio.wait_for(connection.read_message(), timeout)
            assert raw is not None, "the kernel's websocket closed"
            message = json.loads(raw)
            if message.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            kind, content = message["msg_type"], message["content"]
            if kind == "stream":
                output.append(content["text"])
            elif kind == "error":
                output.append("\n".join(content["traceback"]))
            elif kind == "status" and content["execution_state"] == "idle":
                return "".join(output)
    finally:
        connection.close()


def hub_config(work: Path, port: int, users: list[str]) -> str:
    """The test's jupyterhub_config.py: the course's shared settings, then local processes
    for the users' servers, DummyAuthenticator for ``users``, and the test's admin service."""
    bin_dir = Path(sys.executable).parent
    return f"""\
c = get_config()  # noqa: F821
load_subconfig({str(BASE_CONFIG)!r})  # noqa: F821
c.JupyterHub.ip = "127.0.0.1"
c.JupyterHub.port = {port}
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = {free_port()}
c.ConfigurableHTTPProxy.command = [{str(PROXY)!r}]
c.ConfigurableHTTPProxy.api_url = "http://127.0.0.1:{free_port()}"
c.ConfigurableHTTPProxy.pid_file = {str(work / "proxy.pid")!r}
c.JupyterHub.db_url = "sqlite:///{work / "jupyterhub.sqlite"}"
c.JupyterHub.cookie_secret_file = {str(work / "cookie_secret")!r}
c.JupyterHub.spawner_class = "jupyterhub.spawner.LocalProcessSpawner"
c.Spawner.cmd = [{str(bin_dir / "jupyterhub-singleuser")!r}]
c.Spawner.environment["JUPYTER_CONFIG_PATH"] = {str(ROOT / "deploy")!r}
c.Spawner.start_timeout = 120
c.Spawner.http_timeout = 120
c.JupyterHub.authenticator_class = "jupyterhub.auth.DummyAuthenticator"
c.Authenticator.allowed_users = set({users!r})
c.JupyterHub.services.append({{"name": "tests", "api_token": {ADMIN_TOKEN!r}}})
c.JupyterHub.load_roles.append({{"name": "tests", "services": ["tests"], "scopes": [
    "admin:users", "admin:servers", "tokens", "list:users", "read:users"]}})
"""


@contextlib.contextmanager
def running_hub(work: Path, users: list[str], env: dict[str, str]) -> Iterator[Hub]:
    """JupyterHub until the block ends, its files in ``work`` (root's alone), ``env`` added
    to its environment (the course's AUTOGRAD_COURSE_* settings)."""
    assert PROXY.exists(), f"{PROXY} is missing: `make hub-proxy` installs it (npm ci)"
    port = free_port()
    config = work / "jupyterhub_config.py"
    config.write_text(hub_config(work, port, users))
    bin_dir = Path(sys.executable).parent
    script = " && ".join([*view_commands(needed_paths(), work / "view"),
                          f"exec {shlex.quote(str(bin_dir / 'jupyterhub'))} -f "
                          f"{shlex.quote(str(config))}"])
    log = work / "jupyterhub.log"
    hub_env = dict(os.environ, **env, PATH=os.pathsep.join([str(bin_dir), os.environ["PATH"]]))
    with open(log, "w") as output:
        process = subprocess.Popen(
            ["unshare", "--mount", "--propagation", "private", "sh", "-c", script],
            cwd=work, env=hub_env, stdout=output, stderr=subprocess.STDOUT,
            start_new_session=True)
        hub = Hub(f"http://127.0.0.1:{port}", process.pid, log)
        try:
            deadline = time.monotonic() + 90
            while time.monotonic() < deadline:
                if process.poll() is not None:
                    raise RuntimeError("JupyterHub exited:\n" + log.read_text()[-4000:])
                with contextlib.suppress(OSError):
                    if hub.api("GET", "")[0] == 200:
                        break
                time.sleep(0.25)
            else:
                raise RuntimeError("JupyterHub did not start:\n" + log.read_text()[-4000:])
            yield hub
        finally:
            with contextlib.suppress(Exception):
                for user in users:
                    hub.api("DELETE", f"users/{user}/server")
            process.terminate()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, 9)
                process.wait(timeout=30)
