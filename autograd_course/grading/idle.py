"""A grade run with nothing to do, told apart at start-up, without nbgrader.

Which submissions a run grades is decided from the gradebook (their markers, due dates and
extensions: :func:`.runner.grade_class`) under the config as nbgrader reads it, and importing
nbgrader costs seconds (its package imports Jupyter's server, nbconvert, SQLAlchemy and
jsonschema with it); so do the feedback check, the export and the class report (matplotlib)
that follow. A run with nothing new to grade would pay all that to write the same files again.
So every run that ends well leaves a **stamp** (:class:`Stamp`, in the course's cache folder):

- what it was asked: the assignments and students named, and ``--rename-notebook``;
- fingerprints (:func:`walk`: each path's type, size, times and inode, a folder's with
  everything under it) of what it read, taken before it read them: the config files nbgrader
  reads and the environment variables their text names, this package's files (its
  ``__pycache__`` folders, which Python writes, left out: nowhere else) and the folder nbgrader
  is installed in, the roster, source/ and submitted/; of what grading writes, taken once its
  merges were done, with the grading lock still held, and before the feedback, the export and
  the report read them: the gradebook (SQLite's file, with its header, whose change counter
  moves at every commit), records/, autograded/ and feedback/; and of grades.csv and the class
  reports, once written;
- what a run with nothing to do says: the warnings, the report and grades lines, the summary.

The next run asked the same, where every fingerprint is what the stamp holds
(:meth:`Stamp.last`), has nothing to do: no submission, feedback page, grade or report
would change. It says so and stops, having read the stamp and the file system's metadata
only: no module of nbgrader, SQLAlchemy, nbconvert, matplotlib or torch is imported
(tests/test_cli.py). Anything else runs in full, deciding submission by submission as
before: no stamp, or one that another user could have written; another question; any
difference; a gradebook that is not a SQLite file in rollback-journal mode (a PostgreSQL
server, SQLite's WAL); a layout where a step's folder does not hold its submissions;
``--force`` or ``--zip``. A write after a fingerprint was taken changes it, so the stamp is
only ever a shortcut: deleting it costs one full run.

A walk starts where the config names each path, links unresolved (a step's folder, the roster
or a config file may be a link), and follows it to where it leads now: its entries are named
by their resolved paths, so a link pointed elsewhere (``ln -sfn`` of submitted/ to the next
term's) changes the fingerprint. Where a fingerprint could miss what a run reads, no stamp is
left. A symbolic link met below where a walk starts (a student's folder linked elsewhere): a
run reads through it, a walk does not; fingerprinting the link's target as well would have to
follow links safely (loops, links out of the course), so such a link simply costs the stamp. The
gradebook moved while the run graded (formgrader's new due date or extension, committed after
the run read them): once the graded fingerprint is taken, the run reads the due dates,
extensions and markers again, still under the lock (:attr:`.runner.Summary.settled`), and
leaves no stamp unless each submission's marker is still what it was graded or kept under and
its dates are those it was decided with (a commit after that moves the header).

A file whose modification or change time is within :data:`FRESH_NS` (2 s) of its walk, or
later, is fingerprinted by its content too (and so again by the next run): on a file system
with coarse times, a same-size write just after the walk could leave the times as they were.
The times must be the file's own: a network file system whose change times are unreliable
(set by a client's clock, or cached) is a limit of the stamp, as is a config that takes its
values from elsewhere (another file, an environment variable its text does not name).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import stat
import sys
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path

from autograd_course import __version__
from autograd_course.grading import gradebook, record, roster
from autograd_course.grading.course import Course
from autograd_course.grading.prepared import CACHE, owned

#: The stamp's file, in the course's cache folder (:data:`.prepared.CACHE`).
STAMP_FILE = "grade-run.json"
#: The config files nbgrader reads, in the course root and in each of Jupyter's config folders.
CONFIG_NAMES = ("nbgrader_config.py", "nbgrader_config.json", "jupyter_config.py",
                "jupyter_config.json")
#: The first bytes of a SQLite database file, and where its header says rollback-journal mode.
SQLITE_MAGIC, SQLITE_LEGACY = b"SQLite format 3\0", b"\1\1"
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
#: A file changed this recently (nanoseconds) when fingerprinted, or later, is fingerprinted by
#: its content too: a file system whose times are coarse could give a same-size write after
#: the fingerprint the same times.
FRESH_NS = 2_000_000_000


class Walk:
    """What :func:`walk` saw: the ``digest``; whether a deep walk met a symbolic ``link``;
    the regular files it found ``fresh`` (changed within :data:`FRESH_NS` of the walk, or
    later: their content went into the digest)."""

    def __init__(self) -> None:
        self.hash, self.link, self.fresh = hashlib.sha256(), False, []

    @property
    def digest(self) -> str:
        return self.hash.hexdigest()


def walk(paths: Iterable[Path], shallow: Iterable[Path] = (), skip: Iterable[str] = (),
         read: Iterable[str] | None = None) -> Walk:
    """Walk ``paths`` as they are now, into :class:`Walk`'s digest: each one's type, size,
    modification and change times and inode (or its absence), and a folder's the same of
    everything under it but the entries named in ``skip``; ``shallow`` folders count by their
    own entry only (one that gains or loses an entry changes). ``paths`` and ``shallow`` are
    followed where they lead, and what is under them is named so (a link among them pointed
    elsewhere changes the digest); the links under them are not (a deep walk that meets one
    says so). The content of a regular file goes in too where its times are too new to tell a
    later same-size write apart (fresh): those of ``read``, when given (what the walk being
    repeated found fresh), else those found so now."""
    seen, skip = Walk(), set(skip)
    since = time.time_ns() - FRESH_NS
    todo = [(Path(os.path.realpath(p)), True) for p in reversed(list(paths))]
    todo += [(Path(os.path.realpath(p)), False) for p in shallow]
    while todo:
        path, deep = todo.pop()
        name = os.fsencode(str(path))
        try:
            info = os.lstat(path)
        except OSError as exc:
            seen.hash.update(name + f"\0{exc.errno}\n".encode())
            continue
        seen.hash.update(name + f"\0{info.st_mode:o} {info.st_size} {info.st_mtime_ns} "
                                f"{info.st_ctime_ns} {info.st_ino}\n".encode())
        seen.link |= deep and stat.S_ISLNK(info.st_mode)
        if stat.S_ISREG(info.st_mode) and (
                str(path) in read if read is not None
                else max(info.st_mtime_ns, info.st_ctime_ns) >= since):
            seen.fresh.append(str(path))
            seen.hash.update(_content(path).encode())
        if deep and stat.S_ISDIR(info.st_mode):
            try:
                names = sorted(os.listdir(path), reverse=True)
            except OSError as exc:
                seen.hash.update(f"unlisted {exc.errno}\n".encode())
                continue
            todo += [(path / n, True) for n in names if n not in skip]
    return seen


def _content(path: Path) -> str:
    """The SHA-256 of the file ``path``'s bytes (an error's number when it cannot be read)."""
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    except OSError as exc:
        return f"unread {exc.errno}\n"
    return f"content {digest.hexdigest()}\n"


def config_paths(root: Path) -> list[Path]:
    """Every file nbgrader may read its config from, for a command run in ``root``: the
    course's own, and those of Jupyter's config folders (which the environment sets)."""
    from jupyter_core.paths import jupyter_config_dir, jupyter_config_path

    folders = dict.fromkeys([str(root), jupyter_config_dir(), *jupyter_config_path()])
    return [Path(folder) / name for folder in folders for name in CONFIG_NAMES]


def _config_digest(root: Path) -> str | None:
    """The fingerprint of the config and the code a run of ``root`` runs with: the config
    files, the environment variables their text names, the package's version and files (but
    the ``__pycache__`` folders Python writes there), the Python and the folder nbgrader is
    installed in (an install or upgrade there changes it); None where a symbolic link stands
    under the package's folder (:func:`walk`)."""
    import importlib.util

    import autograd_course

    paths = config_paths(root)
    names: set[str] = set()
    for path in paths:
        try:
            names.update(_NAME.findall(path.read_bytes().decode(errors="replace")))
        except OSError:
            continue
    named = sorted((key, value) for key, value in os.environ.items() if key in names)
    spec = importlib.util.find_spec("nbgrader")
    installed = [Path(spec.origin).parent.parent] if spec and spec.origin else []
    config = walk(paths)
    code = walk([Path(autograd_course.__file__).parent], shallow=installed,
                skip=["__pycache__"])
    if config.link or code.link:
        return None
    return hashlib.sha256(json.dumps([__version__, sys.executable, named, config.digest,
                                      code.digest]).encode()).hexdigest()


