"""autograd_course.lab.cost, the lesson tools of unit 06, beyond their doctests."""

from __future__ import annotations

import gc
import weakref

import torch

from autograd_course.lab import cost


def test_the_saved_tensor_log_keeps_no_memory_alive_without_backward():
    # exp saves its own output: a pack hook that returned it would make a cycle (the output
    # refers to its graph node, the node to the output) that only backward() breaks
    x = torch.randn(1000, requires_grad=True)
    with cost.SavedTensorLog() as log:
        y = x.exp()
    assert log.total_bytes == 4000
    alive = weakref.ref(y)
    del y
    gc.collect()
    assert alive() is None
