"""A zip of a class's submissions, unpacked into submitted/ (``grade --zip``).

Layouts (:data:`LAYOUTS`: ``course``, ``canvas``, ``moodle``), LMS ids and timestamps in full:
docs/design.md#autograd_coursegradingzipspy. Rules:

- every member is checked, by the rules of :mod:`.intake`, before anything is unpacked; its
  declared size bounds what is read from it;
- a zip whose members do not fit its layout is refused whole, naming the layout expected and
  the first member at fault; so is an LMS id that the roster's ``lms_user_id`` does not know;
- one student never stops an LMS download: what one student uploaded (too large, two members
  naming one file, nbgrader's own files, unreadable) is dealt with alone, with a line
  (:attr:`Unpacked.skipped`); in the ``course`` layout it refuses the whole zip;
- each submission gets nbgrader's ``timestamp.txt``, in UTC: ``--timestamp``, else the zip's
  own (``course`` layout only), else the zip's date of its newest member; a date the calendar
  does not have refuses the zip;
- a submission already in submitted/ is replaced only by a newer one, its files moved to
  ``replaced/`` (:data:`REPLACED`), never deleted; each decision is a line of :class:`Unpacked`.
"""

from __future__ import annotations

import re
import shutil
import struct
import tempfile
import unicodedata
import zipfile
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath

from autograd_course.grading.intake import (
    NBGRADER_FILES,
    TIMESTAMP,
    IntakeError,
    check_student,
    existing_time,
    parse_timestamp,
    shown,
    timestamp_text,
    write_sparse,
)

MAX_ZIP_MEMBERS = 100_000
LAYOUTS = ("course", "canvas", "moodle")
#: What each layout expects, as its errors say.
EXPECTED = {
    "course": "[submitted/]STUDENT/ASSIGNMENT/FILE",
    "canvas": "Canvas's flat lastfirst_[late_]USERID_SUBMISSIONID_FILENAME",
    "moodle": "Moodle's Full Name_PARTICIPANTID_assignsubmission_file_[/]FILENAME",
}
CANVAS = re.compile(r"^(?P<name>[^_/]*)_(?:late_)?(?P<id>[0-9]+)_(?P<submission>[0-9]+)_"
                    r"(?P<file>[^/]+)$", re.IGNORECASE)
MOODLE = re.compile(r"^(?P<name>[^_/]*)_(?P<id>[0-9]+)_assignsubmission_(?P<plugin>[a-z]+)_"
                    r"(?P<file>.*)$")
CANVAS_AGAIN = re.compile(r"^(?P<stem>.+)-(?P<n>[0-9]+)(?P<ext>\.[^.]+)$")
#: Where a submission replaced by a newer one from a zip is kept (beside submitted/).
REPLACED = "replaced"
JUNK = re.compile(r"(^|/)(__MACOSX/|\.DS_Store$|Thumbs\.db$)")


def _normalised(parts: list[str]) -> str:
    return "/".join(unicodedata.normalize("NFC", p).casefold() for p in parts)


@dataclass
class Unpacked:
    """What :func:`unpack_zip` did: files added, a line for each replaced, kept or left-out
    one, and the students whose submission was not unpacked at all (``skipped``: an LMS
    download's member that could not be read)."""

    added: int = 0
    submissions: int = 0
    lines: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)


@dataclass
class _Entry:
    """One submission of a zip: where it goes, its members (file name -> ZipInfo)."""

    student: str
    assignment: str
    members: dict[str, zipfile.ZipInfo] = field(default_factory=dict)
    sparse: set[str] = field(default_factory=set)  # too large: a stand-in of their size
    timestamp: datetime | None = None  # naive UTC
    rewrite: bool = True  # write timestamp.txt (not when the zip brings one, unless given)


def _utc_mtime(info: zipfile.ZipInfo) -> float | None:
    """The UTC modification time of the extended-timestamp extra field (0x5455), if any."""
    extra, at = info.extra, 0
    while at + 4 <= len(extra):
        kind, size = struct.unpack_from("<HH", extra, at)
        body = extra[at + 4: at + 4 + size]
        if kind == 0x5455 and len(body) >= 5 and body[0] & 1:
            return float(struct.unpack_from("<i", body, 1)[0])
        at += 4 + size
    return None


