"""The autograd-course command as the CLI tests run it, and the small course they grade."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from autograd_course.testkit import classes as course

ASSIGNMENT = "01_gradients"
FULL = course.full_marks(Path(__file__).parent.parent.parent / "source" / ASSIGNMENT
                         / f"{ASSIGNMENT}.ipynb")
CLASS = [("ada", "right"), ("blaise", "mistakes"), ("carl", "blank"), ("dora", "mixed"),
         ("fermat", "tamper")]


def run(*args, cwd=None, env=None):
    """``python -m autograd_course ARGS`` in ``cwd``, with ``env`` added to this environment."""
    return subprocess.run([sys.executable, "-m", "autograd_course", *args], cwd=cwd,
                          capture_output=True, text=True,
                          env=None if env is None else {**os.environ, **env})


def filled_release(root, answers: dict[str, str]):
    """The release notebook of ``ASSIGNMENT`` with ``answers`` in its solution cells."""
    return course.fill(root / "release" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", answers)


def reference_of(root) -> dict[str, str]:
    """The reference answers of ``ASSIGNMENT``."""
    return course.reference_answers(root / "source" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb")
