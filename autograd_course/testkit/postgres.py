"""A real PostgreSQL server for tests and benchmarks: Debian's postgresql, a temporary
folder, a loopback port.

``initdb`` and ``postgres`` refuse to run as root, and CI runs as root: there the server runs
as the ``postgres`` user (``runuser -u postgres``), in a folder that user owns. ``pg_ctl -l``
keeps the server's output in a log file, off the test's pipes. The server trusts local
connections on 127.0.0.1 only; each test makes its own database.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path


def _bin(name: str) -> str:
    found = shutil.which(name) or next(iter(sorted(glob.glob(
        f"/usr/lib/postgresql/*/bin/{name}"), reverse=True)), None)
    if found is None:
        raise RuntimeError(f"PostgreSQL's {name} is missing: `make test` installs Debian's "
                           "postgresql when it runs as root (or: apt-get install postgresql)")
    return found


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Postgres:
    """A PostgreSQL server of the tests' own (start it, make databases, stop it)."""

    def __init__(self, durable: bool = False):
        self.durable = durable  # fsync and full page writes, as a production server has them
        self.folder = Path(tempfile.mkdtemp(prefix="autograd-course-postgres-"))
        self.data, self.log = self.folder / "data", self.folder / "server.log"
        self.port = _free_port()
        self.as_root = os.geteuid() == 0

    def _run(self, *args: str) -> None:
        command = ["runuser", "-u", "postgres", "--", *args] if self.as_root else list(args)
        done = subprocess.run(command, capture_output=True, text=True, cwd=self.folder)
        if done.returncode != 0:
            log = self.log.read_text() if self.log.exists() else ""
            raise RuntimeError(f"{' '.join(args[:2])} failed: {done.stderr}{done.stdout}{log}")

    def start(self) -> Postgres:
        if self.as_root:
            user = pwd.getpwnam("postgres")
            os.chown(self.folder, user.pw_uid, user.pw_gid)
            os.chmod(self.folder, 0o700)
        self._run(_bin("initdb"), "-D", str(self.data), "-A", "trust", "-U", "postgres",
                  "--no-sync", "-E", "UTF8")
        options = f"-p {self.port} -k {self.folder} -c listen_addresses=127.0.0.1"
        if not self.durable:
            options += " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
        self._run(_bin("pg_ctl"), "-D", str(self.data), "-l", str(self.log), "-o", options,
                  "-w", "-t", "60", "start")
        return self

    def url(self, database: str) -> str:
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/{database}"

    def create_database(self, name: str) -> str:
        """Make an empty database; return its SQLAlchemy URL."""
        import psycopg

        with psycopg.connect(f"host=127.0.0.1 port={self.port} user=postgres dbname=postgres",
                             autocommit=True) as connection:
            connection.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def __enter__(self) -> Postgres:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def stop(self) -> None:
        try:
            self._run(_bin("pg_ctl"), "-D", str(self.data), "-m", "immediate", "-w", "stop")
        finally:
            shutil.rmtree(self.folder, ignore_errors=True)
