"""Helpers for lesson 09 (extending autograd): long or machine-specific messages, short, and
which ``torch.func`` transforms a custom Function supports.

PyTorch's messages about custom Functions can be long (``gradcheck`` prints whole
Jacobians) or name files of the machine they ran on (anomaly mode prints the traceback of
the forward call). :func:`show_error_short` shows what
:func:`autograd_course.kernel.lessons.show_error` shows, with each message cut to its first
lines and every traceback reduced to its last line of code, so that a lesson's output is
the same on every machine:

>>> import warnings
>>> with show_error_short(lines=1):
...     warnings.warn("first line\\nsecond line")
...     raise ValueError("bad value")
PyTorch warns: first line
    ... (1 more line)
ValueError: bad value

:func:`transform_table` tries each transform of ``torch.func`` on a Function and prints
which work, with the first sentence of each message PyTorch gives where one fails.
"""

from __future__ import annotations

import contextlib
import io
import re
import warnings
from collections.abc import Callable, Iterator

import torch
from torch import func

from autograd_course.kernel.checks.functions import defines
from autograd_course.kernel.lessons import show_error

#: The first line of a traceback's frame: ``  File "/some/path.py", line 12, in name``.
_FRAME = re.compile(r'^\s*File "[^"]*", line \d+, in ')
#: Where a new message begins in what ``show_error`` prints.
_MESSAGE = re.compile(r"^(PyTorch warns: |[A-Za-z_]\w*(Error|Exception): |\(no error)")


def drop_paths(text: str) -> str:
    """Replace each traceback in ``text`` (its ``File "...", line N`` frames) by its last line
    of code, the one that ran last: file paths and line numbers differ between machines.

    >>> print(drop_paths('Traceback:\\n  File "/a.py", line 3, in f\\n    g()\\n'
    ...                  '  File "/b.py", line 9, in g\\n    y = x.exp()\\nEnd'))
    Traceback:
        y = x.exp()
    End
    """
    kept: list[str] = []
    code, in_frames = None, False
    for line in text.split("\n"):
        if _FRAME.match(line):
            in_frames, code = True, None
            continue
        if in_frames and line.startswith("    "):
            if code is None and line.strip(" ^~"):  # the frame's code, not its ^^^ markers
                code = line.strip()
            continue
        if in_frames:
            kept.append(f"    {code}")
            in_frames = False
        kept.append(line)
    if in_frames:
        kept.append(f"    {code}")
    return "\n".join(kept)


def shorten(text: str, lines: int | None) -> str:
    """Keep the first ``lines`` lines of each message in ``text`` (``None``: all of them),
    and say how many lines were left out.

    >>> print(shorten("ValueError: one\\ntwo\\nthree", 2))
    ValueError: one
    two
        ... (1 more line)
    """
    messages: list[list[str]] = []
    for line in text.rstrip("\n").split("\n"):
        if _MESSAGE.match(line) or not messages:
            messages.append([line])
        else:
            messages[-1].append(line)
    kept = []
    for message in messages:
        if lines is not None and len(message) > lines:
            left_out = len(message) - lines
            message = message[:lines] + [f"    ... ({left_out} more line{'s' * (left_out > 1)})"]
        kept.extend(message)
    return "\n".join(kept)


@contextlib.contextmanager
def show_error_short(lines: int | None = None) -> Iterator[None]:
    """Like :func:`autograd_course.kernel.lessons.show_error`, with each message shortened.

    The block's exception and warnings are printed as ``show_error`` prints them (to stdout,
    never to stderr), each cut to its first ``lines`` lines (``None``: whole), and every
    traceback inside a message (anomaly mode's "Traceback of forward call") reduced to its
    last line of code, without the file paths and line numbers of this machine. What the
    block itself prints is shortened the same way.
    """
    buffer = io.StringIO()
    try:
        with contextlib.redirect_stdout(buffer), show_error():
            yield
    finally:
        print(shorten(drop_paths(buffer.getvalue()), lines))


#: The transforms :func:`transform_table` tries, in its column order.
TRANSFORMS = ("grad", "jacrev", "vmap", "jacfwd", "jvp", "hessian")


def first_sentence(error: Exception) -> str:
    """``ErrorType: the first sentence of the message`` (PyTorch's messages about
    transforms go on with advice and a link).

    >>> first_sentence(ValueError("Bad input. Try another one. See the docs."))
    'ValueError: Bad input.'
    """
    line = str(error).split("\n")[0]
    head, dot, _ = line.partition(". ")
    return f"{type(error).__name__}: {head}{dot.strip()}"