def member_time(info: zipfile.ZipInfo, timezone: str = "UTC") -> datetime:
    """When the zip says ``info`` was last changed, as naive UTC (see the module's notes)."""
    from dateutil.tz import gettz

    utc = _utc_mtime(info)
    if utc is not None:
        return datetime.fromtimestamp(utc, UTC).replace(tzinfo=None)
    zone = gettz(timezone)
    if zone is None:
        raise IntakeError(f"c.Exchange.timezone {timezone!r} is not a time zone")
    try:  # the DOS format allows month 0, day 31 of February, hour 31...
        local = datetime(*info.date_time, tzinfo=zone)
    except ValueError:
        date = "{:04}-{:02}-{:02} {:02}:{:02}:{:02}".format(*info.date_time)
        raise IntakeError(f"member '{shown(info.filename)}' is dated {date}, which is not a "
                          "date; give the submission time with --timestamp") from None
    return local.astimezone(UTC).replace(tzinfo=None)


def given_timestamp(text: str, timezone: str = "UTC") -> datetime:
    """The ``--timestamp`` an instructor gives (ISO 8601; without a UTC offset, a time in
    ``timezone``, nbgrader's ``Exchange.timezone``), as naive UTC."""
    from dateutil.tz import gettz

    try:
        when = datetime.fromisoformat(text.strip()[:64])
    except ValueError:
        raise IntakeError(f"--timestamp {shown(text)!r} is not an ISO 8601 time (e.g. "
                          "2026-12-04T10:00:00+01:00)") from None
    if when.tzinfo is None:
        zone = gettz(timezone)
        if zone is None:  # gettz's None would be the machine's local time
            raise IntakeError(f"c.Exchange.timezone {timezone!r} is not a time zone")
        when = when.replace(tzinfo=zone)
    return when.astimezone(UTC).replace(tzinfo=None)


def _refuse(archive: Path, layout: str, name: str, why: str):
    raise IntakeError(f"{archive}: not a zip in the {layout} layout ({EXPECTED[layout]}): "
                      f"member '{shown(name)}' {why}; nothing was unpacked")


def _course_place(archive, parts, name, assignments):
    """STUDENT, ASSIGNMENT, FILE of a member of a course-layout zip."""
    if len(parts) < 3:
        _refuse(archive, "course", name, "is not inside STUDENT/ASSIGNMENT/")
    if assignments is not None and parts[1] not in assignments:
        folded = {a.casefold(): a for a in assignments}
        if parts[0] in assignments:
            _refuse(archive, "course", name, f"starts with the assignment {parts[0]} "
                    "(ASSIGNMENT/STUDENT/FILE?)")
        if parts[1].casefold() in folded:
            _refuse(archive, "course", name, f"is under '{shown(parts[1])}', which is the "
                    f"assignment {folded[parts[1].casefold()]} only up to case")
        if len(parts) > 3 and parts[2] in assignments:
            _refuse(archive, "course", name, f"is inside a wrapping folder "
                    f"'{shown(parts[0])}/'")
        _refuse(archive, "course", name, f"is under '{shown(parts[1])}', not an assignment "
                f"of this course ({', '.join(sorted(assignments))})")
    check_student(parts[0], f"{archive}: member '{shown(name)}'")
    return parts[0], parts[1], "/".join(parts[2:])


def _lms_place(archive, layout, parts, name, assignment, lms_ids, notebooks, skipped):
    """STUDENT, ASSIGNMENT, FILE of a member of an LMS download (None: left out)."""
    if layout == "canvas":
        found = CANVAS.match(name) if len(parts) == 1 else None
        if found is None:
            _refuse(archive, layout, name, "is not named as Canvas names a submission's file")
        file = found["file"]
        again = CANVAS_AGAIN.match(file)
        if again and again["stem"] + again["ext"] in notebooks and file not in notebooks:
            file = again["stem"] + again["ext"]
    else:
        found = MOODLE.match(parts[0])
        if found is None:
            _refuse(archive, layout, name, "is not named as Moodle names a submission's file")
        if found["plugin"] != "file":
            skipped.append(f"left out {shown(name)}: Moodle's {found['plugin']} submission, "
                           "not a file")
            return None
        file = "/".join([found["file"], *parts[1:]]).strip("/") if found["file"] else (
            "/".join(parts[1:]))
        if not file or (found["file"] and len(parts) > 1):
            _refuse(archive, layout, name, "is not named as Moodle names a submission's file")
    lms_id = found["id"]
    if lms_id not in lms_ids:
        raise IntakeError(f"{archive}: member '{shown(name)}': the {layout.capitalize()} id "
                          f"{lms_id} is not in the roster's lms_user_id column (roster.csv); "
                          "nothing was unpacked")
    student = check_student(lms_ids[lms_id], f"{archive}: member '{shown(name)}'")
    return student, assignment, file


