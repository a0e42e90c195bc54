"""A real JupyterLab server over a course, as `make lab` starts it (the environment's bin/ on
PATH: formgrader runs `alembic` from there), its output in a file or, as from a terminal, on a
pseudo-terminal; and a line typed into one of its terminals (:func:`terminal_says`)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import pty
import re
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator, Sequence
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
        return self.ask(path)

    def ask(self, path: str, method: str = "GET", body: dict | None = None):
        """The JSON answer of ``path`` to ``method`` with the JSON ``body`` (a token's request
        needs no XSRF cookie)."""
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(f"{self.base}/{path}", data=data, method=method,
                                         headers={"Authorization": f"token {TOKEN}",
                                                  "Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=120) as response:
            answer = response.read()
        return json.loads(answer) if answer else None

    def text(self, path: str) -> str:
        """What the server serves at ``path`` (a file), as text."""
        request = urllib.request.Request(f"{self.base}/{path}",
                                         headers={"Authorization": f"token {TOKEN}"})
        with urllib.request.urlopen(request, timeout=120) as response:
            return response.read().decode()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _copy(master: int, log: Path) -> None:
    """Copy what the server writes on its pseudo-terminal into ``log``, until it is closed."""
    with open(log, "wb") as output:
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: no process holds the terminal any more
                return
            if not chunk:
                return
            output.write(chunk)
            output.flush()


@contextlib.contextmanager
def _output(log: Path, tty: bool) -> Iterator[object]:
    """The server's stdout: the file ``log``, or (``tty``) a pseudo-terminal whose output a
    thread copies into ``log``, so that the server sees a terminal and never blocks on it."""
    if not tty:
        with open(log, "w") as output:
            yield output
        return
    master, terminal = pty.openpty()
    copier = threading.Thread(target=_copy, args=(master, log), daemon=True)
    copier.start()
    try:
        yield terminal
    finally:
        os.close(terminal)
        copier.join(timeout=10)
        os.close(master)


@contextlib.contextmanager
def running_lab(course: Path, log: Path, *, tty: bool = False,
                args: Sequence[str] = ()) -> Iterator[Lab]:
    """JupyterLab at ``course``'s root until the block ends; its output goes to ``log``, through
    a pseudo-terminal with ``tty`` (as when started in a terminal); ``args`` are more of its
    command-line options."""
    port = _free_port()
    bin_dir = Path(sys.executable).parent
    env = dict(os.environ, PATH=os.pathsep.join([str(bin_dir), os.environ["PATH"]]))
    env.pop("AUTOGRAD_COURSE_EXCHANGE", None)
    argv = [str(bin_dir / "jupyter"), "lab", f"--ServerApp.root_dir={course}", f"--port={port}",
            "--no-browser", f"--IdentityProvider.token={TOKEN}", "--ServerApp.port_retries=0",
            *args]
    if os.geteuid() == 0:
        argv.append("--allow-root")
    with _output(log, tty) as output:
        server = subprocess.Popen(argv, cwd=course, env=env, stdout=output,
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


def terminal_says(lab: Lab, line: str, pattern: str, timeout: float = 30) -> tuple[str, str]:
    """Open a terminal of ``lab`` (its REST API), type ``line`` into it over its websocket
    (``terminals/websocket/NAME``),
    and read what it prints until ``pattern`` (a regular expression) is found or ``timeout``
    seconds pass; the terminal is closed after. Returns the first group of the match ("" if
    none) and everything it printed."""
    from tornado.httpclient import HTTPRequest
    from tornado.websocket import websocket_connect

    name = lab.ask("api/terminals", "POST", {})["name"]

    async def talk() -> tuple[str, str]:
        url = lab.base.replace("http", "ws", 1) + f"/terminals/websocket/{name}"
        socket = await websocket_connect(HTTPRequest(
            url, headers={"Authorization": f"token {TOKEN}"}))
        printed, deadline = "", time.monotonic() + timeout
        try:
            await socket.write_message(json.dumps(["stdin", line + "\r"]))
            while (left := deadline - time.monotonic()) > 0:
                try:
                    message = await asyncio.wait_for(socket.read_message(), left)
                except TimeoutError:
                    break
                if message is None:  # the terminal closed
                    break
                kind, *content = json.loads(message)
                if kind == "stdout":
                    printed += "".join(content)
                    if found := re.search(pattern, printed):
                        return (found.group(1) if found.groups() else ""), printed
            return "", printed
        finally:
            socket.close()

    try:
        return asyncio.run(talk())
    finally:
        lab.ask(f"api/terminals/{name}", "DELETE")


#: The check cell as JupyterLab shows it, and its outputs.
CHECK_CELL = ".jp-NotebookPanel:not(.lm-mod-hidden) .jp-CodeCell:has-text('check_saved_notebook')"
#: The name of the notebook's kernel in its toolbar ("No Kernel" until its session has one).
KERNEL_NAME = ".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Toolbar-kernelName"
#: The notebook's kernel, idle.
IDLE = ".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook-ExecutionIndicator[data-status='idle']"


def lab_check(browser, lab: Lab, place: str, screenshot: Path, runs: int = 1,
              pause: float = 0.0) -> tuple[str, list[float]]:
    """What the check cell prints when a learner opens the notebook at ``place`` in JupyterLab,
    clicks the cell and presses Shift+Enter (``runs`` times, each ``pause`` seconds after the
    last returned), and the seconds from each key to the cell's return. A cell that does not
    begin or return fails with what the page and the server showed."""
    page = browser.context.new_page()
    page.set_viewport_size({"width": 1400, "height": 1000})
    try:
        page.goto(f"{lab.base}/lab/workspaces/check-{screenshot.stem}/tree/{place}?reset")
        cell = page.locator(CHECK_CELL)
        cell.wait_for(timeout=90_000)
        # the kernel is up, and the notebook's session has it: a cell run while JupyterLab's
        # session has no kernel connection is silently not run (JupyterLab clears its
        # execution and moves on; seen under a whole suite's load, with the name shown too)
        page.wait_for_selector(IDLE, timeout=90_000)
        page.locator(KERNEL_NAME).filter(has_text="Python 3").wait_for(timeout=90_000)
        prompt = cell.locator(".jp-InputArea-prompt")
        output = cell.locator(".jp-OutputArea")
        seconds = []
        for run in range(runs):
            done = prompt.inner_text()  # the last run's [N], or [ ]
            began = output.filter(has_text="Checking").or_(prompt.filter(has_text="*")).first
            if run:  # the last report stays until the cell runs again: only [*] says it began
                began = prompt.filter(has_text="*")
                time.sleep(pause)
            for attempt in range(1, 4):  # a run JupyterLab dropped is run again, as a learner
                cell.scroll_into_view_if_needed()  # would
                cell.locator(".jp-InputPrompt").click()
                cell.and_(page.locator(".jp-mod-selected")).wait_for(timeout=30_000)
                start = time.monotonic()
                page.keyboard.press("Shift+Enter")
                try:  # it began (the cell's first line, or [*])
                    began.wait_for(timeout=20_000)
                    break
                except Exception:
                    if prompt.inner_text() not in (done, "[ ]:"):
                        break  # it began and returned between two looks
                    print(f"{place}: Shift+Enter {attempt} did not run the cell (prompt "
                          f"{prompt.inner_text()!r}): JupyterLab had no kernel connection yet")
            try:  # it returned: [N], another N than the last run's
                prompt.filter(has_text=re.compile(r"\[\d+\]")).filter(
                    has_not_text=done).wait_for(timeout=660_000)
            except Exception as exc:
                page.screenshot(path=str(screenshot))
                log = lab.course.parent / "lab.log"
                raise AssertionError(
                    f"the check cell did not {'return' if '*' in prompt.inner_text() else 'begin'}"
                    f" ({exc.__class__.__name__}); prompt {prompt.inner_text()!r}, output "
                    f"{output.inner_text()[-3000:]!r}; screenshot {screenshot}; server log:\n"
                    f"{log.read_text(errors='replace')[-3000:] if log.exists() else '(none)'}"
                ) from None
            seconds.append(time.monotonic() - start)
        text = output.inner_text()
        output.scroll_into_view_if_needed()
        page.screenshot(path=str(screenshot))
        return text, seconds
    finally:
        page.close()
