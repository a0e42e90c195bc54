"""Prepared courses, built once per version of their assignments and kept in the course's cache.

A prepared course is a private course with assignments released and in a SQLite gradebook of
its own (:func:`.release.prepare`): the self-check grades in a copy of one per assignment
(:func:`prepared_course`), a grading run sends one for all its assignments to its workers,
packed (:func:`prepared_bundle`). Both are kept in the course's :data:`CACHE` folder, keyed by
a hash of the package's version, the course's config and the assignments' source
(:func:`fingerprint`); a new version replaces the older ones.

The cache is only ever a shortcut. A prepared course carries a stamp (:data:`STAMP`: the
fingerprint, the course root it was made for, the package and nbgrader that made it; a
bundle's also the hash of its archive) and is used only when its stamp, its config, its
notebooks and its gradebook are all what this course needs now, and when it and the cache are
this user's and no one else's to write; anything else (a course folder copied or moved with
its cache, a cache of an older checkout, a gradebook left half-written) is rebuilt. A cache
that cannot be written is replaced by a private build, for the one check or the one run.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import sqlite3
import stat
import tempfile
import time
from pathlib import Path

from autograd_course import __version__
from autograd_course.grading.course import CONFIG_FILE, Course
from autograd_course.grading.release import prepare
from autograd_course.grading.tasks import pack, sqlite_url

#: The folder of a course root that holds its prepared courses.
CACHE = ".autograd-course-cache"
#: The file in a prepared course that says what it was made for (see :func:`stamp_of`).
STAMP = "prepared.json"
#: Seconds after which a ``.building-*`` folder in the cache is an interrupted build's.
STALE_BUILD_SECONDS = 3600


def fingerprint(course: Course, assignment: str) -> str:
    """A hash of what a prepared ``assignment`` is made of: the package's version, the
    course's config and the assignment's source files."""
    digest = hashlib.sha256(__version__.encode())
    digest.update((course.root / CONFIG_FILE).read_bytes())
    folder = course.directory("source", ".", assignment)
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(folder)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def stamp_of(course: Course, assignment: str, fingerprint: str) -> dict:
    """What a prepared course must have been made for to be used: this version of the
    assignment, this course root (a copied or moved course rebuilds its own), this package
    and this nbgrader."""
    import nbgrader

    return {"assignment": assignment, "fingerprint": fingerprint, "root": str(course.root),
            "package": str(Path(__file__).resolve().parent.parent),
            "nbgrader": nbgrader.__version__}


def _notebook_paths(course: Course, folder: Path, assignment: str) -> list[Path]:
    """Where ``folder`` (a prepared course) holds the assignment's source and release notebook,
    laid out as ``course`` lays them out."""
    paths = []
    for step in ("source", "release"):
        where = course.directory(step, ".", assignment) / f"{assignment}.ipynb"
        try:
            paths.append(folder / where.relative_to(course.root))
        except ValueError:  # a step outside the course root: not in a prepared course
            continue
    return paths


def _gradebook_knows(path: Path, assignment: str) -> bool:
    """Whether the SQLite gradebook ``path`` opens and holds ``assignment``'s notebook."""
    if not path.is_file():
        return False
    try:
        with contextlib.closing(sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro",
                                                uri=True)) as db:
            row = db.execute(
                "SELECT 1 FROM notebook JOIN assignment ON notebook.assignment_id = "
                "assignment.id WHERE assignment.name = ? AND notebook.name = ?",
                (assignment, assignment)).fetchone()
    except sqlite3.Error:
        return False
    return row is not None


def owned(path: Path) -> bool:
    """Whether ``path`` is a real folder of this user that no one else may write: the judge
    runs the test cells of a prepared course's gradebook, so one that another user could have
    written is not used."""
    info = path.lstat()
    return (stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid()
            and not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH))


def usable(folder: Path, course: Course, assignment: str, stamp: dict) -> bool:
    """Whether the prepared course ``folder`` can grade ``assignment`` for ``course`` now: this
    user's own (it and the cache), made for it (its stamp), with the course's config, both
    notebooks and a gradebook that holds the assignment."""
    try:
        if not (owned(folder.parent) and owned(folder)):
            return False
        if json.loads((folder / STAMP).read_text()) != stamp:
            return False
        if (folder / CONFIG_FILE).read_bytes() != (course.root / CONFIG_FILE).read_bytes():
            return False
        if not all(p.is_file() for p in _notebook_paths(course, folder, assignment)):
            return False
    except (OSError, ValueError):
        return False
    return _gradebook_knows(folder / "gradebook.db", assignment)


def _build(folder: Path, course: Course, assignment: str, stamp: dict) -> Path:
    """Prepare ``assignment`` in the new folder ``folder`` and stamp it."""
    prepare(folder, course, [assignment], db_url=sqlite_url(folder))
    (folder / STAMP).write_text(json.dumps(stamp, indent=1) + "\n")
    return folder


def _remove(path: Path, cache: Path) -> None:
    """Remove a prepared course: renamed out of the way first (a check that looks for it
    meanwhile builds its own), then deleted."""
    try:
        gone = Path(tempfile.mkdtemp(prefix=".stale-", dir=cache))
        path.rename(gone / path.name)
    except OSError:
        gone = path
    shutil.rmtree(gone, ignore_errors=True)


