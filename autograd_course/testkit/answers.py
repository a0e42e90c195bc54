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
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass


@dataclass(frozen=True)
class Wrong:
    label: str
    code: str
    diagnosis: tuple[str, ...]
    says: tuple[str, ...] = ()
    hidden_only: bool = False
    not_says: tuple[str, ...] = ()
    noted: bool = False


def wrong(label, code, diagnosis, says=(), hidden_only=False, not_says=(), noted=False
          ) -> Wrong:
    if isinstance(diagnosis, str):
        diagnosis = (diagnosis,)
    return Wrong(label, textwrap.dedent(code).strip("\n"), diagnosis, tuple(says), hidden_only,
                 tuple(not_says), noted)


def function(signature: str, body: str) -> str:
    """A function definition with the given signature line and (dedented) body."""
    return f"{signature}\n" + textwrap.indent(textwrap.dedent(body).strip("\n"), "    ")


