"""Prepared courses (grading/prepared.py): built once, trusted only when they are this course's
own, rebuilt when damaged."""

from __future__ import annotations

import contextlib
import json
import shutil
import stat
import sys
from pathlib import Path

import nbformat
import pytest
from support.commands import ASSIGNMENT, FULL, run

from autograd_course.grading import prepared, selfcheck
from autograd_course.grading.course import Course


@pytest.fixture(scope="module")
def checked_course(tmp_path_factory, root):
    """A small course whose self-check has built its cache (.autograd-course-cache/)."""
    base = tmp_path_factory.mktemp("copies") / "original"
    base.mkdir()
    shutil.copy2(root / "nbgrader_config.py", base)
    for step in ("source", "release"):
        shutil.copytree(root / step / ASSIGNMENT, base / step / ASSIGNMENT)
    checked = run("check", f"release/{ASSIGNMENT}/{ASSIGNMENT}.ipynb", cwd=base)
    assert checked.returncode == 0, checked.stderr
    assert len(list((base / prepared.CACHE).glob(f"{ASSIGNMENT}-*"))) == 1
    return base


def _empty_gradebook(copy: Path) -> None:  # left half-written, or of another course
    (cached,) = (copy / prepared.CACHE).glob(f"{ASSIGNMENT}-*")
    (cached / "gradebook.db").write_bytes(b"")


def _cache_a_file(copy: Path) -> None:  # a cache that cannot be written
    shutil.rmtree(copy / prepared.CACHE)
    (copy / prepared.CACHE).write_text("not a folder")


@pytest.mark.parametrize("damage", [None, _empty_gradebook, _cache_a_file],
                         ids=["copied", "its-gradebook-lost-the-assignment", "unwritable"])
def test_check_in_a_copied_course_rebuilds_a_cache_that_is_not_its_own(checked_course, damage):
    copy = checked_course.parent / f"copy-{damage.__name__ if damage else 'plain'}"
    shutil.copytree(checked_course, copy, symlinks=True)  # as cp -a does, the cache with it
    if damage:
        damage(copy)
    result = run("check", f"release/{ASSIGNMENT}/{ASSIGNMENT}.ipynb", cwd=copy)
    assert result.returncode == 0, result.stderr
    assert result.stderr == "" and "Please see" not in result.stdout
    assert "FAIL q1_partials_test: 0/2  NotAnswered" in result.stdout
    assert f"total: 0/{FULL:g}" in result.stdout
    if damage is _cache_a_file:
        assert (copy / prepared.CACHE).read_text() == "not a folder"  # built aside, once
        return
    (cached,) = (copy / prepared.CACHE).glob(f"{ASSIGNMENT}-*")
    assert json.loads((cached / prepared.STAMP).read_text())["root"] == str(copy.resolve())
    assert not list((copy / prepared.CACHE).glob(".*")), "no build or stale copy left"


def test_a_cache_someone_else_could_have_written_is_not_used(checked_course, tmp_path):
    (cached,) = (checked_course / prepared.CACHE).glob(f"{ASSIGNMENT}-*")
    course = Course.load(checked_course)
    stamp = json.loads((cached / prepared.STAMP).read_text())
    assert prepared.usable(cached, course, ASSIGNMENT, stamp)
    planted = tmp_path / "planted"
    shutil.copytree(cached, planted)
    link = checked_course / prepared.CACHE / "link"
    link.symlink_to(planted)
    try:
        assert not prepared.usable(link, course, ASSIGNMENT, stamp)  # a link to elsewhere
    finally:
        link.unlink()
    mode = cached.stat().st_mode
    for writable in (stat.S_IWGRP, stat.S_IWOTH):
        cached.chmod(mode | writable)
        try:
            assert not prepared.usable(cached, course, ASSIGNMENT, stamp)
        finally:
            cached.chmod(mode)
    assert prepared.usable(cached, course, ASSIGNMENT, stamp)