def _sqlite_header(path: Path) -> str | None:
    """The header of the SQLite database ``path`` (its change counter moves at every commit),
    as hex; None when it is no such file in rollback-journal mode."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(100)
    except OSError:
        return None
    if len(head) < 100 or not head.startswith(SQLITE_MAGIC) or head[18:20] != SQLITE_LEGACY:
        return None
    return head.hex()


def _part(paths: list, sqlite: str | None = None, lock: str | None = None,
          read: list | None = None) -> dict | None:
    """One part of a stamp: ``paths``, their :func:`walk`'s digest and the files it found
    fresh (``read``: those of the part being taken again); for the gradebook, also its SQLite
    file, that file's header, and the file of its grading lock. None where the walk met a
    symbolic link under ``paths`` (a run reads through it: what it points to is not
    fingerprinted)."""
    seen = walk((Path(p) for p in paths), read=read)
    if seen.link:
        return None
    part = {"paths": [str(p) for p in paths], "digest": seen.digest, "read": seen.fresh}
    if sqlite is not None:
        part |= {"sqlite": sqlite, "header": _sqlite_header(Path(sqlite)), "lock": lock}
    return part


def _again(part: dict) -> dict | None:
    """``part`` (of a stamp) taken again now."""
    return _part(part["paths"], read=part["read"],
                 **{key: part[key] for key in ("sqlite", "lock") if key in part})


def _named(course: Course, step: str) -> Path:
    """The folder of ``step`` as the config names it, its links unresolved (a walk follows
    them and so sees one pointed elsewhere; :meth:`.Course.directory` resolves them)."""
    coursedir = course.coursedir
    return Path(coursedir.format_path(getattr(coursedir, f"{step}_directory"), ".", "."))


def _holds_its_submissions(course: Course, step: str) -> bool:
    """Whether the folder of ``step`` holds every student's folder of that step."""
    return course.directory(step, "STUDENT", "ASSIGNMENT").is_relative_to(course.directory(step))


