"""JupyterLab as `make lab` starts it: nbgrader's Assignment List and formgrader answer, and
opening a lesson leaves its metadata alone.

A real JupyterLab server runs over a copy of the course (config, source/, release/), with the
environment's bin/ on PATH as `make lab` puts it (formgrader runs `alembic` from PATH), and
the test asks the endpoints the Assignment List and formgrader call.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import nbformat
import pytest

pytestmark = pytest.mark.services

TOKEN = "autograd-course-test"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def lab(tmp_path_factory, root):
    course = tmp_path_factory.mktemp("lab") / "course"
    course.mkdir()
    for name in ("nbgrader_config.py", "source", "release", "notebooks"):
        copy = shutil.copytree if (root / name).is_dir() else shutil.copy2
        copy(root / name, course / name)
    port = _free_port()
    bin_dir = Path(sys.executable).parent
    env = dict(os.environ, PATH=os.pathsep.join([str(bin_dir), os.environ["PATH"]]))
    env.pop("AUTOGRAD_COURSE_EXCHANGE", None)
    args = [str(bin_dir / "jupyter"), "lab", f"--ServerApp.root_dir={course}", f"--port={port}",
            "--no-browser", f"--IdentityProvider.token={TOKEN}", "--ServerApp.port_retries=0"]
    if os.geteuid() == 0:
        args.append("--allow-root")
    log = open(course.parent / "lab.log", "w")  # noqa: SIM115 - closed at teardown
    server = subprocess.Popen(args, cwd=course, env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    for _ in range(120):
        try:
            get(base, "api/status")
            break
        except OSError:
            time.sleep(0.5)
    else:
        server.kill()
        pytest.fail("JupyterLab did not start:\n" + (course.parent / "lab.log").read_text())
    yield base, course
    server.terminate()
    server.wait(timeout=30)
    log.close()


def get(base: str, path: str):
    request = urllib.request.Request(f"{base}/{path}", headers={"Authorization": f"token {TOKEN}"})
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.loads(response.read())


def test_the_assignment_list_finds_the_course(lab):
    base, course = lab
    answer = get(base, "courses")
    assert answer["success"] is True, answer
    assert (course / "exchange").is_dir()  # course-local, made by the config
    listed = get(base, "assignments?course_id=autograd-course")
    assert listed["success"] is True, listed


def test_formgrader_lists_the_assignments(lab):
    base, _ = lab
    assignments = get(base, "formgrader/api/assignments")
    names = {a["name"] for a in assignments}
    assert {"01_gradients", "05_sgd"} <= names, names


def test_opening_a_lesson_leaves_its_kernel_metadata_as_it_is(lab):
    base, course = lab
    spec = get(base, "api/kernelspecs")["kernelspecs"]["python3"]["spec"]
    for path in [*(course / "notebooks").glob("*.ipynb"), *(course / "release").rglob("*.ipynb")]:
        kernelspec = nbformat.read(path, as_version=4).metadata.kernelspec
        assert kernelspec.name == "python3", path
        assert kernelspec.display_name == spec["display_name"], path