def test_a_grading_run_builds_its_bundle_once_per_version_and_only_trusts_its_own(
        checked_course, monkeypatch):
    copy = checked_course.parent / "copy-bundles"
    shutil.copytree(checked_course, copy, symlinks=True)
    built = []
    real_prepare = prepared.prepare
    monkeypatch.setattr(prepared, "prepare",
                        lambda *a, **k: built.append(1) or real_prepare(*a, **k))
    course = Course.load(copy)
    first = prepared.prepared_bundle(course, [ASSIGNMENT])
    assert prepared.prepared_bundle(course, [ASSIGNMENT]) == first and len(built) == 1  # cached
    (folder,) = (copy / prepared.CACHE).glob("bundle-*")
    archive = folder / "course.tar.gz"
    data = archive.read_bytes()
    archive.write_bytes(data[:-1] + bytes([data[-1] ^ 1]))  # not the archive it stamped
    again = prepared.prepared_bundle(course, [ASSIGNMENT])
    assert again[1] == first[1] and again[0] != data[:-1] + bytes([data[-1] ^ 1])
    assert len(built) == 2
    (folder,) = (copy / prepared.CACHE).glob("bundle-*")
    folder.chmod(folder.stat().st_mode | stat.S_IWOTH)  # anyone could have written it
    assert prepared.prepared_bundle(course, [ASSIGNMENT])[1] == first[1] and len(built) == 3
    moved = checked_course.parent / "copy-bundles-moved"
    shutil.copytree(copy, moved, symlinks=True)  # a copied course builds its own
    prepared.prepared_bundle(Course.load(moved), [ASSIGNMENT])
    assert len(built) == 4
    source = copy / "source" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    nb = nbformat.read(source, as_version=4)
    nb.cells.append(nbformat.v4.new_markdown_cell("A new version of the assignment."))
    nbformat.write(nb, source)
    prepared.prepared_bundle(course, [ASSIGNMENT])  # a new version replaces the old one
    assert len(built) == 5 and len(list((copy / prepared.CACHE).glob("bundle-*"))) == 1
    assert not list((copy / prepared.CACHE).glob(".building-*"))


def test_a_cached_course_that_nbgrader_cannot_use_is_rebuilt_and_the_check_tried_again(
        checked_course, monkeypatch):
    copy = checked_course.parent / "copy-trusted"
    shutil.copytree(checked_course, copy, symlinks=True)
    _empty_gradebook(copy)
    built = []
    real_build = prepared._build
    monkeypatch.setattr(prepared, "usable", lambda *args: True)  # it passes every check
    monkeypatch.setattr(prepared, "_build",
                        lambda *args: built.append(args[0]) or real_build(*args))
    (rec,) = selfcheck.check(copy, copy / "release" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", "ada")
    assert len(built) == 1 and rec.student == "ada" and rec.max_score == FULL
    assert {q["diagnosis"] for q in rec.questions} == {"blank"}


# -- a prepared course's gradebook: made without an alembic process, opened with one engine ----
def _schema(path: Path) -> tuple:
    import sqlite3

    with contextlib.closing(sqlite3.connect(path)) as connection:
        return (sorted(connection.execute("SELECT type, name, sql FROM sqlite_master")),
                connection.execute("SELECT * FROM alembic_version").fetchall())


def test_a_prepared_gradebook_is_the_one_nbgrader_makes_without_an_alembic_process(
        tmp_path, monkeypatch, root):
    import warnings

    from nbgrader.api import Gradebook

    from autograd_course.grading.release import prepare
    from autograd_course.grading.tasks import sqlite_url

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        monkeypatch.setenv("PATH", str(Path(sys.executable).parent))  # this venv's alembic
        Gradebook(f"sqlite:///{tmp_path / 'nbgraders.db'}").close()  # nbgrader's own way
        monkeypatch.setenv("PATH", str(tmp_path))  # no `alembic` to start: it would fail
        built = prepare(tmp_path / "prepared", Course.load(root), [ASSIGNMENT],
                        db_url=sqlite_url(tmp_path / "prepared"))
    assert _schema(built / "gradebook.db") == _schema(tmp_path / "nbgraders.db")


def test_nbgrader_opens_a_shared_gradebook_with_one_engine_and_others_as_it_does(tmp_path):
    import warnings

    from nbgrader.api import Gradebook

    from autograd_course.grading import engines
    from autograd_course.grading.release import new_gradebook

    shared, other = (f"sqlite:///{tmp_path / name}.db" for name in ("shared", "other"))
    for url in (shared, other):
        new_gradebook(url)
    engines.share(shared)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            found = {}
            for url in (shared, other, shared, other):
                with Gradebook(url) as gb:
                    if url not in found:
                        gb.add_student("ada")
                    found.setdefault(url, []).append((gb.engine, len(gb.students)))
    finally:
        engines.release(shared)
    (one, n1), (again, n2) = found[shared]
    assert one is again and n1 == n2 == 1  # one engine, and what was written is there
    (first, _), (second, _) = found[other]
    assert first is not second
