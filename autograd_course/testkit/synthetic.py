"""Synthetic classes: submissions built from the reference answers and typical mistakes.

The instructor's dry run (``autograd-course demo``), the grading benchmark and the tests use
them to grade a realistic class end to end without real students. A synthetic student follows
a profile: ``right`` (every reference answer), ``mistakes`` (a typical wrong answer to every
question, from the test kit's catalogue), ``blank`` (the student version as
released), ``mixed`` (a different mix per student) or ``tamper`` (mistakes plus code that
replaces ``torch.allclose``, which the grader must neither reward nor miss).
"""

from __future__ import annotations

import random
from pathlib import Path

import nbformat

from autograd_course.testkit import WRONG_ANSWERS
from autograd_course.testkit.notebooks import fill, reference_answers

PROFILES = ("right", "mistakes", "blank", "mixed", "tamper")
TAMPERING = "\nimport torch\ntorch.allclose = lambda *args, **kwargs: True  # always 'equal'"


def answers_for(profile: str, assignment: str, reference: dict[str, str], rng: random.Random
                ) -> dict[str, str]:
    """The solution-cell sources a student of ``profile`` hands in."""
    chosen = {}
    for index, (grade_id, code) in enumerate(sorted(reference.items())):
        mistakes = WRONG_ANSWERS.get((assignment, grade_id), [])
        kind = profile
        if profile == "mixed":
            kind = rng.choice(["right", "mistakes", "blank"])
        if kind == "right" or (kind in ("mistakes", "tamper") and not mistakes):
            chosen[grade_id] = code
        elif kind in ("mistakes", "tamper"):
            chosen[grade_id] = mistakes[rng.randrange(len(mistakes))].code
        if profile == "tamper" and index == 0:
            chosen[grade_id] = chosen.get(grade_id, code) + TAMPERING
    return chosen


def synthetic_class(source_notebook: Path, release_notebook: Path, assignment: str,
                    students: list[tuple[str, str]], seed: int = 0
                    ) -> dict[str, nbformat.NotebookNode]:
    """Build one notebook per (student id, profile) for ``assignment``."""
    rng = random.Random(seed)
    reference = reference_answers(source_notebook)
    return {student: fill(release_notebook, answers_for(profile, assignment, reference, rng))
            for student, profile in students}


def cycle_profiles(n: int, profiles: tuple[str, ...] = PROFILES) -> list[tuple[str, str]]:
    """``n`` student ids (student001...) with profiles taken in turn."""
    return [(f"student{i + 1:03d}", profiles[i % len(profiles)]) for i in range(n)]


DEMO_CLASS = [("ada", "right"), ("blaise", "mistakes"), ("carl", "blank"), ("dora", "mixed"),
              ("emmy", "mixed"), ("fermat", "tamper")]
