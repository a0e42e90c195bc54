"""Whether a question's reference solution is a near-copy of a lesson code cell.

Tokenise both with names, strings and comments normalised away (keywords and numbers kept),
leave the solution's ``def`` line and docstring out, and call the solution a near-copy of a
lesson cell when that cell contains at least :data:`THRESHOLD` of the solution's tokens in
order (difflib's matching blocks) within a stretch at most a quarter longer than the
solution, or than the solution's spread when it is in several regions of a given cell (07
Q1's rules, one per method of a class). The stretch keeps a long cell from "containing" a
short solution whose few keywords and operators it happens to hold, far apart; a copy,
renamed or not, sits in one stretch. Solutions under :data:`SHORTEST` tokens (a one-line
fix) are too short to compare.
"""

from __future__ import annotations

import difflib
import io
import keyword
import tokenize

THRESHOLD = 0.85
SHORTEST = 10
SKIPPED = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
           tokenize.ENDMARKER, tokenize.ENCODING}
MARKERS = ("### BEGIN SOLUTION", "### END SOLUTION")


def tokens(code: str) -> list[str]:
    """The normalised tokens of some Python code: names are NAME, strings STR."""
    out = []
    for token in tokenize.generate_tokens(io.StringIO(code).readline):
        if token.type in SKIPPED:
            continue
        if token.type == tokenize.NAME:
            out.append(token.string if keyword.iskeyword(token.string) else "NAME")
        elif token.type == tokenize.STRING:  # f-strings too, on Python 3.11
            out.append("STR")
        else:
            out.append(token.string)
    return out


def solution_code(cell_source: str) -> str:
    """What a student writes in a solution cell: the lines inside its solution regions, or the
    whole cell when it has none, without a leading ``def`` line and docstring."""
    lines = cell_source.splitlines()
    if MARKERS[0] in cell_source:
        kept, inside = [], False
        for line in lines:
            if line.strip() == MARKERS[0]:
                inside = True
            elif line.strip() == MARKERS[1]:
                inside = False
            elif inside:
                kept.append(line)
        lines = kept
    text = "\n".join(lines)
    return _without_def_and_docstring(text)


def _without_def_and_docstring(text: str) -> str:
    """The body of a function whose ``def`` line starts the text (dedented), else the text."""
    import ast
    import textwrap

    text = textwrap.dedent(text)
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return text
    if len(tree.body) == 1 and isinstance(tree.body[0], ast.FunctionDef):
        body = tree.body[0].body
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            body = body[1:]
        if not body:
            return ""
        lines = text.splitlines()
        return textwrap.dedent("\n".join(lines[body[0].lineno - 1:tree.body[0].end_lineno]))
    return text


def share_in_order(solution: list[str], cell: list[str]) -> float:
    """The share of the solution's tokens that the cell contains in the same order."""
    if not solution:
        return 0.0
    matcher = difflib.SequenceMatcher(None, solution, cell, autojunk=False)
    return sum(block.size for block in matcher.get_matching_blocks()) / len(solution)


def spread(cell_source: str) -> float:
    """How spread out a solution is in its cell: the lines from its first region's start to
    its last region's end, over its own lines (1 for a single region, or none)."""
    lines = cell_source.splitlines()
    begins = [i for i, line in enumerate(lines) if line.strip() == MARKERS[0]]
    ends = [i for i, line in enumerate(lines) if line.strip() == MARKERS[1]]
    if not begins or not ends:
        return 1.0
    own = sum(e - b - 1 for b, e in zip(begins, ends, strict=True))
    spanned = ends[-1] - begins[0] - 1 - 2 * (len(begins) - 1)
    return max(1.0, spanned / max(own, 1))


def contained_share(solution: list[str], cell: list[str], spread: float = 1.0) -> float:
    """The largest share of the solution's tokens, in order, in a stretch of the cell at most
    a quarter longer than the solution times its spread (the whole cell when it is shorter
    than that)."""
    width = int(5 * len(solution) * spread) // 4
    if len(cell) <= width:
        return share_in_order(solution, cell)
    starts = range(0, len(cell) - width + max(1, len(solution) // 4), max(1, len(solution) // 4))
    return max(share_in_order(solution, cell[i:i + width]) for i in starts)


def near_copy_share(solution_source: str, lesson_cells: list[str]) -> tuple[float, int]:
    """The largest share of a solution cell's tokens that one lesson cell holds (in one
    stretch), and that cell's number among the lesson's code cells."""
    solution = tokens(solution_code(solution_source))
    wide = spread(solution_source)
    shares = [(contained_share(solution, tokens(cell), wide), k)
              for k, cell in enumerate(lesson_cells)]
    return max(shares)
