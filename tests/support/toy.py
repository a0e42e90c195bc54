"""The toy course of the grading tests: its assignment (fixtures/make_toy.py) and a class of
the hostile students (fixtures/hostile_class.py), with short limits."""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat

from autograd_course.testkit import classes

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "fixtures"))
import hostile_class  # noqa: E402
import make_toy  # noqa: E402

# Short limits keep the suite fast; the course's own values are in nbgrader_config.py. The
# times leave an honest toy notebook (about 5 s, its slowest cell under 2 s, on an idle 2-core
# machine) a margin of 10 to 25 times: the suite grades it while other tests load the machine.
# fixtures/hostile_class.py sleeps just under CELL_TIMEOUT.
CELL_TIMEOUT = 20
BUDGET = 120
TEST_LIMITS = (f"\nc.Execute.timeout = {CELL_TIMEOUT}\nc.JudgedExecute.memory_limit_mb = 1500\n"
               f"c.JudgedExecute.notebook_seconds = {BUDGET}\nc.JudgedExecute.max_output_mb = 8\n")


def make_class(base: Path, root: Path, students: list[str]) -> Path:
    """A toy course at ``base`` with the config of the course at ``root`` (and the test
    limits), and the submissions of ``students`` (cases of the hostile class)."""
    (base / "source" / "toy").mkdir(parents=True)
    nbformat.write(make_toy.toy_notebook(), base / "source" / "toy" / "toy.ipynb")
    classes.make_course(base, base, ["toy"], config=(root / "nbgrader_config.py").read_text()
                        + TEST_LIMITS)
    release = base / "release" / "toy" / "toy.ipynb"
    for student in students:
        hostile_class.write(base / "submitted" / student / "toy", student,
                            lambda a: classes.fill(release, a))
    return base
