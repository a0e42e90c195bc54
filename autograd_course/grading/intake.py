"""Where a submission enters the grader: its files, bounded and checked before they are read.

Everything a student hands in is adversarial data. Here it is walked without following links,
special files (devices, pipes, sockets) and links are left out, and every file larger than
the course's ``CourseDirectory.max_file_size`` is left out *before it is read* (only its size
is kept, so that an oversized notebook is graded as such, :class:`Files`); a submission also
has at most :data:`MAX_FILES` files and :data:`MAX_TOTAL` bytes. The same rules apply to a
zip of a class (:mod:`.zips`). Files written for a submission (:func:`write_files`) never
land outside the folder they are written to.

Student ids are checked too (:func:`check_student`): they become folder names, gradebook keys
and text in formgrader's pages, so only the characters nbgrader's own ids use are accepted.
"""

from __future__ import annotations

import os
import shutil
import stat
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from autograd_course.grading.record import NAME
from autograd_course.grading.terminal import safe

MAX_FILES = 500
MAX_TOTAL = 500 * 10**6  # bytes in one submission
TIMESTAMP = "timestamp.txt"
#: nbgrader's own files in a submission's folder (never a student's, in an LMS download).
NBGRADER_FILES = (TIMESTAMP, "submission_secret.txt")


class IntakeError(ValueError):
    """A submission, or a zip of submissions, that is refused as a whole; says why."""


def check_student(student: str, where: str = "") -> str:
    """``student`` if it is an id the course accepts; IntakeError otherwise."""
    if not NAME.match(student):
        raise IntakeError(f"{where or student!r}: {student!r} is not a student id (1 to 128 "
                          "letters, digits and . _ @ + -, starting with a letter or digit)")
    return student


@dataclass
class Files:
    """The files of one submission, by relative path: those it may bring (``paths``), the
    sizes of those too large to read (``oversized``), and what was left out and why."""

    paths: dict[str, Path] = field(default_factory=dict)
    oversized: dict[str, int] = field(default_factory=dict)
    left_out: list[str] = field(default_factory=list)

    def read(self) -> dict[str, bytes]:
        """The contents of the files it may bring."""
        return {name: path.read_bytes() for name, path in self.paths.items()}


def scan(folder: Path, max_bytes: int) -> Files:
    """The files under ``folder`` (a submission), walked without following links."""
    found = Files()
    total = 0
    for top, dirs, names in os.walk(folder, followlinks=False):
        dirs.sort()
        for name in sorted(names):
            path = Path(top) / name
            relative = path.relative_to(folder).as_posix()
            info = path.lstat()
            if not stat.S_ISREG(info.st_mode):
                found.left_out.append(f"{relative}: a link or a special file, left out")
            elif info.st_size > max_bytes:
                found.oversized[relative] = info.st_size
                found.left_out.append(f"{relative}: {info.st_size // 1000} kB, more than the "
                                      f"limit of {max_bytes // 1000} kB, not read")
            elif len(found.paths) >= MAX_FILES or total + info.st_size > MAX_TOTAL:
                found.left_out.append(f"{relative}: past the limit of {MAX_FILES} files or "
                                      f"{MAX_TOTAL // 10**6} MB per submission, left out")
            else:
                found.paths[relative] = path
                total += info.st_size
    return found


def copy_files(files: Files, dest: Path, *, notebooks: bool = False) -> None:
    """Copy ``files`` under ``dest``, readable by all (the kernel's user copies them again);
    notebooks (``*.ipynb``) only when ``notebooks``."""
    for name, path in files.paths.items():
        if name.endswith(".ipynb") and not notebooks:
            continue
        target = dest / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target, follow_symlinks=False)
        os.chmod(target, 0o644)
    for folder in [dest, *(p for p in dest.rglob("*") if p.is_dir() and not p.is_symlink())]:
        os.chmod(folder, 0o755)


def write_sparse(path: Path, size: int) -> None:
    """A file of ``size`` bytes that holds nothing (a stand-in for a file too large to read,
    so that what grades it sees the size it had)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as f:
        f.truncate(size)


def inside(folder: Path, name: str) -> Path:
    """Where ``name`` (a relative path) lies under ``folder``; ValueError if it would leave it."""
    target = (folder.resolve() / name).resolve()
    if folder.resolve() not in target.parents:
        raise ValueError(f"refusing to write {name!r} outside {folder}")
    return target


def write_files(folder: Path, files: dict[str, bytes]) -> None:
    """Write ``files`` under ``folder``, refusing a name that would leave it."""
    for name, data in files.items():
        target = inside(folder, name)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)


def misnamed(names: list[str], notebooks: list[str]) -> list[str]:
    """The notebooks at the top of a submission (``names``, relative paths) not named as the
    assignment's ``notebooks``, when one of those is missing ([] when all are there)."""
    if all(n in names for n in notebooks):
        return []
    return sorted(n for n in names if "/" not in n and n.endswith(".ipynb") and n not in notebooks)


def misnamed_said(student: str, wrong: list[str], notebooks: list[str]) -> str:
    """What a submission with notebooks :func:`misnamed` ``wrong`` says: "STUDENT submitted X;
    the assignment's notebook is Y" (the task's reason, the grade command's warning)."""
    return (f"{student} submitted {', '.join(shown(w) for w in wrong[:3])}"
            + (f" and {len(wrong) - 3} more" if len(wrong) > 3 else "")
            + f"; the assignment's notebook{'s are' if len(notebooks) > 1 else ' is'} "
            + ", ".join(notebooks))


def shown(name: str, limit: int = 80) -> str:
    """A name from a submission, as text to show: made :func:`~.terminal.safe` (no escape
    codes or control characters), then cut to ``limit`` characters."""
    name = safe(name)
    return name if len(name) <= limit else name[: limit - 1] + "…"


def timestamp_text(when: datetime) -> str:
    """``when`` (naive UTC) as nbgrader's timestamp.txt holds it."""
    return when.strftime("%Y-%m-%d %H:%M:%S.%f UTC")


def parse_timestamp(text: str, where: str) -> datetime:
    """The time in a timestamp.txt, read as nbgrader reads it (``parse_utc``: one without a
    zone is UTC), as naive UTC; IntakeError naming ``where`` when it is not one."""
    from nbgrader.utils import parse_utc

    text = text.strip()
    try:
        if not text or len(text) > 64:
            raise ValueError(text)
        return parse_utc(text)
    except (ValueError, OverflowError, TypeError):
        raise IntakeError(f"{where}: {shown(text)!r} is not a timestamp") from None


def existing_time(folder: Path) -> datetime | None:
    """The time in ``folder``'s timestamp.txt, read only if it is a regular file (not a pipe,
    a link or a folder), at most 200 bytes of it; None when there is none to read."""
    path = folder / TIMESTAMP
    try:
        if not stat.S_ISREG(path.lstat().st_mode):
            return None
        handle = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        try:
            if not stat.S_ISREG(os.fstat(handle).st_mode):  # swapped since the lstat
                return None
            data = os.read(handle, 200)
        finally:
            os.close(handle)
        return parse_timestamp(data.decode(), str(path))
    except (OSError, IntakeError, UnicodeDecodeError):
        return None
