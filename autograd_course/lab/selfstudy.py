"""The hidden-test check from inside JupyterLab: :func:`check_saved_notebook`.

The last cell of every assignment calls it. It grades the notebook *as saved* exactly as
``autograd-course check`` does (it runs that command, with this kernel's Python) and prints
the same report: PASS or FAIL and the points of each question, and the total. It needs the
course itself (its ``source/`` and the grader's secret), so it works for self-study: a
learner's working copy (``autograd-course start`` makes it in ``work/``), a notebook opened
from ``release/``, or one fetched with the Assignment List under the course root.

- The notebook is the one this kernel was started for: jupyter_server names it in the
  kernel's environment, ``JPY_SESSION_NAME`` (absolute, or relative to the server's root;
  the kernel's working folder is the notebook's folder). Without it (a grading or validating
  kernel, nbconvert, the judge) the function prints one line (:data:`ELSEWHERE`) naming the
  terminal command, and does nothing else: it never starts a grading run there.
- The course root is the nearest folder above the notebook with ``nbgrader_config.py`` and
  ``source/``. A notebook with none above it (a student's copy on a course server) gets one
  line that starts with :data:`NOT_HERE`: submit it through the Assignment List instead.
- The cell imports this module only when ``NBGRADER_EXECUTION`` is unset (nbgrader sets it
  while it grades or validates); the function also checks that variable.

>>> check_saved_notebook("01_gradients", environ={})  # doctest: +ELLIPSIS
This check runs in JupyterLab (save the notebook, then run this cell); in a terminal at ...
"""

from __future__ import annotations

import datetime
import os
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from pathlib import Path

#: The environment variable in which jupyter_server names a kernel's notebook.
SESSION = "JPY_SESSION_NAME"
#: How the line said outside JupyterLab starts (where no notebook names this kernel).
ELSEWHERE = "This check runs in JupyterLab"
#: How the line said where the course is not starts (a student on a course server).
NOT_HERE = "The hidden tests are not on this server"
#: Seconds a check may take: the first check of an assignment also prepares its course.
TIMEOUT = 600.0
#: The environment variable that tells ``autograd-course check`` it reports to JupyterLab (the
#: check cell, nbgrader's Validate button), where no command-line option can be given: it then
#: says where the student id came from without naming ``--student`` (``cli.CHECKED_FROM``).
CHECKED_FROM = "AUTOGRAD_COURSE_CHECKED_FROM"


def terminal_command(assignment: str) -> str:
    """The same check in a terminal, as true for a notebook of release/ as for a learner's
    copy (``--course`` defaults to the folder it runs in)."""
    return (f"at the course root (the folder with nbgrader_config.py), run `autograd-course "
            f"check release/{assignment}/{assignment}.ipynb` (or the path of your copy: "
            f"`work/{assignment}/{assignment}.ipynb` from `autograd-course start`, "
            f"`{assignment}/{assignment}.ipynb` from the Assignment List)")


def session_notebook(environ: Mapping[str, str], cwd: Path) -> Path | None:
    """The notebook this kernel was started for, from ``environ``'s :data:`SESSION`: an
    absolute path, or one relative to the server's root, an unknown folder above ``cwd`` (the
    notebook's folder). None when no notebook names this kernel."""
    name = environ.get(SESSION, "").strip()
    if not name:
        return None
    path = Path(name)
    if path.is_absolute():
        return path
    for root in (cwd, *cwd.parents):  # the server's root: where the relative path leads here
        if (root / path).parent.resolve() == cwd.resolve() and (root / path).is_file():
            return (root / path).resolve()
    return cwd / path.name


def course_root(folder: Path) -> Path | None:
    """The nearest folder from ``folder`` up with nbgrader_config.py and source/."""
    for candidate in (folder, *folder.parents):
        if (candidate / "nbgrader_config.py").is_file() and (candidate / "source").is_dir():
            return candidate
    return None