def _when(t: datetime) -> str:
    return t.strftime("%Y-%m-%d %H:%M UTC")


def unpack_zip(archive: Path, target_root: Path, max_bytes: int,
               max_total: int = 2 * 10**9, *, layout: str = "course",
               assignments: list[str] | None = None, assignment: str | None = None,
               notebooks: list[str] = (), lms_ids: dict[str, str] | None = None,
               timestamp: datetime | None = None, timezone: str = "UTC") -> Unpacked:
    """Add the submissions of a zip in ``layout`` to ``target_root`` (submitted/): the
    ``course`` layout with ``assignments`` the course's (None: any folder name), or an LMS
    download (``canvas``, ``moodle``) of ``assignment``, whose ``notebooks`` are its notebook
    names and whose LMS ids ``lms_ids`` maps to student ids. See the module's notes on
    layouts, timestamps (``timestamp`` overrides the zip's dates; ``timezone`` is
    ``Exchange.timezone``) and resubmissions.

    Every member is checked before anything is written, and the first bad one refuses the
    whole zip, naming it: an absolute path, a ``..`` part or a link; a name the layout does
    not expect; a student id the course does not accept; a date that is not one; members
    together larger than ``max_total`` (what their headers declare, which also bounds what is
    read from each). In the ``course`` layout also: a member larger than ``max_bytes``; two
    members whose paths are the same once normalised (``a//b``, ``a/./b``, Unicode forms,
    case); a ``timestamp.txt`` that is not a timestamp; a member under a folder named
    ``timestamp.txt`` or ``submission_secret.txt``; a member whose data is damaged (found while
    it is read, into a staging folder: the zip is unpacked whole or not at all). In an LMS
    layout those are one student's, dealt with as the module says, each with a line.
    Nothing is ever written outside ``target_root`` and
    :data:`REPLACED` beside it, and no file is ever deleted or overwritten.
    """
    if layout not in LAYOUTS:
        raise IntakeError(f"unknown layout {layout!r} (one of {', '.join(LAYOUTS)})")
    if layout != "course" and (assignment is None or lms_ids is None):
        raise IntakeError(f"the {layout} layout needs the assignment and the roster's "
                          "lms_user_id column")
    if not archive.exists():
        raise IntakeError(f"{archive}: no such file")
    if not zipfile.is_zipfile(archive):
        raise IntakeError(f"{archive} is not a zip file")
    target_root = target_root.resolve()
    lms = layout != "course"
    entries: dict[tuple[str, str], _Entry] = {}
    seen: dict[str, _Member] = {}  # normalised path -> the member kept for it
    total, skipped = 0, []
    with zipfile.ZipFile(archive) as zf:
        members = zf.infolist()
        if len(members) > MAX_ZIP_MEMBERS:
            raise IntakeError(f"{archive}: {len(members)} members, more than "
                              f"{MAX_ZIP_MEMBERS}; nothing was unpacked")
        for number, info in enumerate(members):
            name = info.filename
            raw = name.replace("\\", "/")
            is_link = (info.external_attr >> 16) & 0o170000 == 0o120000
            if raw.startswith("/") or PurePosixPath(raw).drive or ":" in raw.split("/")[0] or (
                    ".." in raw.split("/")):
                raise IntakeError(f"{archive}: member '{shown(name)}' has an unsafe path "
                                  "(absolute, or with '..'); nothing was unpacked")
            if is_link:
                raise IntakeError(f"{archive}: member '{shown(name)}' is a link; nothing was "
                                  "unpacked")
            parts = [p for p in raw.split("/") if p not in ("", ".")]
            if layout == "course" and parts and parts[0] == "submitted":
                parts = parts[1:]
            if info.is_dir() or not parts or parts[0].startswith("__") or JUNK.search(raw):
                continue
            if layout == "course":
                place = _course_place(archive, parts, name, assignments)
            else:
                place = _lms_place(archive, layout, parts, "/".join(parts), assignment,
                                   lms_ids, list(notebooks), skipped)
                if place is None:
                    continue
            student, assignment_of, file = place
            top = file.split("/")[0]
            if top in NBGRADER_FILES and (lms or "/" in file):
                if not lms:
                    raise IntakeError(f"{archive}: member '{shown(name)}' is under a folder "
                                      f"{top}/, the name of nbgrader's file; nothing was "
                                      "unpacked")
                skipped.append(f"left out {student}'s {shown(file)}: " + (
                    f"{top} is nbgrader's file, not a folder" if file != top else
                    "an LMS download's time comes from the zip's dates or --timestamp"
                    if top == TIMESTAMP else "nbgrader makes its own"))
                continue
            sparse = info.file_size > max_bytes
            if sparse and not lms:
                raise IntakeError(f"{archive}: member '{shown(name)}' is "
                                  f"{info.file_size // 1000} kB, more than the limit of "
                                  f"{max_bytes // 1000} kB (CourseDirectory.max_file_size); "
                                  "nothing was unpacked")
            if sparse:  # graded as too large, as a submission in submitted/ would be
                skipped.append(f"{student}'s {shown(file)}: {info.file_size // 1000} kB, more "
                               f"than the limit of {max_bytes // 1000} kB, not read (an empty "
                               "stand-in of its size is graded)")
            else:
                total += info.file_size
            if total > max_total:
                raise IntakeError(f"{archive}: its members hold more than {max_total // 10**6}"
                                  f" MB (at member '{shown(name)}'); nothing was unpacked")
            target = target_root.joinpath(student, assignment_of, *file.split("/")).resolve()
            if target_root not in target.parents:
                raise IntakeError(f"{archive}: member '{shown(name)}' would be written outside "
                                  "submitted/; nothing was unpacked")
            found = _Member(name, student, assignment_of, file, info, sparse, number)
            key = _normalised([student, assignment_of, *file.split("/")])
            if key in seen and not lms:
                raise IntakeError(f"{archive}: members '{shown(seen[key].name)}' and "
                                  f"'{shown(name)}' name the same file; nothing was unpacked")
            if key in seen:  # one student's upload, twice: the newer is kept
                older, newer = sorted((seen[key], found),
                                      key=lambda m: _rank(archive, layout, m, timezone))
                skipped.append(f"left out {student}'s '{shown(older.name)}': the same file as "
                               f"'{shown(newer.name)}', which is newer (by the zip's dates, "
                               "then Canvas's -N)")
                found = newer
            seen[key] = found
        for found in seen.values():
            entry = entries.setdefault((found.student, found.assignment),
                                       _Entry(found.student, found.assignment))
            entry.members[found.file] = found.info
            if found.sparse:
                entry.sparse.add(found.file)
        if not entries:
            raise IntakeError(f"{archive}: no submissions in it (expected {EXPECTED[layout]});"
                              " nothing was unpacked")
        for entry in entries.values():
            entry.timestamp = _timestamp_of(zf, archive, entry, timestamp, timezone)
        result = Unpacked(lines=skipped)
        _write(zf, archive, target_root, entries, result, lms)
    return result


