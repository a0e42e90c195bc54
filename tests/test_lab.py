"""JupyterLab as `make lab` starts it: nbgrader's Assignment List and formgrader answer, and
opening a lesson leaves its metadata alone.

A real JupyterLab server runs over a copy of the course (config, source/, release/), with the
environment's bin/ on PATH as `make lab` puts it (formgrader runs `alembic` from PATH), and
the test asks the endpoints the Assignment List and formgrader call.
"""

from __future__ import annotations

import shutil

import nbformat
import pytest
from support.lab import running_lab

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
