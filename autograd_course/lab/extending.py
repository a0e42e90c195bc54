"""Display helpers for lesson 09 (extending autograd): long or machine-specific messages, short.

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
"""

from __future__ import annotations

import contextlib
import io
import re
from collections.abc import Iterator

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