@dataclass
class _Member:
    """A member of a zip that is to be unpacked, where it goes, and its place in the zip."""

    name: str
    student: str
    assignment: str
    file: str
    info: zipfile.ZipInfo
    sparse: bool
    number: int


def _dated(archive, info: zipfile.ZipInfo, timezone: str) -> datetime:
    try:
        return member_time(info, timezone)
    except IntakeError as exc:
        raise IntakeError(f"{archive}: {exc}; nothing was unpacked") from None


def _rank(archive, layout: str, member: _Member, timezone: str):
    """What orders two members that name the same file: the zip's date, then Canvas's ``-N``
    (a later upload of the same name), then the order in the zip."""
    again = 0
    if layout == "canvas" and (found := CANVAS.match(member.name)):
        numbered = CANVAS_AGAIN.match(found["file"])
        digits = numbered["n"].lstrip("0") if numbered else ""
        again = int(digits or 0) if len(digits) <= 18 else 10**18
    return _dated(archive, member.info, timezone), again, member.number


def _timestamp_of(zf, archive, entry: _Entry, given, timezone) -> datetime:
    if given is not None:
        return given
    brought = entry.members.get(TIMESTAMP)
    if brought is not None:
        where = f"{archive}: member '{shown(brought.filename)}'"
        with zf.open(brought) as f:
            text = f.read(200).decode("utf-8", "replace")
        entry.rewrite = False
        return parse_timestamp(text, where)
    return max(_dated(archive, info, timezone) for info in entry.members.values())


