"""The class report: which questions the class gets wrong, and which misconceptions it has.

:func:`question_summary` turns the grade records of a class (:mod:`.record`) into one
:class:`QuestionSummary` per question: how many students passed it and the most frequent
diagnostic messages of those who did not. Messages are grouped so that one mistake counts once,
whatever numbers, tensors or colours a student's message carries (:func:`normalise_message`).

:func:`write_report` writes the summary as ``report.csv`` (one row per question),
``report.png`` (a bar chart of the share passed, with the top misconception under each bar)
and ``report.html`` (one self-contained page from the Jinja2 template
``templates/report.html``: summary, the chart, a table per question, the flagged and the
failed or repaired submissions).

>>> normalise_message("CheckError: x.grad has the wrong shape: (3,) instead of (2, 3). Fix it.")
'CheckError: x.grad has the wrong shape: (#,) instead of (#, #). Fix it.'
>>> normalise_message("NotImplementedError")
'not answered (NotImplementedError)'
"""

from __future__ import annotations

import base64
import csv
import io
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from matplotlib.figure import Figure

from .record import GradeRecord

#: How many messages a question's summary keeps.
TOP_MESSAGES = 3
#: What a failed test without any message is reported as.
NO_MESSAGE = "(no message)"
#: What a blank answer (the template's ``raise NotImplementedError()``) is reported as.
NOT_ANSWERED = "not answered (NotImplementedError)"
#: The longest misconception the chart writes under a bar.
CHART_LABEL_CHARS = 70

CSV_HEADER = ["assignment", "notebook", "question", "points", "students", "passed", "share_passed"]
CSV_HEADER += [f"{name}_{i}" for i in range(1, TOP_MESSAGES + 1) for name in ("message", "count")]

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_NOT_IMPLEMENTED = re.compile(r"NotImplementedError\b")
_TENSOR = re.compile(r"(?<![\w.])tensor\(")
# A number on its own: not the digits of a name (float32, w2, AddBackward0).
_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?(?!\w)")
# A (nested) list of masked numbers, e.g. the values of a tensor turned into a list.
_NUMBER_LIST = re.compile(r"\[[\s,\[\]]*#[\s#,\[\]]*\]")


@dataclass
class QuestionSummary:
    """How the class did on one question (one test cell of one notebook)."""

    assignment: str
    notebook: str
    question: str
    points: float
    n_students: int
    n_passed: int
    #: ``n_passed / n_students``, from 0 to 1.
    share_passed: float
    #: ``(message, count)`` of the students who did not pass, most frequent first, at most 3.
    top_messages: list[tuple[str, int]] = field(default_factory=list)


# --- grouping messages --------------------------------------------------------------------


def _mask_tensors(text: str) -> str:
    """Replace every ``tensor(...)`` repr (nested parentheses included) by ``tensor(…)``."""
    out, pos = [], 0
    for match in _TENSOR.finditer(text):
        if match.start() < pos:  # inside a tensor already masked
            continue
        depth, end = 1, match.end()
        while end < len(text) and depth:
            depth += {"(": 1, ")": -1}.get(text[end], 0)
            end += 1
        out += [text[pos : match.start()], "tensor(…)"]
        pos = end
    return "".join(out) + text[pos:]


def normalise_message(message: str | None) -> str:
    """The key under which a diagnostic message is counted: the same mistake, the same key.

    ANSI colour codes go, tensor reprs become ``tensor(…)``, lines are joined, numbers become
    ``#`` (a list of them ``[…]``); the whole message stays, the fix it suggests included. An
    empty message reads as :data:`NO_MESSAGE`, a blank answer (``NotImplementedError``) as
    :data:`NOT_ANSWERED`.
    """
    text = _ANSI.sub("", message or "").strip()
    if _NOT_IMPLEMENTED.match(text):
        return NOT_ANSWERED
    text = " ".join(_mask_tensors(text).split())
    text = _NUMBER_LIST.sub("[…]", _NUMBER.sub("#", text))
    return text or NO_MESSAGE


# --- the summary --------------------------------------------------------------------------


def _top(messages: Iterable[str], n: int = TOP_MESSAGES) -> list[tuple[str, int]]:
    """The ``n`` most frequent messages with their counts; ties in alphabetical order."""
    counts = Counter(messages)
    return sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:n]


def question_summary(records: Iterable[GradeRecord]) -> list[QuestionSummary]:
    """One summary per question of the records, by assignment and notebook, then in the order
    the questions appear in the notebook.

    ``n_students`` counts the records that have the question; the messages counted are those
    of the students who did not pass it, grouped by :func:`normalise_message`.
    """
    ordered = sorted(records, key=lambda r: (r.assignment, r.notebook, r.student))
    grouped: dict[tuple[str, str, str], list[dict]] = {}
    for rec in ordered:
        for question in rec.questions:
            key = (rec.assignment, rec.notebook, question["question"])
            grouped.setdefault(key, []).append(question)
    return [_summarise(*key, results) for key, results in grouped.items()]


def _summarise(assignment, notebook, question, results: Sequence[dict]) -> QuestionSummary:
    """The summary of one question from its results (the question dicts of the records)."""
    failed = [r for r in results if not r.get("passed")]
    n_passed = len(results) - len(failed)
    return QuestionSummary(
        assignment=assignment,
        notebook=notebook,
        question=question,
        points=results[0].get("points", 0),
        n_students=len(results),
        n_passed=n_passed,
        share_passed=n_passed / len(results),
        top_messages=_top(normalise_message(r.get("message")) for r in failed),
    )


# --- report.csv ---------------------------------------------------------------------------


