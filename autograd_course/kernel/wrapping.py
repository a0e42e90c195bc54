"""Text broken at spaces into lines a reader sees whole: the course's one line wrapper.

JupyterLab breaks a longer line of an error or of a cell's output anywhere, mid-word, and so
do the pages of a graded notebook; the course's own text is broken first, at spaces, by
:func:`wrapped`: a failed check's message in the kernel (:mod:`.checks.errors`, :data:`WIDTH`
columns), ``autograd-course check``'s report (grading/selfcheck.py), Validate's answers
(lab/validate.py) and an autograded test cell's verdict (grading/preprocessors/inert.py).

The standard library only: the command line and the Jupyter server import it without torch
(importing :mod:`.checks` would bring torch).
"""

from __future__ import annotations

import textwrap

#: The columns of a line of a failed check's message in a notebook: JupyterLab breaks a
#: longer line of an error anywhere, mid-word.
WIDTH = 90


def wrapped(text: str, width: int = WIDTH, indent: str = "  ", break_words: bool = False) -> str:
    """``text`` with each of its lines longer than ``width`` broken at spaces to ``width``
    columns, the lines it goes on in indented ``indent`` deeper than it (at most half the width
    in all); a word longer than a line stays whole, unless ``break_words``. The words, the line
    breaks ``text`` has and every line that fits are kept as they are.

    >>> [len(line) for line in wrapped("CheckError: " + "gradient " * 12).splitlines()]
    [83, 37]
    >>> wrapped("  FAIL q1: " + "word " * 4, width=20, indent="    ").splitlines()
    ['  FAIL q1: word word', '      word word']
    >>> wrapped("a" * 12, width=5, indent="", break_words=True).split()
    ['aaaaa', 'aaaaa', 'aa']
    """
    def lines_of(line: str) -> str:
        if len(line) <= width:
            return line
        hanging = (line[:len(line) - len(line.lstrip(" "))] + indent)[:width // 2]
        return "\n".join(textwrap.wrap(line, width, subsequent_indent=hanging,
                                       break_long_words=break_words,
                                       break_on_hyphens=False)) or line

    return "\n".join(map(lines_of, text.split("\n")))
