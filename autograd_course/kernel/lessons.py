"""Small helpers the lesson notebooks share: reproducible randomness and showing mistakes.

>>> import torch
>>> from autograd_course.kernel.lessons import show_error
>>> with show_error():
...     torch.tensor([1.0, 2.0], requires_grad=True).numpy()
RuntimeError: Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead.
"""

from __future__ import annotations

import contextlib
import random
import re
import warnings
from collections.abc import Iterator

import numpy as np
import torch

# PyTorch's C++ warnings end with the source file that raised them, a path of the build machine.
_TRIGGERED_AT = re.compile(r"\s*\(Triggered internally at [^)]*\)\s*$")


def seed(value: int = 0) -> None:
    """Seed every random number generator a lesson uses (torch, NumPy, ``random``).

    Call it before drawing random tensors so that a notebook prints the same numbers each
    time it runs. Unlike a bare ``torch.manual_seed(0)`` in a cell, it returns nothing,
    so the cell shows no ``<torch._C.Generator object at 0x...>``.
    """
    torch.manual_seed(value)
    np.random.seed(value)
    random.seed(value)


@contextlib.contextmanager
def show_error() -> Iterator[None]:
    """Run a block that contains a mistake, and print what PyTorch says about it.

    The block's exception (any :class:`Exception`) is caught and printed as
    ``ErrorType: message``; the notebook then goes on with the next cell. Warnings raised
    inside the block are caught as well and printed to stdout as ``PyTorch warns: message``
    (without the build path PyTorch appends), so that they never reach stderr. A block
    that neither fails nor warns prints ``(no error and no warning)``.

    >>> with show_error():
    ...     1 / 0
    ZeroDivisionError: division by zero
    """
    error = None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            yield
        except Exception as err:  # noqa: BLE001 - showing any mistake is the point
            error = err
    for warning in caught:
        print("PyTorch warns:", _TRIGGERED_AT.sub("", str(warning.message)))
    if error is not None:
        print(type(error).__name__ + ":", error)
    elif not caught:
        print("(no error and no warning)")