def _csv_row(summary: QuestionSummary) -> list:
    """One row of ``report.csv``; message columns of missing messages stay empty."""
    row = [
        summary.assignment,
        summary.notebook,
        summary.question,
        summary.points,
        summary.n_students,
        summary.n_passed,
        f"{summary.share_passed:.3f}",
    ]
    for i in range(TOP_MESSAGES):
        row += list(summary.top_messages[i]) if i < len(summary.top_messages) else ["", ""]
    return row


def write_csv(summaries: Sequence[QuestionSummary], path: Path) -> Path:
    """Write ``summaries`` as CSV (a header row, then one row per question); return ``path``."""
    with open(path, "w", newline="", encoding="utf-8") as file:
        writer = csv.writer(file)
        writer.writerow(CSV_HEADER)
        writer.writerows(_csv_row(s) for s in summaries)
    return path


# --- report.png ---------------------------------------------------------------------------


def _shorten(text: str, width: int = CHART_LABEL_CHARS) -> str:
    """``text`` cut to at most ``width`` characters, with an ellipsis where it was cut."""
    return text if len(text) <= width else text[: width - 1].rstrip() + "…"


def _bar_colour(share: float) -> str:
    """Green when most passed, orange when about half did, red when few did."""
    return "#2e7d32" if share >= 0.8 else "#ef6c00" if share >= 0.5 else "#c62828"


def _misconception_label(summary: QuestionSummary) -> str:
    """The line written under a question's bar: its most frequent message, or that all passed."""
    if not summary.top_messages:
        return "everyone passed"
    message, count = summary.top_messages[0]
    return f"{count}× {_shorten(message)}"


def _question_label(summary: QuestionSummary, with_notebook: bool) -> str:
    """The y-axis label of a question, prefixed by its notebook when there are several."""
    return f"{summary.notebook}: {summary.question}" if with_notebook else summary.question


def _chart(summaries: Sequence[QuestionSummary], title: str) -> Figure:
    """The figure of ``report.png``: one horizontal bar per question, first question on top."""
    n = len(summaries)
    figure = Figure(figsize=(10, 1.4 + 0.7 * max(n, 1)), dpi=100, layout="constrained")
    axes = figure.add_subplot()
    axes.set_title(title, loc="left", fontsize=12, parse_math=False)
    if not summaries:
        axes.text(0.5, 0.5, "No submissions", ha="center", va="center", fontsize=14)
        axes.set_axis_off()
        return figure
    with_notebook = len({(s.assignment, s.notebook) for s in summaries}) > 1
    positions = list(range(n))
    shares = [100 * s.share_passed for s in summaries]
    axes.barh(positions, shares, height=0.4, color=[_bar_colour(s.share_passed) for s in summaries])
    for y, share, summary in zip(positions, shares, summaries, strict=True):
        counts = f"{summary.n_passed}/{summary.n_students}"
        axes.text(share + 1, y, counts, va="center", fontsize=9, parse_math=False)
        axes.text(
            0,
            y + 0.38,
            _misconception_label(summary),
            va="center",
            fontsize=8,
            color="#333333",
            parse_math=False,
        )
    labels = [_question_label(s, with_notebook) for s in summaries]
    axes.set_yticks(positions, labels, fontsize=9, parse_math=False)
    axes.set_ylim(n - 0.4, -0.6)
    axes.set_xlim(0, 110)
    axes.set_xticks(range(0, 101, 20), [f"{x} %" for x in range(0, 101, 20)])
    axes.set_xlabel("share of students who passed (passed/students beside each bar)")
    axes.grid(axis="x", color="#dddddd")
    axes.set_axisbelow(True)
    return figure


def render_png(summaries: Sequence[QuestionSummary], title: str) -> bytes:
    """The chart as PNG bytes at 100 dpi, without a software version or date in the file."""
    buffer = io.BytesIO()
    _chart(summaries, title).savefig(buffer, format="png", dpi=100, metadata={"Software": None})
    return buffer.getvalue()


# --- report.html --------------------------------------------------------------------------


def render_html(
    records: Sequence[GradeRecord],
    summaries: Sequence[QuestionSummary],
    title: str,
    png: bytes,
) -> str:
    """The self-contained report page (``templates/report.html``, rendered by Jinja2 with
    autoescaping: every student-derived string is escaped); the chart ``png`` is embedded."""
    from jinja2 import Environment, PackageLoader, select_autoescape

    environment = Environment(loader=PackageLoader("autograd_course.grading", "templates"),
                              autoescape=select_autoescape(default=True), trim_blocks=True,
                              lstrip_blocks=True)
    return environment.get_template("report.html").render(
        title=title, records=list(records), summaries=summaries,
        flagged=[r for r in records if r.flags],
        troubled=[r for r in records if r.failure or r.notes],
        png_base64=base64.b64encode(png).decode("ascii"))


# --- all three ----------------------------------------------------------------------------


def write_report(
    records: Iterable[GradeRecord], out_dir: Path | str, title: str = "Class report"
) -> dict[str, Path]:
    """Write ``report.csv``, ``report.png`` and ``report.html`` into ``out_dir`` (created if
    needed); return their paths under the keys ``"csv"``, ``"png"`` and ``"html"``.

    With no records the files say there were no submissions (the CSV has its header only).
    """
    records = list(records)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    summaries = question_summary(records)
    png = render_png(summaries, title)
    paths = {key: out_dir / f"report.{key}" for key in ("csv", "png", "html")}
    write_csv(summaries, paths["csv"])
    paths["png"].write_bytes(png)
    paths["html"].write_text(render_html(records, summaries, title, png), encoding="utf-8")
    return paths
