"""Grades out of the gradebook, as files that csv readers, spreadsheets and an LMS read right.

Why, and each format's columns: docs/design.md#autograd_coursegradingexportpy. Rules:

- every export is written with Python's :mod:`csv` module (RFC 4180 quoting);
- every **text** cell (names, ids, e-mails, assignment names) is neutralised against CSV
  injection (:func:`cell`): one that begins with ``=``, ``+``, ``-``, ``@``, a tab or a
  carriage return gets a leading single quote; a text that looks like a number is still text;
- **numbers stay numbers**: a score, a penalty or a maximum is the number the gradebook holds;
- both formats count the assignments released or graded, never the units no one was given.

Formats: :class:`CsvExportPlugin` (``nbgrader``), nbgrader's ``grades.csv`` as nbgrader's own
plugin writes it (``grade`` writes it; ``nbgrader export`` uses it, by the course's config);
:class:`CanvasExportPlugin` (``canvas``), Canvas's gradebook import. Both score as nbgrader
does: late penalty applied, never below 0; 0 for no submission.
"""

from __future__ import annotations

import csv
import warnings
from datetime import datetime
from pathlib import Path

from nbgrader.api import Gradebook, MissingEntry
from nbgrader.plugins import ExportPlugin

#: The first characters that make a spreadsheet read a cell as a formula (OWASP).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
#: nbgrader's grades.csv columns, in its order.
NBGRADER_COLUMNS = ("assignment", "duedate", "timestamp", "student_id", "last_name",
                    "first_name", "email", "raw_score", "late_submission_penalty", "score",
                    "max_score")
#: Canvas's gradebook columns before the assignments.
CANVAS_COLUMNS = ("Student", "ID", "SIS User ID", "SIS Login ID", "Section")
#: The formats of ``autograd-course export --format``.
FORMATS = ("nbgrader", "canvas")


def cell(value) -> str | int | float:
    """One CSV cell: a number as it is; None as an empty cell; anything else as text, with a
    leading ``'`` when it begins with a formula character (:data:`FORMULA_STARTS`)."""
    if value is None:
        return ""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value
    text = str(value)
    return "'" + text if text.startswith(FORMULA_STARTS) else text


def _write(dest: Path, rows) -> None:
    with open(dest, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        for row in rows:
            writer.writerow([cell(value) for value in row])


def _date(value: datetime | None) -> str | None:
    return None if value is None else str(value)


class _Selection(ExportPlugin):
    """The assignments and students an export covers (nbgrader's ``--assignment`` and
    ``--student`` options: all when empty)."""

    def assignments(self, gradebook: Gradebook):
        chosen = {str(name) for name in self.assignment}
        return [a for a in gradebook.assignments if not chosen or a.name in chosen]

    def students(self, gradebook: Gradebook):
        chosen = {str(name) for name in self.student}
        return [s for s in gradebook.students if not chosen or s.id in chosen]

    def destination(self, default: str) -> Path:
        return Path(self.to or default)


def scores(gradebook: Gradebook, assignment: str, student: str) -> dict:
    """nbgrader's numbers for one student and assignment: timestamp, raw score, late penalty
    and score (raw less penalty, at least 0); zeros and no timestamp without a submission."""
    try:
        submission = gradebook.find_submission(assignment, student)
    except MissingEntry:
        return dict(timestamp=None, raw_score=0.0, late_submission_penalty=0.0, score=0.0)
    penalty = submission.late_submission_penalty
    return dict(timestamp=submission.timestamp, raw_score=submission.score,
                late_submission_penalty=penalty,
                score=max(0.0, submission.score - penalty))


class CsvExportPlugin(_Selection):
    """nbgrader's ``grades.csv`` (its columns and rows), written with proper CSV quoting and
    text cells neutralised against CSV injection."""

    def export(self, gradebook: Gradebook) -> None:
        dest = self.destination("grades.csv")
        self.log.info("Exporting grades to %s", dest)
        rows = [NBGRADER_COLUMNS]
        for assignment in self.assignments(gradebook):
            for student in self.students(gradebook):
                found = scores(gradebook, assignment.name, student.id)
                rows.append((assignment.name, _date(assignment.duedate),
                             _date(found["timestamp"]), student.id, student.last_name,
                             student.first_name, student.email, found["raw_score"],
                             found["late_submission_penalty"], found["score"],
                             assignment.max_score))
        _write(dest, rows)


class CanvasExportPlugin(_Selection):
    """Canvas's gradebook CSV: a student a row, an assignment a column, a Points Possible
    row (see the module's docstring)."""

    def export(self, gradebook: Gradebook) -> None:
        dest = self.destination("canvas_grades.csv")
        self.log.info("Exporting grades for Canvas to %s", dest)
        assignments = self.assignments(gradebook)
        rows = [(*CANVAS_COLUMNS, *(a.name for a in assignments)),
                ("Points Possible", None, None, None, None,
                 *(a.max_score for a in assignments))]
        for student in self.students(gradebook):
            name = ", ".join(part for part in (student.last_name, student.first_name) if part)
            rows.append((name or student.id, student.lms_user_id, None, student.id, None,
                         *(scores(gradebook, a.name, student.id)["score"]
                           for a in assignments)))
        _write(dest, rows)


def export(course, dest: Path, form: str = "nbgrader", assignments: list[str] | None = None
           ) -> Path:
    """Write ``course``'s grades to ``dest`` in the format ``form`` (:data:`FORMATS`),
    for ``assignments`` (default: every assignment the gradebook knows; one it does not know is
    a ValueError). Returns ``dest``."""
    if form not in FORMATS:
        raise ValueError(f"unknown export format {form!r} (one of: {', '.join(FORMATS)})")
    plugin = (CsvExportPlugin if form == "nbgrader" else CanvasExportPlugin)()
    plugin.to = str(dest)
    plugin.assignment = list(assignments or [])
    with warnings.catch_warnings(), course.gradebook() as gb:
        warnings.simplefilter("ignore")  # SQLAlchemy's notes on nbgrader's own queries
        known = [a.name for a in gb.assignments]
        unknown = [name for name in plugin.assignment if name not in known]
        if unknown:
            raise ValueError(f"the gradebook has no assignment {', '.join(unknown)} (it has: "
                             f"{', '.join(known) or 'none'}; `autograd-course release` "
                             "registers one)")
        plugin.export(gb)
    return Path(dest)
