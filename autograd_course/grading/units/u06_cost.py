"""The checks of assignment 06 (what autograd costs), run by the judge.

They name the typical mistakes of a byte count, a predicted set of saved tensors and a
choice between two formulations. Like everything in :mod:`autograd_course.grading`, this
module is the grader's: the student's kernel does not see it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import torch

from autograd_course.checks import CheckError, check_number


def _type_name(value) -> str:
    return getattr(value, "type_name", None) or type(value).__name__


def check_byte_count(actual, expected: int, name: str = "result", *, reveal: bool = False,
                     mistakes=()) -> None:
    """Check a number of bytes: an int equal to ``expected``.

    Saved tensors returned instead of a number, a float, or a tensor are refused with a
    message that says what to return. ``mistakes`` are ``(wrong_count, diagnosis, message)``
    triples, as for :func:`autograd_course.checks.check_number`.
    """
    items = actual if isinstance(actual, list | tuple) else ()
    if isinstance(actual, torch.Tensor) or any(isinstance(t, torch.Tensor) for t in items):
        what = ("a tensor" if isinstance(actual, torch.Tensor)
                else f"a {_type_name(actual)} of tensors")
        raise CheckError(
            f"{name} should be a number of bytes (an int), but it is {what}: "
            "return the total of t.untyped_storage().nbytes() over the unique storages "
            "saved, not the saved tensors themselves (use int(...) on a one-element "
            "tensor).", "type", expected, reveal)
    if isinstance(actual, float):
        raise CheckError(f"{name} should be an int (a number of bytes), but it is a float.",
                         "type", expected, reveal)
    check_number(actual, expected, name=name, rtol=0.0, atol=0.5, reveal=reveal,
                 mistakes=mistakes)


def check_names_format(actual, allowed: Sequence[str], name: str = "saved_names") -> None:
    """Check that ``actual`` (the answer as a sorted list) holds names among ``allowed``."""
    if not isinstance(actual, list):
        raise CheckError(f"{name} should be a set of names such as {{'x', 'a'}}, but it is "
                         f"a {_type_name(actual)}.", "type")
    for item in actual:
        if not isinstance(item, str):
            raise CheckError(f"{name} should hold names as strings (such as 'x'), but it "
                             f"holds a {_type_name(item)}.", "type")
        if item not in allowed:
            raise CheckError(f"{name} holds {item!r}, which is not one of the names of the "
                             f"expression ({', '.join(allowed)}).", "type")


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


CHOICES = ("A", "B", "same")


def check_choices_format(actual, pairs: int, name: str = "cheaper") -> None:
    """Check that ``actual`` is a list of ``pairs`` choices, each "A", "B" or "same"."""
    if not isinstance(actual, list | tuple):
        raise CheckError(f"{name} should be a list such as ['A', 'same', 'B'], but it is a "
                         f"{_type_name(actual)}.", "type")
    for item in actual:
        if item not in CHOICES:
            raise CheckError(f"{name} holds {item!r}: each item must be 'A', 'B' or 'same' "
                             "(strings, with these capitals).", "type")
    if len(actual) != pairs:
        raise CheckError(f"{name} should have {pairs} items, one per pair, but it has "
                         f"{len(actual)}.", "shape")


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
