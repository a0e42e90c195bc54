"""The class roster: the students' names for the gradebook, from ``roster.csv`` at the root.

- **Format**: nbgrader's own file for ``nbgrader db student import``: CSV, a header row, one
  student a row, a column ``id`` (the student id, as in ``submitted/ID/``) and any of
  ``first_name``, ``last_name``, ``email`` and ``lms_user_id``. As nbgrader reads it, an empty
  field is no value, and a column its Student table does not have is ignored (with a warning
  here).
- **Use**: ``autograd-course grade`` reads it (:func:`load`) before it grades anything: a
  roster that cannot be read stops the run with a :class:`~.course.CourseError` naming the
  file, the line and the problem. It then puts every student of the roster into the
  gradebook, names updated (:func:`apply`, in one transaction), and says which graded
  students the roster does not list (:func:`unlisted`; they are graded all the same).
- **Bounds**: a field is made :func:`~.terminal.safe` (no control characters, escape codes or
  bidirectional overrides) and may not be longer than the gradebook's column
  (:data:`MAX_CHARS`), nor the file larger than :data:`MAX_BYTES`. A student id, and a
  non-empty ``lms_user_id``, may each be on one row only: a repeat names both lines.
  Formgrader shows the names as text.
"""

from __future__ import annotations

import csv
import io
import sys
import warnings
from dataclasses import dataclass, field
from pathlib import Path

from autograd_course.grading.course import Course, CourseError
from autograd_course.grading.record import NAME
from autograd_course.grading.terminal import safe

#: The roster's file name, at the course root (git-ignored: it is student data).
ROSTER_FILE = "roster.csv"
#: The columns of nbgrader's Student table a roster may set, besides ``id``.
FIELDS = ("first_name", "last_name", "email", "lms_user_id")
#: The longest field: nbgrader's Student columns are String(128) (PostgreSQL refuses more).
MAX_CHARS = 128
#: The largest roster file read (some 50,000 students).
MAX_BYTES = 5_000_000


@dataclass
class Roster:
    """A roster as read: each student id with the fields its row sets (None: empty), and
    warnings about the file (columns that are ignored)."""

    path: Path
    students: dict[str, dict[str, str | None]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


def path_of(course: Course) -> Path:
    """Where ``course``'s roster is (it may not exist)."""
    return course.root / ROSTER_FILE


def _text(path: Path) -> str:
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_BYTES + 1)
    except OSError as exc:
        raise CourseError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    if len(data) > MAX_BYTES:
        raise CourseError(f"{path}: larger than {MAX_BYTES // 1_000_000} MB; is it a roster?")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        raise CourseError(f"{path}, line {line}: not UTF-8 text (save it as CSV UTF-8)"
                          ) from None


def _columns(path: Path, header: list[str], roster: Roster) -> list[str]:
    columns = [safe(name).strip() for name in header]
    if "id" not in columns:
        raise CourseError(f"{path}, line 1: no column 'id' in the header row (expected "
                          f"id,{','.join(FIELDS[:3])}, as nbgrader db student import)")
    doubled = sorted({c for c in columns if columns.count(c) > 1})
    if doubled:
        raise CourseError(f"{path}, line 1: the column {doubled[0]!r} is there twice")
    ignored = [c for c in columns if c != "id" and c not in FIELDS]
    if ignored:
        roster.warnings.append(f"{path}: the columns {', '.join(map(repr, ignored))} are not "
                               f"nbgrader's (id, {', '.join(FIELDS)}): ignored")
    return columns


def _value(path: Path, line: int, column: str, raw: str) -> str | None:
    value = safe(raw).strip()
    if len(value) > MAX_CHARS:
        raise CourseError(f"{path}, line {line}: the {column} is {len(value)} characters long "
                          f"(at most {MAX_CHARS})")
    return value or None


