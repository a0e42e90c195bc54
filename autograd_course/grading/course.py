"""Course directories for grading: set one up, write submissions, run nbgrader in it.

Used by the tests, the instructor's dry run (``autograd-course demo``) and the benchmark,
which all grade synthetic classes with real nbgrader in a temporary course directory.
"""

from __future__ import annotations

import copy
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat

from autograd_course.grading.preprocessors import read_secret

SOLUTION_MARKERS = re.compile(r"^\s*### (BEGIN|END) SOLUTION\s*$")


def nbgrader(
    course: Path, *args: str, check: bool = False, timeout: float | None = None
) -> subprocess.CompletedProcess:
    """Run ``nbgrader ARGS`` in ``course`` with this Python; return the finished process."""
    # nbgrader runs `alembic` from PATH when it creates a gradebook: use this environment's.
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    env = dict(os.environ, PATH=path, PYTHONWARNINGS="ignore::DeprecationWarning")
    return subprocess.run(
        [sys.executable, "-m", "nbgrader", *args],
        cwd=course,
        env=env,
        capture_output=True,
        text=True,
        check=check,
        timeout=timeout,
    )


def make_course(
    dest: Path, source_root: Path, assignments: list[str], config: str | None = None
) -> Path:
    """Create a course in ``dest`` with ``assignments`` copied from ``source_root/source``.

    ``config`` replaces the course's nbgrader_config.py (for example to compare with
    nbgrader's defaults); the student versions are generated into ``dest/release``.
    """
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    for name in assignments:
        if (dest / "source" / name).resolve() == (Path(source_root) / "source" / name).resolve():
            continue  # the assignment is already in place
        shutil.copytree(
            Path(source_root) / "source" / name, dest / "source" / name, dirs_exist_ok=True
        )
    config_text = (
        config if config is not None else (Path(source_root) / "nbgrader_config.py").read_text()
    )
    (dest / "nbgrader_config.py").write_text(config_text)
    for name in assignments:
        nbgrader(dest, "generate_assignment", name, "--force", check=True)
    read_secret(dest)  # made now, so that a copy of this course draws the same hidden inputs
    return dest


def reference_answers(source_notebook: Path) -> dict[str, str]:
    """Map each solution cell's grade_id to its reference code (markers removed)."""
    nb = nbformat.read(source_notebook, as_version=4)
    answers = {}
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("solution") and cell.cell_type == "code":
            lines = [line for line in cell.source.splitlines() if not SOLUTION_MARKERS.match(line)]
            answers[meta["grade_id"]] = "\n".join(lines)
    return answers


def fill(
    release_notebook: Path, answers: dict[str, str], extra_cells: list[tuple[int, str]] = ()
) -> nbformat.NotebookNode:
    """A submission: the student version with solution cells replaced by ``answers``.

    ``extra_cells`` are (position, source) code cells a student added.
    """
    nb = nbformat.read(release_notebook, as_version=4)
    nb = copy.deepcopy(nb)
    for cell in nb.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if cell.metadata.get("nbgrader", {}).get("solution") and grade_id in answers:
            cell.source = answers[grade_id]
    for position, source in sorted(extra_cells, reverse=True):
        nb.cells.insert(position, nbformat.v4.new_code_cell(source))
    return nb


def submit(
    course: Path,
    student: str,
    assignment: str,
    notebook_name: str,
    content: nbformat.NotebookNode | bytes | str,
) -> Path:
    """Write a submission under ``submitted/STUDENT/ASSIGNMENT/`` (a notebook or raw bytes)."""
    folder = Path(course) / "submitted" / student / assignment
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{notebook_name}.ipynb"
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif isinstance(content, str):
        path.write_text(content)
    else:
        nbformat.write(content, path)
    (folder / "timestamp.txt").write_text("2026-11-30 12:00:00.000000 UTC")
    return path


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` with its bytes, to prove that nothing changed."""
    folder = Path(folder)
    return {
        str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
    }


def gradebook_scores(course: Path, assignment: str) -> dict[str, float]:
    """Each student's total score for ``assignment``, read from the course's gradebook."""
    code = (
        "import json,sys; from nbgrader.api import Gradebook\n"
        "with Gradebook('sqlite:///gradebook.db') as gb:\n"
        "    a = gb.find_assignment(sys.argv[1])\n"
        "    print(json.dumps({s.student.id: s.score for s in a.submissions}))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, assignment],
        cwd=course,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return json.loads(out)
