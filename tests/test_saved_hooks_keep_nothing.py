"""Saved-tensors hooks that keep nothing alive: 06 Q1's reference and what lesson 06 says.

The graph keeps its pack hook, so whatever the hook holds lives as long as the graph; a hook
that holds (or returns) an output that its operation saved, such as exp's, makes a cycle that
``gc.collect()`` cannot free. The reference ``saved_bytes`` must leave nothing behind, and the
lesson's statements about it (``notebooks/06_cost.ipynb``, section 2) hold on this torch.
"""

from __future__ import annotations

import gc
import weakref

import pytest
import torch
from support.exercises import cell_of, source_path
from torch.autograd.graph import saved_tensors_hooks

from autograd_course.testkit.notebooks import reference_answers


def reference_saved_bytes():
    """06 Q1's reference ``saved_bytes``, run after the notebook's imports cell."""
    namespace: dict = {}
    exec(cell_of("06_cost", "imports").source, namespace)
    exec(reference_answers(source_path("06_cost"))["q1_saved_bytes"], namespace)
    return namespace["saved_bytes"]


def exp_then_sum(x, box):
    """``x.exp().sum()``, noting a weak reference to the exp result (which exp saves)."""
    y = x.exp()
    box.append(weakref.ref(y))
    return y.sum()


def test_the_reference_saved_bytes_keeps_nothing_alive():
    saved_bytes, box = reference_saved_bytes(), []
    x = torch.randn(1000, requires_grad=True)
    assert saved_bytes(exp_then_sum, x, box) == 4000
    gc.collect()
    assert box[0]() is None, "saved_bytes keeps the exp result alive after it returns"


def holds_the_tensor():
    held = []

    def pack(t):
        held.append(t)
        return t.detach()

    return pack


def returns_the_tensor():
    return lambda t: t


def holds_numbers():
    sizes = {}

    def pack(t):
        sizes[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
        return t.detach()

    return pack


@pytest.mark.parametrize(
    ("make_pack", "leaks"),
    [(holds_the_tensor, True), (returns_the_tensor, True), (holds_numbers, False)],
)
@pytest.mark.parametrize("backward", [False, True])
def test_what_the_lesson_says_a_pack_hook_may_keep(make_pack, leaks, backward):
    x = torch.randn(1000, requires_grad=True)
    pack = make_pack()
    with saved_tensors_hooks(pack, lambda t: t):
        y = x.exp()
        total = y.sum()
    output, hook = weakref.ref(y), weakref.ref(pack)
    del y, pack
    gc.collect()
    assert hook() is not None, "the graph keeps its pack hook"
    if backward:
        total.backward()
    del total
    gc.collect()
    # a cycle through the output only backward() breaks; numbers and t.detach() make none
    assert (output() is not None) == (leaks and not backward)
    assert (hook() is not None) == (leaks and not backward)
