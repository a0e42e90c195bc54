"""Checks for the graded exercises: compare an answer and, when it is wrong, name the mistake.

Every test cell (visible and hidden parts alike) uses these functions, so the feedback is the
same everywhere. The mistakes named, and how the judge runs these checks:
docs/design.md#autograd_coursekernelchecks__init__py.

- a failed check raises :class:`CheckError`, an ``AssertionError`` whose message says what is
  wrong and how to fix it; with ``reveal=False`` (the default, hidden tests) it never contains
  the expected values, and ``reveal=True`` (visible checks) adds them, with the actual ones;
- a question not answered yet is :class:`NotAnswered` (a CheckError), never a misconception;
- test code reads the same in the student's kernel and in the judge;
- test code imports from this package, the home of the public names (their ``__module__``);
  importing it installs the notebook's error handler (:func:`_short_errors_in_test_cells`).

>>> import torch
>>> from autograd_course.kernel.checks import check_tensor
>>> check_tensor(torch.tensor([2.0, 4.0]), torch.tensor([2.0, 4.0]), name="x.grad")
>>> check_tensor(torch.tensor([4.0, 8.0]), torch.tensor([2.0, 4.0]), name="x.grad")
Traceback (most recent call last):
...
autograd_course.kernel.checks.CheckError: x.grad is twice the right value: ...

One module per job: :mod:`.contract`, :mod:`.errors`, :mod:`.values`, :mod:`.gradients`,
:mod:`.predictions`, :mod:`.inputs`, :mod:`.judged`, :mod:`.notebook`, :mod:`.answer_forms`,
:mod:`.functions`.
"""

from __future__ import annotations

import types

from autograd_course.kernel.checks.contract import JUDGE
from autograd_course.kernel.checks.errors import NOTE, CheckError, NotAnswered, StudentError
from autograd_course.kernel.checks.errors import _fact as _fact
from autograd_course.kernel.checks.errors import _fail as _fail
from autograd_course.kernel.checks.errors import _what_it_is as _what_it_is
from autograd_course.kernel.checks.functions import (
    StandInContext,
    own_backward,
    own_jvp,
    own_methods,
)
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
    bounded,
    check_memory,
    current,
    in_kernel,
    kernel_memory_use,
    named_errors,
    proxy,
    run_answer,
    visible_checks_passed,
)
from autograd_course.kernel.checks.notebook import _short_errors_in_test_cells
from autograd_course.kernel.checks.predictions import (
    check_prediction,
    check_prediction_format,
    check_predictions,
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
    "StudentError", "accumulation_inputs", "bounded", "check_accumulated_grad",
    "check_bool_format", "check_equal", "check_grad_fn_name", "check_gradient_of",
    "check_independent_copy", "check_inference", "check_is_leaf", "check_leaf_answer",
    "check_memory", "check_no_graph", "check_number", "check_number_format", "check_prediction",
    "check_prediction_format", "check_predictions", "check_shape", "check_tensor",
    "check_tuple", "check_untouched",
    "current", "fresh", "fresh_float", "fresh_int", "in_kernel", "kernel_memory_use",
    "named_errors", "proxy", "raised_by", "run_answer", "visible_checks_passed",
]

# The checks' functions and classes keep this package as their home, as when it was one module:
# tracebacks, pickles by reference and ``__module__`` name autograd_course.kernel.checks.X.
for _name in __all__:
    if isinstance(globals()[_name], type | types.FunctionType):
        globals()[_name].__module__ = __name__
del _name

#: Sent into the student's kernel by value, these keep their own module as their home (the
#: cloudpickle registration of :mod:`.functions` is by module name).
__all__ += ["StandInContext", "own_backward", "own_jvp", "own_methods"]

_short_errors_in_test_cells()
