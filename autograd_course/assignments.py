"""The graded assignments: their names, and the student versions nbgrader makes of them.

``release/`` is never edited by hand: it is what ``nbgrader generate_assignment`` makes from
``source/``. :func:`generate_release` runs nbgrader in a temporary copy of the course (its
``nbgrader_config.py`` and ``source/``), so that the gradebook.db nbgrader creates never lands
in the course directory, and copies the student versions to ``dest``.

>>> from autograd_course.assignments import generate_release
>>> generate_release(".")                       # doctest: +SKIP  (regenerates release/)
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterable
from pathlib import Path

#: The assignments, one per unit, in course order (source/NAME/NAME.ipynb).
UNITS: tuple[str, ...] = (
    "01_gradients",
    "02_three_weights",
    "03_accumulation",
    "04_no_grad",
    "05_sgd",
)

_IGNORE = shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__", "*.pyc", "gradebook.db")


def generate_release(
    course_root: str | Path,
    names: Iterable[str] | None = None,
    dest: str | Path | None = None,
) -> Path:
    """Generate the student versions of the assignments ``names`` (default: all :data:`UNITS`).

    nbgrader's ``generate_assignment NAME --force`` runs, with the course's nbgrader_config.py,
    in a temporary directory holding a copy of that config and of ``source/``. Each
    ``release/NAME`` it makes replaces ``dest/NAME`` (``dest`` defaults to
    ``course_root/release``); other folders in ``dest`` are left alone. Returns ``dest``.
    Raises ``RuntimeError`` with nbgrader's output when nbgrader fails.
    """
    from autograd_course.grading.course import nbgrader

    course_root = Path(course_root).resolve()
    names = list(UNITS if names is None else names)
    dest = course_root / "release" if dest is None else Path(dest)
    with tempfile.TemporaryDirectory(prefix="autograd-course-release-") as tmp:
        work = Path(tmp)
        shutil.copy2(course_root / "nbgrader_config.py", work / "nbgrader_config.py")
        for name in names:
            shutil.copytree(course_root / "source" / name, work / "source" / name, ignore=_IGNORE)
        for name in names:
            result = nbgrader(work, "generate_assignment", name, "--force")
            if result.returncode != 0:
                raise RuntimeError(
                    f"nbgrader generate_assignment {name} failed:\n{result.stdout}{result.stderr}"
                )
        dest.mkdir(parents=True, exist_ok=True)
        for name in names:
            target = dest / name
            if target.exists():
                shutil.rmtree(target)
            shutil.copytree(work / "release" / name, target, ignore=_IGNORE)
    return dest
