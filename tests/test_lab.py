"""JupyterLab as `make lab` starts it: nbgrader's Assignment List and formgrader answer, and
opening a lesson leaves its metadata alone.

A real JupyterLab server runs over a copy of the course (config, source/, release/), with the
environment's bin/ on PATH as `make lab` puts it (formgrader runs `alembic` from PATH), and
the test asks the endpoints the Assignment List and formgrader call. A terminal opened through
the server's REST API finds `autograd-course`, with the server's stdout a file and a terminal;
without the course's terminal settings, a server whose stdout is a file does not.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import nbformat
import pytest
from support.lab import running_lab, terminal_says

pytestmark = pytest.mark.services

@pytest.fixture(scope="module")
def lab(tmp_path_factory, root):
    course = tmp_path_factory.mktemp("lab") / "course"
    course.mkdir()
    for name in ("nbgrader_config.py", "source", "release", "notebooks"):
        copy = shutil.copytree if (root / name).is_dir() else shutil.copy2
        copy(root / name, course / name)
    with running_lab(course, course.parent / "lab.log") as server:
        yield server


def test_the_assignment_list_finds_the_course(lab):
    course = lab.course
    answer = lab.get("courses")
    assert answer["success"] is True, answer
    assert (course / "exchange").is_dir()  # course-local, made by the config
    listed = lab.get("assignments?course_id=autograd-course")
    assert listed["success"] is True, listed


def test_formgrader_lists_the_assignments(lab):
    assignments = lab.get("formgrader/api/assignments")
    names = {a["name"] for a in assignments}
    assert {"01_gradients", "05_sgd"} <= names, names


def test_opening_a_lesson_leaves_its_kernel_metadata_as_it_is(lab):
    course = lab.course
    spec = lab.get("api/kernelspecs")["kernelspecs"]["python3"]["spec"]
    for path in [*(course / "notebooks").glob("*.ipynb"), *(course / "release").rglob("*.ipynb")]:
        kernelspec = nbformat.read(path, as_version=4).metadata.kernelspec
        assert kernelspec.name == "python3", path
        assert kernelspec.display_name == spec["display_name"], path


# --- the terminal: `autograd-course` is found there, as the notebooks' instructions say ------
#: A line for the terminal that prints where `autograd-course` is (nothing when it is not
#: found) between marks; the echo of the line itself never matches :data:`FOUND`.
FIND = "echo found:$(command -v autograd-course):end"
FOUND = r"found:([^$:\s]*):end"
COMMAND = str(Path(sys.executable).parent / "autograd-course")


def terminal_finds(tmp_path, root, **lab) -> tuple[str, str]:
    """Where a terminal of a fresh JupyterLab over a course finds `autograd-course` ("" when it
    does not), and what the terminal printed."""
    course = tmp_path / "course"
    course.mkdir()
    shutil.copy2(root / "nbgrader_config.py", course)
    with running_lab(course, tmp_path / "lab.log", **lab) as server:
        return terminal_says(server, FIND, FOUND)


@pytest.mark.parametrize("tty", [False, True], ids=["stdout-a-file", "stdout-a-tty"])
def test_a_terminal_finds_the_course_command(tmp_path, root, tty):
    # `make lab` puts .venv/bin first on PATH; with its stdout not a terminal, JupyterLab's
    # terminal would start a login shell, whose /etc/profile resets PATH: the course's server
    # config (Makefile: terminado_settings) starts an interactive shell instead
    found, printed = terminal_finds(tmp_path, root, tty=tty)
    assert found == COMMAND, printed


def test_without_the_course_settings_a_login_shell_loses_the_command(tmp_path, root):
    # the control: the same server without the course's terminado_settings, stdout a file
    found, printed = terminal_finds(tmp_path, root, args=["--ServerApp.terminado_settings={}"])
    assert "found:" in printed and found == "", printed
