"""The checks of assignment 06 (what autograd costs), run by the judge.

They name the typical mistakes of a byte count, a predicted set of saved tensors and a
choice between two formulations. Like everything in :mod:`autograd_course.grading`, this
module is the grader's: the student's kernel does not see it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from autograd_course.kernel.checks import CheckError
from autograd_course.kernel.checks.answer_forms import (  # noqa: F401 (the visible tests' checks, re-exported)
    check_byte_count,
    check_choices_format,
    check_names_format,
)


def check_saved_names(given: set[str], expected: Iterable[str], name: str = "saved_names", *,
                      mistakes=()) -> None:
    """Check a predicted set of names against ``expected`` (measured by the test).

    ``mistakes`` are ``(condition, diagnosis, message)`` triples, the test's own reading of
    the answer (e.g. ``"b" in given and "c" not in given``): when the set is wrong, the
    first true condition names the mistake; otherwise the answer is just wrong.
    """
    expected = set(expected)
    if set(given) == expected:
        return
    for condition, diagnosis, message in mistakes:
        if condition:
            raise CheckError(f"{name} is wrong: {message}", diagnosis, sorted(expected))
    wrong = len(set(given) ^ expected)
    raise CheckError(f"{name} is wrong: {wrong} name{'s are' if wrong > 1 else ' is'} on the "
                     "wrong side. Go through the expression one operation at a time: what "
                     "does its backward formula need?", "values", sorted(expected))


def check_cheaper(actual, expected: Sequence[str], name: str = "cheaper", *,
                  mistakes: Sequence[tuple[str, str]] = ()) -> None:
    """Check a list of choices, one per pair of formulations: "A", "B" or "same".

    ``expected`` holds the truth (measured by the test). ``mistakes[i]`` is the
    ``(diagnosis, message)`` of a wrong choice for pair i; the first wrong pair is reported.
    """
    check_choices_format(actual, len(expected), name)
    for i, (given, truth) in enumerate(zip(actual, expected, strict=True)):
        if given != truth:
            diagnosis, message = mistakes[i] if i < len(mistakes) else (
                "values", "count the bytes each formulation saves, storage by storage.")
            raise CheckError(f"{name}[{i}] (pair {i + 1}) is wrong: {message}", diagnosis,
                             list(expected))