def _sweep(cache: Path, assignment: str, keep: Path) -> None:
    """Remove the other versions of ``assignment`` and what interrupted builds left."""
    for old in cache.glob(f"{assignment}-*"):
        if old != keep and len(old.name) == len(keep.name):  # an older version
            shutil.rmtree(old, ignore_errors=True)
    for old in [*cache.glob(".building-*"), *cache.glob(".stale-*")]:
        try:
            if time.time() - old.stat().st_mtime > STALE_BUILD_SECONDS:
                shutil.rmtree(old, ignore_errors=True)
        except OSError:
            continue


def prepared_course(course: Course, assignment: str, *, rebuild: bool = False,
                    scratch: Path | None = None) -> tuple[Path, bool]:
    """A course with ``assignment`` released and in its gradebook, and whether it was built
    just now. It is built once per version of the assignment and cached (the versions before
    it are removed); a cached one that is not :func:`usable` here, or any with ``rebuild``, is
    built again. Where the cache cannot be written, it is built in ``scratch`` (a folder the
    caller removes) when given."""
    cache = course.root / CACHE
    version = fingerprint(course, assignment)
    stamp = stamp_of(course, assignment, version)
    folder = cache / f"{assignment}-{version}"
    if not rebuild and usable(folder, course, assignment, stamp):
        return folder, False
    try:
        cache.mkdir(mode=0o755, exist_ok=True)  # not group-writable under any umask (owned)
        building = Path(tempfile.mkdtemp(prefix=f".building-{assignment}-", dir=cache))
    except OSError:  # a read-only course, or a cache of another user: build for this check
        if scratch is None:
            raise
        return _build(Path(tempfile.mkdtemp(prefix="prepared-", dir=scratch)), course,
                      assignment, stamp), True
    try:
        _build(building, course, assignment, stamp)
    except BaseException:
        shutil.rmtree(building, ignore_errors=True)
        raise
    if folder.exists() or folder.is_symlink():  # the cache's unusable one
        _remove(folder, cache)
    try:
        building.rename(folder)
    except OSError:  # another check put its own there meanwhile
        if usable(folder, course, assignment, stamp):
            shutil.rmtree(building, ignore_errors=True)
            return folder, True
        return building, True  # used as it is; swept later
    _sweep(cache, assignment, folder)
    return folder, True


def prepared_bundle(course: Course, assignments: list[str]) -> tuple[bytes, dict]:
    """The packed prepared course of ``assignments`` and each one's graded cells (notebook ->
    cell -> points), built once per version of them and kept in the course's cache folder
    (:data:`CACHE`), as :func:`prepared_course` keeps the self-check's: a cached one is used
    only when its stamp says it was made from this config and source, for this course root
    (a course copied or moved with its cache builds its own), by this package and
    nbgrader, and the archive is the one stamped; the cache must be this user's and no one
    else's to write. Where the cache cannot be written, it is built for this run only."""
    from autograd_course.grading import gradebook

    names = sorted(assignments)
    version = hashlib.sha256("\0".join(
        f"{name}:{fingerprint(course, name)}" for name in names).encode()).hexdigest()
    stamp = stamp_of(course, ",".join(names), version[:16])
    cache = course.root / CACHE
    label = hashlib.sha256(",".join(names).encode()).hexdigest()[:8]
    folder = cache / f"bundle-{label}-{version[:16]}"
    found = _cached_bundle(folder, stamp)
    if found is not None:
        return found
    with tempfile.TemporaryDirectory(prefix="autograd-course-bundle-") as tmp:
        built = prepare(Path(tmp) / "course", course, names,
                        db_url=sqlite_url(Path(tmp) / "course"))
        graded_cells = {name: gradebook.cells(sqlite_url(built), name, course.course_id)
                        for name in names}
        archive = pack(built)
    _keep_bundle(cache, folder, dict(stamp, archive=hashlib.sha256(archive).hexdigest()),
                 archive, graded_cells)
    return archive, graded_cells


def _cached_bundle(folder: Path, stamp: dict) -> tuple[bytes, dict] | None:
    try:
        if not (owned(folder.parent) and owned(folder)):
            return None
        kept = json.loads((folder / STAMP).read_text())
        archive = (folder / "course.tar.gz").read_bytes()
        if kept != dict(stamp, archive=hashlib.sha256(archive).hexdigest()):
            return None
        return archive, json.loads((folder / "cells.json").read_text())
    except (OSError, ValueError):
        return None


def _keep_bundle(cache: Path, folder: Path, stamp: dict, archive: bytes,
                 graded_cells: dict) -> None:
    """Put a built bundle in the cache (written aside, then renamed into place), in place of
    an unusable one there and of the older versions of the same assignments."""
    try:
        cache.mkdir(mode=0o755, exist_ok=True)
        building = Path(tempfile.mkdtemp(prefix=".building-bundle-", dir=cache))
    except OSError:  # a read-only course: this run only
        return
    try:
        (building / "course.tar.gz").write_bytes(archive)
        (building / "cells.json").write_text(json.dumps(graded_cells))
        (building / STAMP).write_text(json.dumps(stamp, indent=1) + "\n")
        for old in cache.glob(folder.name.rsplit("-", 1)[0] + "-*"):
            shutil.rmtree(old, ignore_errors=True)
        building.rename(folder)
    except OSError:  # another run put its own there meanwhile
        shutil.rmtree(building, ignore_errors=True)
