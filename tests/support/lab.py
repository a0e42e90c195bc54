"""A real JupyterLab server over a course, as `make lab` starts it (the environment's bin/ on
PATH: formgrader runs `alembic` from there)."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

TOKEN = "autograd-course-test"


@dataclass(frozen=True)
class Lab:
    """A running server: its address and the course it serves."""

    base: str
    course: Path

    def get(self, path: str):
        """The JSON answer of ``path``, asked with the server's token."""
        request = urllib.request.Request(f"{self.base}/{path}",
                                         headers={"Authorization": f"token {TOKEN}"})
        with urllib.request.urlopen(request, timeout=60) as response:
            return json.loads(response.read())


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def running_lab(course: Path, log: Path) -> Iterator[Lab]:
    """JupyterLab at ``course``'s root until the block ends; its output goes to ``log``."""
    port = _free_port()
    bin_dir = Path(sys.executable).parent
    env = dict(os.environ, PATH=os.pathsep.join([str(bin_dir), os.environ["PATH"]]))
    env.pop("AUTOGRAD_COURSE_EXCHANGE", None)
    args = [str(bin_dir / "jupyter"), "lab", f"--ServerApp.root_dir={course}", f"--port={port}",
            "--no-browser", f"--IdentityProvider.token={TOKEN}", "--ServerApp.port_retries=0"]
    if os.geteuid() == 0:
        args.append("--allow-root")
    with open(log, "w") as output:
        server = subprocess.Popen(args, cwd=course, env=env, stdout=output,
                                  stderr=subprocess.STDOUT)
        lab = Lab(f"http://127.0.0.1:{port}", course)
        try:
            for _ in range(240):
                try:
                    lab.get("api/status")
                    break
                except OSError:
                    time.sleep(0.25)
            else:
                raise RuntimeError("JupyterLab did not start:\n" + log.read_text())
            yield lab
        finally:
            server.terminate()
            try:  # it shuts its kernels down first, one per notebook opened: slow when busy
                server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait(timeout=30)
