"""Where a submission enters the grader: its files, bounded and checked before they are read.

Everything a student hands in is adversarial data. Here it is walked without following links,
special files (devices, pipes, sockets) and links are left out, and every file larger than
the course's ``CourseDirectory.max_file_size`` is left out *before it is read* (only its size
is kept, so that an oversized notebook is graded as such, :class:`Files`); a submission also
has at most :data:`MAX_FILES` files and :data:`MAX_TOTAL` bytes. The same rules apply to a
zip of a class (:func:`unpack_zip`): every member is checked before anything is unpacked, and
its declared size bounds what is read from it.

Student ids are checked too (:func:`check_student`): they become folder names, gradebook keys
and text in formgrader's pages, so only the characters nbgrader's own ids use are accepted.
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
import unicodedata
import zipfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from autograd_course.grading.record import NAME

MAX_FILES = 500
MAX_TOTAL = 500 * 10**6  # bytes in one submission
MAX_ZIP_MEMBERS = 100_000


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


def _normalised(parts: list[str]) -> str:
    return "/".join(unicodedata.normalize("NFC", p).casefold() for p in parts)


def unpack_zip(archive: Path, target_root: Path, max_bytes: int,
               max_total: int = 2 * 10**9) -> int:
    """Add the submissions of a zip (``[submitted/]STUDENT/ASSIGNMENT/FILE``) to
    ``target_root`` (submitted/); return the number of files added.

    Every member is checked before anything is written, and the first bad one refuses the
    whole zip, naming it: an absolute path, a ``..`` part or a link; a student id the course
    does not accept; a member larger than ``max_bytes`` (what its header declares, which also
    bounds what is read from it); members together larger than ``max_total``; two members
    whose paths are the same once normalised (``a//b``, ``a/./b``, Unicode forms, case); a
    member whose data is damaged (found while it is read, into a staging folder: the zip is
    unpacked whole or not at all). Nothing is ever written outside ``target_root``, and files
    already there are never overwritten.
    """
    if not zipfile.is_zipfile(archive):
        raise IntakeError(f"{archive} is not a zip file")
    target_root = target_root.resolve()
    plan, seen, total = [], {}, 0
    with zipfile.ZipFile(archive) as zf:
        members = zf.infolist()
        if len(members) > MAX_ZIP_MEMBERS:
            raise IntakeError(f"{archive}: {len(members)} members, more than "
                              f"{MAX_ZIP_MEMBERS}; nothing was unpacked")
        for info in members:
            name = info.filename
            raw = name.replace("\\", "/")
            is_link = (info.external_attr >> 16) & 0o170000 == 0o120000
            if raw.startswith("/") or PurePosixPath(raw).drive or ":" in raw.split("/")[0] or (
                    ".." in raw.split("/")):
                raise IntakeError(f"{archive}: member '{name}' has an unsafe path (absolute, "
                                  "or with '..'); nothing was unpacked")
            if is_link:
                raise IntakeError(f"{archive}: member '{name}' is a link; nothing was unpacked")
            parts = [p for p in raw.split("/") if p not in ("", ".")]
            if parts and parts[0] == "submitted":
                parts = parts[1:]
            if info.is_dir() or len(parts) < 3 or parts[0].startswith("__"):
                continue
            check_student(parts[0], f"{archive}: member '{name}'")
            if info.file_size > max_bytes:
                raise IntakeError(f"{archive}: member '{name}' is {info.file_size // 1000} kB, "
                                  f"more than the limit of {max_bytes // 1000} kB "
                                  "(CourseDirectory.max_file_size); nothing was unpacked")
            total += info.file_size
            if total > max_total:
                raise IntakeError(f"{archive}: its members hold more than {max_total // 10**6}"
                                  f" MB (at member '{name}'); nothing was unpacked")
            key = _normalised(parts)
            if key in seen:
                raise IntakeError(f"{archive}: members '{seen[key]}' and '{name}' name the same "
                                  "file; nothing was unpacked")
            seen[key] = name
            target = target_root.joinpath(*parts).resolve()
            if target_root not in target.parents:
                raise IntakeError(f"{archive}: member '{name}' would be written outside "
                                  "submitted/; nothing was unpacked")
            plan.append((info, target))
        # Read every member into a staging folder first (a damaged one refuses the zip), then
        # move them into place: a zip is unpacked whole or not at all.
        target_root.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix=".unpacking-", dir=target_root) as tmp:
            staged = []
            for number, (info, target) in enumerate(plan):
                if target.exists():
                    continue
                path = Path(tmp) / str(number)
                try:
                    with zf.open(info) as member, open(path, "wb") as out:
                        left = info.file_size  # the declared size: never more is read
                        while left > 0 and (chunk := member.read(min(left, 2**20))):
                            out.write(chunk)
                            left -= len(chunk)
                except (zipfile.BadZipFile, OSError, EOFError, ValueError) as exc:
                    raise IntakeError(f"{archive}: member '{info.filename}' is damaged ({exc});"
                                      " nothing was unpacked") from None
                staged.append((path, target))
            for path, target in staged:
                target.parent.mkdir(parents=True, exist_ok=True)
                os.replace(path, target)
    return len(staged)