def _well_formed(said: object) -> bool:
    """Whether ``said`` is what :meth:`Stamp.leave` writes."""
    return (isinstance(said, dict) and isinstance(said.get("submissions"), int)
            and all(isinstance(said.get(key), list) and all(isinstance(line, str)
                                                            for line in said[key])
                    for key in ("warnings", "lines")))


class Stamp:
    """The stamp of one run: the last run's, read (:meth:`last`), and this run's, taken as it
    goes and left at its end (:meth:`leave`). Made before the course's config is read."""

    def __init__(self, root: str | Path, asked: dict):
        self.root = Path(root).resolve()
        self.path = self.root / CACHE / STAMP_FILE
        config = _config_digest(self.root)
        self.taken: dict | None = None if config is None else {
            "root": str(self.root), "asked": asked, "config": config}

    def last(self) -> dict | None:
        """What the last run said, when its stamp is this user's alone, it was asked the same
        and nothing it fingerprinted changed since; else None."""
        kept = self._read()
        if kept is None or self.taken is None:
            return None
        try:
            if any(kept[key] != self.taken[key] for key in ("root", "asked", "config")):
                return None
            with gradebook.free(Path(kept["graded"]["lock"])) as free:
                if not free:  # a run is grading: this one waits for it, in full
                    return None
                for part in ("inputs", "graded", "outputs"):
                    if _again(kept[part]) != kept[part]:
                        return None
            said = kept["said"]
        except (KeyError, TypeError, OSError):
            return None
        return said if _well_formed(said) else None

    def inputs(self, course: Course) -> None:
        """Fingerprint what the run reads besides the config: call it before it is read."""
        if not _holds_its_submissions(course, "submitted"):
            self.taken = None
        else:
            self._take("inputs", _part([roster.path_of(course), _named(course, "source"),
                                        _named(course, "submitted")]))

    def graded(self, course: Course) -> None:
        """Fingerprint what grading wrote: call it once the merges are done, with the grading
        lock still held (:func:`.runner.grade_class`'s ``on_merged``), before anything reads
        them for the feedback, the export or the report."""
        sqlite = course.sqlite_path()
        if (self.taken is None or sqlite is None or not sqlite.is_absolute()
                or not all(_holds_its_submissions(course, s) for s in ("autograded", "feedback"))):
            self.taken = None
            return
        real = Path(os.path.realpath(sqlite))  # SQLite's journals lie beside the file itself
        self._take("graded", _part(
            [sqlite, real.with_name(real.name + "-journal"), real.with_name(real.name + "-wal"),
             record.store(course.root).root, _named(course, "autograded"),
             _named(course, "feedback")],
            sqlite=str(sqlite), lock=str(gradebook.lock_path(course))))
        if self.taken is not None and self.taken["graded"]["header"] is None:
            self.taken = None

    def outputs(self, paths: list[Path]) -> None:
        """Fingerprint the files the run wrote last (grades.csv, the class reports)."""
        self._take("outputs", _part(paths))

    def drop(self) -> None:
        """Leave no stamp at this run's end (what it read may have moved under it)."""
        self.taken = None

    def _take(self, name: str, part: dict | None) -> None:
        """Keep ``part`` as the stamp's part ``name``; None (a link met) drops the stamp."""
        if part is None:
            self.taken = None
        elif self.taken is not None:
            self.taken[name] = part

    def leave(self, said: dict) -> None:
        """Write the stamp, with ``said`` (what a run with nothing to do says: ``submissions``,
        how many were kept; ``warnings``; ``lines``), when every part was taken, into the
        course's cache when it is this user's alone; a stamp that cannot be written is none."""
        if self.taken is None or not {"inputs", "graded", "outputs"} <= self.taken.keys():
            return
        cache = self.path.parent
        try:
            cache.mkdir(mode=0o755, exist_ok=True)  # as .prepared makes it
            if not owned(cache):
                return
            fd, name = tempfile.mkstemp(dir=cache, prefix=".grade-run-")  # this user's alone
        except OSError:
            return
        try:
            with os.fdopen(fd, "w") as handle:
                json.dump(dict(self.taken, said=said), handle)
            os.replace(name, self.path)
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(name)

    def _read(self) -> dict | None:
        """The stamp there, when it and its folder are this user's and no one else's to write
        (one that another user wrote could skip a run that has work to do)."""
        try:
            if not owned(self.path.parent):
                return None
            info = self.path.lstat()
            if (not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid()
                    or info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)):
                return None
            kept = json.loads(self.path.read_text())
        except (OSError, ValueError):
            return None
        return kept if isinstance(kept, dict) else None
