"""Executing a lesson the way the tests compare it: :func:`execute`, and :func:`rerun` to
commit its outputs.

The committed outputs of ``notebooks/NN_topic.ipynb`` are the executed truth, and
``tests/test_lessons.py`` re-executes each lesson with :func:`execute` to compare them. After
editing a lesson, commit what the same run gives:

    .venv/bin/python -m autograd_course.testkit.lessons notebooks/09_extending.ipynb

(a plain ``jupyter nbconvert --execute`` does not merge a print's stream outputs, and the
comparison would then fail on outputs the lesson never changed).
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient


def execute(path: Path) -> nbformat.NotebookNode:
    """The lesson at ``path`` executed in a fresh ``python3`` kernel in its own folder, each
    print's stream output merged into one output; the file is left as it is."""
    path = Path(path)
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(
        nb,
        timeout=120,
        kernel_name="python3",
        record_timing=False,
        coalesce_streams=True,  # one print is one output, however the kernel flushed it
        resources={"metadata": {"path": str(path.parent)}},
    )
    client.execute()
    return nb


def rerun(path: Path) -> None:
    """Execute the lesson at ``path`` (:func:`execute`) and write it back with its outputs."""
    nbformat.write(execute(path), Path(path))


if __name__ == "__main__":  # pragma: no cover - a command for authors
    for name in sys.argv[1:]:
        rerun(Path(name))
        print(f"{name}: executed, outputs written")