def _saved_at(path: Path) -> str:
    """When ``path`` was last saved, as a clock time and an age."""
    mtime = path.stat().st_mtime
    clock = datetime.datetime.fromtimestamp(mtime).strftime("%H:%M:%S")
    return f"{clock} ({max(0, round(time.time() - mtime))} s ago)"


def check_command(root: Path, notebook: Path,
                  environ: Mapping[str, str] | None = None) -> tuple[list[str], dict[str, str]]:
    """The command line that checks ``notebook`` with the hidden tests of the course at
    ``root`` (``autograd-course check``, run with this Python, in ``root``), and its
    environment: ``environ`` (this process's by default) without :data:`SESSION` (a kernel the
    check starts must never take itself for this one), with :data:`CHECKED_FROM` set."""
    environ = os.environ if environ is None else environ
    try:
        shown = str(notebook.relative_to(root))
    except ValueError:
        shown = str(notebook)
    env = {k: v for k, v in environ.items() if k != SESSION} | {
        "PYTHONUNBUFFERED": "1", CHECKED_FROM: "jupyterlab"}
    return [sys.executable, "-m", "autograd_course", "--course", str(root), "check", shown], env


def _run_check(root: Path, notebook: Path, timeout: float) -> int:
    """Run ``autograd-course check`` on ``notebook`` in ``root``, printing its report as it
    comes (and what it said on stderr, when it failed); return its exit status, -1 when it
    was stopped at ``timeout``."""
    command, env = check_command(root, notebook)
    process = subprocess.Popen(command, cwd=root, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, errors="replace")
    stopped = threading.Event()
    timer = threading.Timer(timeout, lambda: (stopped.set(), process.kill()))
    timer.start()
    errors: list[str] = []
    reader = threading.Thread(target=lambda: errors.extend(process.stderr), daemon=True)
    reader.start()
    try:
        for line in process.stdout:
            print(line, end="", flush=True)
        status = process.wait()
    finally:
        timer.cancel()
        if process.poll() is None:  # the cell was interrupted: so is the check
            process.kill()
            process.wait()
        reader.join(timeout=5)
    if stopped.is_set():
        print(f"The check ran longer than {timeout:g} s and was stopped.")
        return -1
    if status != 0:
        print("".join(errors[-10:]), end="")
    return status


def check_saved_notebook(assignment: str, *, environ: Mapping[str, str] | None = None,
                         timeout: float = TIMEOUT) -> None:
    """Grade this kernel's notebook, as saved, with the hidden tests, as
    ``autograd-course check`` does, and print its report; ``assignment`` names the notebook
    the grader collects (``01_gradients``). See the module's docstring for where it runs."""
    environ = os.environ if environ is None else environ
    notebook = None
    if not environ.get("NBGRADER_EXECUTION"):  # never inside a grading or validating run
        notebook = session_notebook(environ, Path.cwd())
    if notebook is None:
        print(f"{ELSEWHERE} (save the notebook, then run this cell); in a terminal "
              f"{terminal_command(assignment)}.")
        return
    root = course_root(notebook.parent)
    if root is None:
        print(f"{NOT_HERE}: they are the instructor's, and run when your work is graded. "
              "Submit the notebook through the Assignment List (Nbgrader ▸ Assignment List) "
              "instead; the checks in the question cells are the ones you can run here.")
        return
    if notebook.name != f"{assignment}.ipynb":
        print(f"This notebook is {notebook.name}, but the grader collects {assignment}.ipynb: "
              f"save your work under that name in {notebook.parent}, then check that one.")
        return
    if not notebook.is_file():
        print(f"{notebook} is not there any more (renamed or moved?): open the notebook "
              "again, then run this cell.")
        return
    print(f"Checking {notebook} as saved at {_saved_at(notebook)}, with the hidden tests, "
          "as the grader would (changes made since are not seen: save first).", flush=True)
    _run_check(root, notebook, timeout)
