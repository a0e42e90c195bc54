"""Checks for the graded exercises: compare an answer and, when it is wrong, name the mistake.

Every test cell of the assignments (visible and hidden parts alike) uses these functions, so the
feedback is the same everywhere. A failed check raises :class:`CheckError`, an
``AssertionError`` whose message says what is wrong and how to fix it:

- a gradient that is ``None`` (no ``requires_grad=True``, or no ``backward()``),
- a gradient that is two (three, four) times the answer (accumulated over several ``backward()``),
- the wrong sign, the wrong shape, the wrong dtype, NaN or infinite values,
- a result that still records a computation graph where it must not,
- ``.grad`` read from a non-leaf tensor (which PyTorch never fills),
- a "copy" that shares memory with its source, a tensor not made in ``torch.inference_mode()``,
- a predicted exception that is not the one the code raises.

With ``reveal=False`` (the default, used by hidden tests) a message never contains the expected
values; ``reveal=True`` (visible checks) adds them, together with the actual ones.

A question not answered yet is :class:`NotAnswered` (a CheckError), never a misconception: in
the learner's kernel, :func:`run_answer` and :func:`in_kernel` turn the template's ``raise
NotImplementedError()`` into it, and a visible test cell that meets that stub or a name its
answer cell never defined shows it as one red line too (:func:`_short_errors_in_test_cells`).

>>> import torch
>>> from autograd_course.kernel.checks import check_tensor
>>> check_tensor(torch.tensor([2.0, 4.0]), torch.tensor([2.0, 4.0]), name="x.grad")
>>> check_tensor(torch.tensor([4.0, 8.0]), torch.tensor([2.0, 4.0]), name="x.grad")
Traceback (most recent call last):
...
autograd_course.kernel.checks.CheckError: x.grad is twice the right value: ...

Two places run these checks. In a student's own kernel (and in ``nbgrader validate``) a test
cell runs as written. When the course grades, a test cell runs in the judge
(:mod:`autograd_course.grading.boundary.judge`), outside the student's kernel: the student's
names are then stand-ins that fetch values from the kernel or call functions there
(:class:`~autograd_course.kernel.wire.RemoteFunction`), :func:`run_answer` and :func:`in_kernel`
send calls into the kernel, the autograd facts of a tensor are those the kernel reported
(:func:`~autograd_course.kernel.wire.facts`), and :func:`fresh` draws from the judge's seeded
generator. Test code reads the same either way.

One module per job: :mod:`.contract` (what checks may ask of the judge, and :data:`JUDGE`),
:mod:`.errors` (the failures), :mod:`.values`, :mod:`.gradients`, :mod:`.predictions` (the
checks), :mod:`.inputs` (fresh random inputs), :mod:`.judged` (calling the student's code),
:mod:`.notebook` (a visible test cell's error in the learner's notebook) and
:mod:`.answer_forms` (assignment 06's form checks, imported from there). Test code imports
from this package, the home of the public names (their ``__module__``); importing it installs
the notebook's error handler, as it always did.
"""

from __future__ import annotations

import types

from autograd_course.kernel.checks.contract import JUDGE
from autograd_course.kernel.checks.errors import NOTE, CheckError, NotAnswered, StudentError
from autograd_course.kernel.checks.errors import _fact as _fact
from autograd_course.kernel.checks.errors import _fail as _fail
from autograd_course.kernel.checks.errors import _what_it_is as _what_it_is
from autograd_course.kernel.checks.gradients import (
    check_grad_fn_name,
    check_gradient_of,
    check_independent_copy,
    check_inference,
    check_is_leaf,
    check_leaf_answer,
    check_no_graph,
    check_untouched,
)
from autograd_course.kernel.checks.inputs import (
    ACCUMULATION_RTOL,
    accumulation_inputs,
    check_accumulated_grad,
    fresh,
    fresh_float,
    fresh_int,
)
from autograd_course.kernel.checks.judged import (
    MemoryUse,
    check_memory,
    current,
    in_kernel,
    kernel_memory_use,
    proxy,
    run_answer,
    visible_checks_passed,
)
from autograd_course.kernel.checks.notebook import _short_errors_in_test_cells
from autograd_course.kernel.checks.predictions import (
    check_prediction,
    check_prediction_format,
    raised_by,
)
from autograd_course.kernel.checks.values import (
    check_bool_format,
    check_equal,
    check_number,
    check_number_format,
    check_shape,
    check_tensor,
    check_tuple,
)

#: What ``from autograd_course.kernel.checks import *`` binds (a locked cell's names shadow the
#: student's in the judge: never a submodule's name such as ``values`` or ``inputs``).
__all__ = [
    "ACCUMULATION_RTOL", "JUDGE", "NOTE", "CheckError", "MemoryUse", "NotAnswered",
    "StudentError", "accumulation_inputs", "check_accumulated_grad", "check_bool_format",
    "check_equal", "check_grad_fn_name", "check_gradient_of", "check_independent_copy",
    "check_inference", "check_is_leaf", "check_leaf_answer", "check_memory", "check_no_graph",
    "check_number", "check_number_format", "check_prediction", "check_prediction_format",
    "check_shape", "check_tensor", "check_tuple", "check_untouched", "current", "fresh",
    "fresh_float", "fresh_int", "in_kernel", "kernel_memory_use", "proxy", "raised_by",
    "run_answer", "visible_checks_passed",
]

# The checks' functions and classes keep this package as their home, as when it was one module:
# tracebacks, pickles by reference and ``__module__`` name autograd_course.kernel.checks.X.
for _name in __all__:
    if isinstance(globals()[_name], type | types.FunctionType):
        globals()[_name].__module__ = __name__
del _name

_short_errors_in_test_cells()