def _add(roster: Roster, columns: list[str], row: list[str], line: int,
         first_line: dict[str, int]) -> None:
    """Check the ``row`` that begins on ``line`` and add its student to ``roster``."""
    path = roster.path
    if len(row) != len(columns):
        raise CourseError(f"{path}, line {line}: {len(row)} fields, but the header row has "
                          f"{len(columns)}")
    values = {c: _value(path, line, c, v) for c, v in zip(columns, row, strict=True)
              if c == "id" or c in FIELDS}
    student = values.pop("id")
    if student is None:
        raise CourseError(f"{path}, line {line}: no student id")
    if not NAME.match(student):
        raise CourseError(f"{path}, line {line}: {student!r} is not a student id (letters, "
                          "digits and . _ @ + -)")
    if student in first_line:
        raise CourseError(f"{path}, line {line}: the student {student} is also on line "
                          f"{first_line[student]}")
    first_line[student] = line
    lms_id = values.get("lms_user_id")
    if lms_id is not None:  # one LMS id, one student: else one's LMS files go to another
        key = f"lms_user_id {lms_id}"  # no student id has a space: no clash with one
        if key in first_line:
            raise CourseError(f"{path}, line {line}: the lms_user_id {lms_id} is also on line "
                              f"{first_line[key]}")
        first_line[key] = line
    roster.students[student] = values


def parse(path: Path, text: str) -> Roster:
    """The roster in ``text`` (the contents of ``path``, named in every error, with the line
    where the row at fault begins)."""
    roster = Roster(path)
    reader = csv.reader(io.StringIO(text.removeprefix("\ufeff"), newline=""), strict=True)
    first_line: dict[str, int] = {}
    line = 1
    try:
        header = next(reader, None)
        if not header:
            raise CourseError(f"{path}, line 1: empty (expected a header row "
                              f"id,{','.join(FIELDS[:3])})")
        columns = _columns(path, header, roster)
        line = reader.line_num + 1
        for row in reader:
            if any(cell.strip() for cell in row):
                _add(roster, columns, row, line, first_line)
            line = reader.line_num + 1
    except csv.Error as exc:
        raise CourseError(f"{path}, line {line}: not valid CSV ({exc})") from None
    return roster


def load(course: Course) -> Roster | None:
    """``course``'s roster, read and checked; None when there is no ``roster.csv``."""
    path = path_of(course)
    if not path.exists():
        return None
    return parse(path, _text(path))


def apply(course: Course, roster: Roster) -> tuple[int, int]:
    """Put every student of ``roster`` into ``course``'s gradebook with the fields the roster
    sets, in one transaction; return how many students were added and how many changed."""
    from nbgrader.api import Student
    from sqlalchemy.exc import SQLAlchemyError

    added = changed = 0
    with warnings.catch_warnings(), course.gradebook() as gb:
        warnings.simplefilter("ignore")  # SQLAlchemy's notes on nbgrader's own queries
        known = {student.id: student for student in gb.db.query(Student)}
        for student_id, values in roster.students.items():
            student = known.get(student_id)
            if student is None:
                gb.db.add(Student(id=student_id, **values))
                added += 1
            elif any(getattr(student, k) != v for k, v in values.items()):
                for name, value in values.items():
                    setattr(student, name, value)
                changed += 1
        try:
            gb.db.commit()
        except SQLAlchemyError as exc:  # the database refused it: nothing was changed
            gb.db.rollback()
            reason = safe(str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
            raise CourseError(f"{roster.path}: the gradebook refused the roster ({reason})"
                              ) from None
    return added, changed


def unlisted(roster: Roster, students: list[str]) -> list[str]:
    """The ``students`` (ids) that ``roster`` does not list, sorted, each once."""
    return sorted(set(students) - set(roster.students))


#: The most students a warning names (the rest are counted).
NAMED = 20


def use(course: Course, roster: Roster, students: list[str]) -> list[str]:
    """Put ``roster`` into ``course``'s gradebook (:func:`apply`) and say so: a line on
    stdout, and a warning on stderr for the ignored columns and for the ``students`` about to
    be graded that the roster does not list (through tqdm, which keeps a progress bar on the
    terminal whole). Return the warnings (which a run with nothing to do says again,
    :mod:`.idle`)."""
    from tqdm import tqdm

    added, changed = apply(course, roster)
    tqdm.write(f"roster {roster.path.name}: {len(roster.students)} students ({added} new in "
               f"the gradebook, {changed} with names updated)", file=sys.stdout)
    said = list(roster.warnings)
    missing = unlisted(roster, students)
    if missing:
        shown = ", ".join(missing[:NAMED]) + (f" and {len(missing) - NAMED} more"
                                              if len(missing) > NAMED else "")
        said.append(f"{roster.path.name} does not list {len(missing)} of the students of this "
                    f"run (graded all the same, with no name from it): {shown}")
    for line in said:
        tqdm.write(f"WARNING: {line}", file=sys.stderr)
    return said
