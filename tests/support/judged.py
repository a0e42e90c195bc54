"""One notebook graded by the course's executor (JudgedExecute) in a real sandboxed kernel, as
nbgrader's autograde runs it: the seam of the sandbox, zygote, cgroup and seccomp tests."""

from __future__ import annotations

from pathlib import Path

import nbformat
from traitlets.config import Config

from autograd_course.grading.preprocessors import JudgedExecute


def grade_cells(tmp_path: Path, cells: list[str], student: str, *, warm: bool,
                **settings) -> tuple[nbformat.NotebookNode, dict, JudgedExecute]:
    """Grade a notebook of ``cells`` for ``student`` in a course at ``tmp_path``, with warm
    kernels on or off and any other ``JudgedExecute`` settings; the graded notebook, the
    grading state (``resources["autograd_course"]``) and the executor."""
    course = tmp_path / "course"
    folder = course / "autograded" / student / "a"
    folder.mkdir(parents=True)
    config = Config()
    config.CourseDirectory.root = str(course)
    config.JudgedExecute.secret = "test"
    config.JudgedExecute.warm_kernels = warm
    for name, value in settings.items():
        setattr(config.JudgedExecute, name, value)
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    resources = {"nbgrader": {"student": student, "assignment": "a", "notebook": "n"},
                 "metadata": {"path": str(folder)}}
    executor = JudgedExecute(config=config)
    nb, resources = executor.preprocess(nb, resources)
    return nb, resources["autograd_course"], executor
