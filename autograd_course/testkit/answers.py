"""Typical wrong answers to the graded exercises: the record of one, and helpers to write them.

``WRONG_ANSWERS[(assignment, grade_id)]`` lists :class:`Wrong` answers: ``code`` replaces the
question's solution cell, and grading the question's test cell must then fail with a
diagnosis in ``diagnosis`` (a ``CheckError``'s code, or "blank" for an answer left out),
with a message that contains every string of ``says`` and none of ``not_says``
(case-insensitive). ``hidden_only`` answers pass the visible checks and are caught by the
hidden tests only (e.g. a hard-coded answer). A ``noted`` answer is wrong only in a fact the
student's kernel reports about its own tensor (a graph kept, shared memory, not an inference
tensor): the judge gives the points its values earn and shows the diagnosis as a note worth
no points, while the learner's visible check fails on it.

Every rule a question's prompt states is checked by its visible test on a fixed example: an
answer that ``breaks`` a rule quotes it (words of the prompt) and must fail the visible
checks. Only three kinds of wrong answer pass them, each named by ``hidden_only``
(:data:`HIDDEN_ONLY`); the hidden tests differ in inputs, never in rules.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass

#: Why a wrong answer may pass the visible checks: what no fixed example can catch.
HIDDEN_ONLY = {
    "prediction": "a prediction: the visible test checks its form, its value is the question",
    "hard-coded": "right on the visible example only (its numbers typed in or special-cased); "
    "every notebook's introduction says the hidden tests use other inputs",
    "gaming": "an answer that games the grader (plants the targets on a long run)",
}


@dataclass(frozen=True)
class Wrong:
    label: str
    code: str
    diagnosis: tuple[str, ...]
    says: tuple[str, ...] = ()
    hidden_only: str = ""
    not_says: tuple[str, ...] = ()
    noted: bool = False
    breaks: str = ""


def wrong(label, code, diagnosis, says=(), hidden_only="", not_says=(), noted=False,
          breaks="") -> Wrong:
    """A :class:`Wrong` answer; ``hidden_only`` is a key of :data:`HIDDEN_ONLY`, ``breaks``
    the words of the prompt that state the rule it breaks."""
    if isinstance(diagnosis, str):
        diagnosis = (diagnosis,)
    if hidden_only and hidden_only not in HIDDEN_ONLY:
        raise ValueError(f"{label}: hidden_only must be one of {sorted(HIDDEN_ONLY)}")
    return Wrong(label, textwrap.dedent(code).strip("\n"), diagnosis, tuple(says), hidden_only,
                 tuple(not_says), noted, breaks)


def function(signature: str, body: str) -> str:
    """A function definition with the given signature line and (dedented) body."""
    return f"{signature}\n" + textwrap.indent(textwrap.dedent(body).strip("\n"), "    ")


