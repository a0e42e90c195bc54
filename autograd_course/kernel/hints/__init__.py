"""Hints for the graded exercises: ``hint("q1")`` shows the next hint of question 1.

Each question has at least two hints, from a nudge to a near-answer; each assignment's hints
live in a module of this package named after it (``u01_gradients``...). A notebook's first
cell makes its hint function, ``hint = hints_for("01_gradients")``; each call of
``hint("q1")`` shows the next level (the last one again once all are shown), and
``hint("q1", 1)`` shows a given level. Hints never cost points: nothing is recorded, and the
grader never sees them.

>>> hint = hints_for("01_gradients")
>>> hint("q4")  # doctest: +ELLIPSIS
Hint 1/2 for q4: ...
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping


class Hints:
    """The hints of one assignment; call it with a question ("q1") to see the next hint."""

    def __init__(self, assignment: str, texts: Mapping[str, tuple[str, ...]]):
        self.assignment = assignment
        self.texts = texts
        self.shown: dict[str, int] = {}

    def __call__(self, question: str, level: int | None = None) -> None:
        if question not in self.texts:
            known = ", ".join(sorted(self.texts))
            print(f"No hints for {question!r} in {self.assignment} (questions: {known}).")
            return
        hints = self.texts[question]
        if level is None:
            level = min(self.shown.get(question, 0) + 1, len(hints))
        level = max(1, min(level, len(hints)))
        self.shown[question] = level
        print(f"Hint {level}/{len(hints)} for {question}: {hints[level - 1]}")
        if level < len(hints):
            print(f'(Run hint("{question}") again for a more direct hint. Hints cost no points.)')


def texts_of(assignment: str) -> Mapping[str, tuple[str, ...]]:
    """The hints of an assignment, by question ("q1": (first hint, second hint, ...))."""
    return importlib.import_module(f"{__name__}.u{assignment}").HINTS


def hints_for(assignment: str) -> Hints:
    """The hint function of an assignment's notebook."""
    return Hints(assignment, texts_of(assignment))