def _write(zf, archive, target_root: Path, entries: dict, result: Unpacked,
           lms: bool = False) -> None:
    """Read every member into a staging folder, then put each submission in place: new, or
    replacing an older one (moved aside), or not at all. A damaged member refuses the zip
    (``lms`` false) or skips its student's submission, with a line (``lms``)."""
    target_root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".unpacking-", dir=target_root) as tmp:
        staged = []
        for number, entry in enumerate(entries.values()):
            folder = Path(tmp) / str(number)
            try:
                _stage(zf, entry, folder)
            except _Damaged as exc:
                if not lms:
                    raise IntakeError(f"{archive}: member '{shown(exc.info.filename)}' is "
                                      f"damaged ({exc.reason}); nothing was unpacked") from None
                shutil.rmtree(folder, ignore_errors=True)
                result.skipped.append(entry.student)
                result.lines.append(f"skipped {entry.student}'s {entry.assignment}: member "
                                    f"'{shown(exc.info.filename)}' is damaged "
                                    f"({shown(exc.reason)}); nothing of it was unpacked")
                continue
            if entry.rewrite:
                (folder / TIMESTAMP).write_text(timestamp_text(entry.timestamp))
            staged.append((entry, folder))
        for entry, folder in staged:
            dest = target_root / entry.student / entry.assignment
            who = f"{entry.student}/{entry.assignment}"
            if dest.exists() and any(dest.iterdir()):
                before = existing_time(dest)
                if before is None:
                    result.lines.append(
                        f"kept {who} (zip {_when(entry.timestamp)}; the one in submitted/ has "
                        f"no {TIMESTAMP}, so the zip is not known to be newer)")
                    continue
                if entry.timestamp <= before:
                    result.lines.append(f"kept {who} (zip {_when(entry.timestamp)} not newer "
                                        f"than {_when(before)})")
                    continue
                aside = _aside(target_root.parent / REPLACED / entry.student / entry.assignment,
                               before)
                aside.parent.mkdir(parents=True, exist_ok=True)
                shutil.move(str(dest), str(aside))
                result.lines.append(
                    f"replaced {who} (zip {_when(entry.timestamp)} newer than "
                    f"{_when(before)}); the earlier files are in "
                    f"{aside.relative_to(target_root.parent)}/")
            elif dest.exists():
                dest.rmdir()  # an empty folder: nothing is lost
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.move(str(folder), str(dest))
            result.added += len(entry.members)
            result.submissions += 1


class _Damaged(Exception):
    def __init__(self, info: zipfile.ZipInfo, reason: str):
        super().__init__(reason)
        self.info, self.reason = info, reason


def _stage(zf, entry: _Entry, folder: Path) -> None:
    """Write ``entry``'s members under ``folder`` (a sparse stand-in for one too large);
    _Damaged for the first that cannot be read or written."""
    for file, info in entry.members.items():
        path = folder.joinpath(*file.split("/"))
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            if file in entry.sparse:
                write_sparse(path, info.file_size)
                continue
            with zf.open(info) as member, open(path, "wb") as out:
                left = info.file_size  # the declared size: never more is read
                while left > 0 and (chunk := member.read(min(left, 2**20))):
                    out.write(chunk)
                    left -= len(chunk)
        except (zipfile.BadZipFile, OSError, EOFError, ValueError) as exc:
            raise _Damaged(info, str(exc)) from None


def _aside(folder: Path, when: datetime) -> Path:
    """A new folder under ``folder`` named after ``when``."""
    base = folder / when.strftime("%Y-%m-%dT%H%M%SZ")
    path, n = base, 1
    while path.exists():
        n += 1
        path = base.with_name(f"{base.name}-{n}")
    return path