def try_transforms(function: Callable, *inputs: torch.Tensor) -> dict[str, str | None]:
    """Each of :data:`TRANSFORMS` applied to ``function`` at ``inputs``: ``None`` where it
    works, else the first sentence of its error (:func:`first_sentence`).

    ``grad`` and ``hessian`` differentiate ``function(*inputs).sum()``; ``jacrev`` and
    ``jacfwd`` take the Jacobian with respect to the first input; ``vmap`` maps over a batch
    of two copies of the first input (the others shared); ``jvp`` pushes tangents of ones.

    >>> try_transforms(torch.sin, torch.tensor([0.0, 1.0]))["hessian"] is None
    True
    """
    rest = (None,) * (len(inputs) - 1)
    first = inputs[0]

    def total(*args: torch.Tensor) -> torch.Tensor:
        return function(*args).sum()

    calls = {
        "grad": lambda: func.grad(total)(*inputs),
        "jacrev": lambda: func.jacrev(function)(*inputs),
        "vmap": lambda: func.vmap(function, in_dims=(0, *rest))(
            torch.stack([first, first]), *inputs[1:]),
        "jacfwd": lambda: func.jacfwd(function)(*inputs),
        "jvp": lambda: func.jvp(function, inputs, tuple(torch.ones_like(t) for t in inputs)),
        "hessian": lambda: func.hessian(total)(*inputs),
    }
    results: dict[str, str | None] = {}
    for name in TRANSFORMS:
        try:
            with warnings.catch_warnings():
                # torch's first forward-mode call scripts decompositions with the deprecated
                # torch.jit.script: its warning is about torch's own code, not the Function
                warnings.simplefilter("ignore", DeprecationWarning)
                calls[name]()
            results[name] = None
        except Exception as error:  # noqa: BLE001 - which transform fails, and how, is the point
            results[name] = first_sentence(error)
    return results


def transform_table(rows: list[tuple[type, tuple[torch.Tensor, ...]]]) -> None:
    """Print, for each ``(FunctionClass, inputs)``, the rules the class has (``setup_context``,
    ``jvp``, a vmap rule: ``generate_vmap_rule = True`` or its own ``vmap``) and which of
    :data:`TRANSFORMS` work on ``FunctionClass.apply`` at ``inputs`` ("yes", or the number
    of the message printed under the table).

    >>> class Double(torch.autograd.Function):
    ...     generate_vmap_rule = True
    ...     @staticmethod
    ...     def forward(x):
    ...         return 2 * x
    ...     @staticmethod
    ...     def setup_context(ctx, inputs, output):
    ...         pass
    ...     @staticmethod
    ...     def backward(ctx, grad_output):
    ...         return 2 * grad_output
    >>> transform_table([(Double, (torch.tensor([1.0, 2.0]),))])
    Function  setup_context jvp vmap rule | grad jacrev vmap jacfwd jvp hessian
    Double    yes           no  yes       | yes  yes    yes  (1)    (1) (1)
    (1) NotImplementedError: You must implement the jvp function for custom autograd.Function ...
    """
    rules = ("setup_context", "jvp", "vmap rule")
    messages: list[str] = []
    lines = []
    for function_class, inputs in rows:
        has = {"setup_context": defines(function_class, "setup_context"),
               "jvp": defines(function_class, "jvp"),
               "vmap rule": function_class.generate_vmap_rule or defines(function_class, "vmap")}
        cells = [function_class.__name__] + ["yes" if has[rule] else "no" for rule in rules]
        for message in try_transforms(function_class.apply, *inputs).values():
            if message is not None and message not in messages:
                messages.append(message)
            cells.append("yes" if message is None else f"({messages.index(message) + 1})")
        lines.append(cells)
    header = ["Function", *rules, *TRANSFORMS]
    widths = [max(len(str(row[i])) for row in [header, *lines]) for i in range(len(header))]
    split = 1 + len(rules)
    for row in [header, *lines]:
        left = " ".join(f"{cell:{widths[i]}}" for i, cell in enumerate(row[:split]))
        right = " ".join(f"{cell:{widths[split + i]}}" for i, cell in enumerate(row[split:]))
        print(f"{left} | {right}".rstrip())
    for number, message in enumerate(messages, 1):
        print(f"({number}) {message}")
