"""The test kit: what only the tests and the instructor's dry run use, never a student's kernel.

- :mod:`.answers` and one module per unit (``u01_gradients``...): the catalogue of typical
  wrong answers, each with the diagnosis the grader must give;
- :data:`WRONG_ANSWERS` gathers them: ``WRONG_ANSWERS[(assignment, grade_id)]``.
"""

from __future__ import annotations

import importlib
import pkgutil

from autograd_course.testkit.answers import Wrong


def _catalogue() -> dict[tuple[str, str], list[Wrong]]:
    found: dict[tuple[str, str], list[Wrong]] = {}
    for module in pkgutil.iter_modules(__path__):
        if module.name.startswith("u") and module.name[1:3].isdigit():
            unit = importlib.import_module(f"{__name__}.{module.name}")
            for grade_id, answers in unit.WRONG.items():
                found[(module.name[1:], grade_id)] = answers
    return found


#: Every unit's typical wrong answers, by (assignment, grade_id of the solution cell).
WRONG_ANSWERS: dict[tuple[str, str], list[Wrong]] = _catalogue()
