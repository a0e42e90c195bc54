"""``check_predictions``: a set of predictions is told how many are wrong, never which.

A prediction question that named its wrong item (or gave the reason that fits it) could be
solved by flipping one item and re-checking; the check's message must read the same whichever
items are wrong, and hold no expected value.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch

from autograd_course.kernel.checks import CheckError, check_predictions

TRUTH = {"a": True, "b": -8.0, "c": None, "d": torch.tensor([6.0, 12.0]), "e": "same"}
WRONG = {"a": False, "b": -4.0, "c": torch.tensor([1.0, 1.0]), "d": torch.tensor([2.0, 4.0]),
         "e": "A"}


def message_of(given, truth, **kwargs) -> CheckError:
    with pytest.raises(CheckError) as info:
        check_predictions(given, truth, **kwargs)
    return info.value


def test_right_predictions_pass_in_any_accepted_form():
    check_predictions(dict(TRUTH), TRUTH, name="predicted")
    check_predictions({"a": np.bool_(True), "b": np.float32(-8.0), "c": None,
                       "d": torch.tensor([6.0, 12.0], dtype=torch.float64), "e": "same"},
                      TRUTH, name="predicted")
    check_predictions([True, False], (True, False), name="raises")
    check_predictions((-8, 1e-7), [-8.0, 0.0], name="predicted")  # an int; within atol


@pytest.mark.parametrize("k", range(1, len(TRUTH) + 1))
def test_the_message_gives_the_count_and_reads_the_same_whichever_items_are_wrong(k):
    messages = set()
    for keys in itertools.combinations(TRUTH, k):
        given = {key: WRONG[key] if key in keys else TRUTH[key] for key in TRUTH}
        error = message_of(given, TRUTH, name="predicted", explain="Go through all five again.")
        assert error.diagnosis == "predictions"
        assert not error.reveal
        messages.add(str(error))
    verb = "is" if k == 1 else "are"
    assert messages == {f"{k} of the 5 predictions in predicted {verb} wrong (the check does not "
                        "say which: work each one out from the rule it tests). Go through all "
                        "five again."}


@pytest.mark.parametrize(("given", "truth"), [
    ((1, False), (True, False)),  # a number is not a bool
    ((True, "False"), (True, False)),  # nor a string
    ((torch.tensor([6.0]),), (torch.tensor([6.0, 6.0]),)),  # another shape
    ((float("nan"),), (1.0,)),
    ((None,), (0.0,)),
    ((0.0,), (None,)),
    ((True,), (1.0,)),  # a bool is not a number
])
def test_an_item_of_another_kind_counts_as_wrong(given, truth):
    assert str(message_of(given, truth, name="p")).startswith(f"1 of the {len(truth)} ")


def test_a_different_set_of_items_fails_on_the_form_and_names_no_value():
    assert message_of({"a": True}, {"a": True, "b": False}, name="raises").diagnosis == "shape"
    assert message_of([True], [True, False], name="raises").diagnosis == "shape"
    assert message_of("TF", [True, False], name="raises").diagnosis == "type"
