"""Checks of an answer's form, for the visible tests (kernel side, like the other checks).

A byte count, a set of names and a list of choices: what assignment 06's visible tests check
before any value counts, in the learner's kernel and in the judge alike. The checks that
compare an answer with the truth stay the grader's (:mod:`autograd_course.grading.units`).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from autograd_course.kernel.checks.errors import CheckError, _what_it_is
from autograd_course.kernel.checks.values import check_number


def check_byte_count(actual, expected: int, name: str = "result", *, reveal: bool = False,
                     mistakes=()) -> None:
    """Check a number of bytes: an int equal to ``expected``.

    Saved tensors returned instead of a number, a float, or a tensor are refused with a
    message that says what to return. ``mistakes`` are ``(wrong_count, diagnosis, message)``
    triples, as for :func:`autograd_course.kernel.checks.check_number`.
    """
    items = actual if isinstance(actual, list | tuple) else ()
    if isinstance(actual, torch.Tensor) or any(isinstance(t, torch.Tensor) for t in items):
        what = "a tensor" if isinstance(actual, torch.Tensor) else "a collection of tensors"
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
        raise CheckError(f"{name} should be a set of names such as {{'x', 'a'}}, but "
                         f"{_what_it_is(actual)}.", "type")
    for item in actual:
        if not isinstance(item, str):
            raise CheckError(f"{name} should hold names as strings (such as 'x'), but one "
                             f"of them is not: {_what_it_is(item)}.", "type")
        if item not in allowed:
            raise CheckError(f"{name} holds {item!r}, which is not one of the names of the "
                             f"expression ({', '.join(allowed)}).", "type")


CHOICES = ("A", "B", "same")


def check_choices_format(actual, pairs: int, name: str = "cheaper") -> None:
    """Check that ``actual`` is a list of ``pairs`` choices, each "A", "B" or "same"."""
    if not isinstance(actual, list | tuple):
        raise CheckError(f"{name} should be a list such as ['A', 'same', 'B'], but "
                         f"{_what_it_is(actual)}.", "type")
    for item in actual:
        if item not in CHOICES:
            raise CheckError(f"{name} holds {item!r}: each item must be 'A', 'B' or 'same' "
                             "(strings, with these capitals).", "type")
    if len(actual) != pairs:
        raise CheckError(f"{name} should have {pairs} items, one per pair, but it has "
                         f"{len(actual)}.", "shape")
