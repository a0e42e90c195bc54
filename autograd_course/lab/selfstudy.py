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
- The notebook must be a learner's own copy of the assignment (:func:`course_of_copy`):
  ``release/NN/NN.ipynb``, ``work/NN/NN.ipynb`` (``autograd-course start``) or ``NN/NN.ipynb``
  (the Assignment List's fetch) directly below a course root, a folder with
  ``nbgrader_config.py`` and ``source/NN/NN.ipynb`` that is inside no other course root, with
  no symbolic link on the way below it. The root is that place's, never the nearest one found
  by walking up: a submission's folder (``submitted/ID/NN/``) can hold a ``nbgrader_config.py``
  and a ``source/`` of its own, and those must never choose the grader's code. A notebook
  elsewhere in a course gets one line that starts with :data:`NOT_A_COPY`; one with no
  course above it at all (a student's copy on a course server) one that starts with
  :data:`NOT_HERE`: submit it through the Assignment List instead. (The cell runs in the
  notebook's own kernel, with the rights of whoever runs it, and a notebook may replace it
  with any code: this rule keeps the honest cell from running a grader a submission brought,
  it is no security boundary; the Validate button's is, :mod:`.validate`.)
- The check runs ``python -P -m autograd_course --course ROOT check -- NOTEBOOK`` in the
  root (:func:`check_command`): ``-P`` keeps the working folder off ``sys.path``, ``--`` ends
  the options before the notebook's path. Where JupyterLab keeps a warm check ready for the
  course (:mod:`autograd_course.warmcheck`), the cell asks it instead, and prints the same
  report.
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

from autograd_course import CHECKED_FROM

#: The environment variable in which jupyter_server names a kernel's notebook.
SESSION = "JPY_SESSION_NAME"
#: How the line said outside JupyterLab starts (where no notebook names this kernel).
ELSEWHERE = "This check runs in JupyterLab"
#: How the line said where the course is not starts (a student on a course server).
NOT_HERE = "The hidden tests are not on this server"
#: How the line said for a notebook in a course that is no learner's copy starts.
NOT_A_COPY = "The check grades a learner's own copy of an assignment only"
#: The folders below a course root that hold a learner's copy ``FOLDER/NN/NN.ipynb``; the
#: Assignment List fetches one to ``NN/NN.ipynb``, directly below the root.
COPIES = ("release", "work")
#: Seconds a check may take: the first check of an assignment also prepares its course.
TIMEOUT = 600.0


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


def is_course_root(folder: Path) -> bool:
    """Whether ``folder`` holds a course: nbgrader_config.py and source/."""
    return (folder / "nbgrader_config.py").is_file() and (folder / "source").is_dir()


def course_root(folder: Path) -> Path | None:
    """The nearest folder from ``folder`` up with nbgrader_config.py and source/: whether a
    path is inside a course at all, never which course grades it (:func:`course_of_copy`)."""
    for candidate in (folder, *folder.parents):
        if is_course_root(candidate):
            return candidate
    return None


def outermost_course(folder: Path) -> bool:
    """Whether ``folder`` is a course root inside no other course root (a course a learner's
    copy, or a server, may be of: never one a submission brought inside a course)."""
    return is_course_root(folder) and course_root(folder.parent) is None


def learners_copy(root: Path, notebook: Path) -> str | None:
    """The assignment of which ``notebook`` is a learner's own copy in the course at ``root``:
    ``notebook``, as named (below ``root``, no ``..``), is ``release/NN/NN.ipynb``,
    ``work/NN/NN.ipynb`` or ``NN/NN.ipynb`` there, NN an assignment of ``root``'s source/, a
    file, and no symbolic link on the way below ``root`` leads elsewhere; else None."""
    try:
        parts = notebook.relative_to(root).parts
    except ValueError:
        return None
    if len(parts) not in (2, 3) or (len(parts) == 3 and parts[0] not in COPIES):
        return None
    name = parts[-2]
    if name in ("", ".", "..") or parts[-1] != f"{name}.ipynb":
        return None
    if not (root / "source" / name / f"{name}.ipynb").is_file():
        return None
    try:
        real = notebook.resolve(strict=True)
    except (OSError, RuntimeError):
        return None
    if real != root.resolve().joinpath(*parts) or not real.is_file():
        return None
    return name


def course_of_copy(notebook: Path) -> Path | None:
    """The course root of which ``notebook`` is a learner's own copy (:func:`learners_copy`):
    the folder two or three above it, a course root inside no other; else None."""
    for root in (notebook.parent.parent, notebook.parent.parent.parent):
        if outermost_course(root) and learners_copy(root, notebook):
            return root
    return None


def _saved_at(path: Path) -> str:
    """When ``path`` was last saved, as a clock time and an age."""
    mtime = path.stat().st_mtime
    clock = datetime.datetime.fromtimestamp(mtime).strftime("%H:%M:%S")
    return f"{clock} ({max(0, round(time.time() - mtime))} s ago)"


def check_command(root: Path, notebook: Path,
                  environ: Mapping[str, str] | None = None) -> tuple[list[str], dict[str, str]]:
    """The command line that checks ``notebook`` with the hidden tests of the course at
    ``root`` (``autograd-course check``, run with this Python in ``root``, ``-P``: no module
    of the working folder is imported; ``--`` before the notebook's path), and its
    environment: ``environ`` (this process's by default) without :data:`SESSION` (a kernel the
    check starts must never take itself for this one), with :data:`CHECKED_FROM` set."""
    environ = os.environ if environ is None else environ
    try:
        shown = str(notebook.relative_to(root))
    except ValueError:
        shown = str(notebook)
    env = {k: v for k, v in environ.items() if k != SESSION} | {
        "PYTHONUNBUFFERED": "1", CHECKED_FROM: "jupyterlab"}
    return [sys.executable, "-P", "-m", "autograd_course", "--course", str(root), "check", "--",
            shown], env


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
    if course_root(notebook.parent) is None and course_root(notebook.resolve().parent) is None:
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
    root = course_of_copy(notebook)
    if root is None:
        print(f"{NOT_A_COPY}, at the course root: release/{assignment}/{assignment}.ipynb, "
              f"work/{assignment}/{assignment}.ipynb (autograd-course start) or "
              f"{assignment}/{assignment}.ipynb (the Assignment List), no symbolic link on the "
              f"way; {notebook} is none of them (a submission is graded with autograd-course "
              "grade).")
        return
    print(f"Checking {notebook} as saved at {_saved_at(notebook)}, with the hidden tests, "
          "as the grader would (changes made since are not seen: save first).", flush=True)
    if not _warm_check(root, notebook, timeout):
        _run_check(root, notebook, timeout)


def _warm_check(root: Path, notebook: Path, timeout: float) -> bool:
    """Print the report of JupyterLab's warm check (:mod:`autograd_course.warmcheck`), as
    ``check`` prints it; False, having printed nothing, where none answered (the check then
    runs cold)."""
    from autograd_course import warmcheck

    command, env = check_command(root, notebook)
    answer = warmcheck.ask(root, notebook, None, env, timeout)
    if answer is None:
        return False
    print("\n".join([command[-1], *answer["lines"]]), flush=True)
    if answer["error"]:
        print(answer["error"])
    return True
