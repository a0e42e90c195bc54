"""The student versions: the one way the course makes them, with nbgrader.

:func:`prepare` runs nbgrader's ``generate_assignment`` in a course of its own (a folder
with the config and a copy of ``source/``): it writes ``release/NAME`` and puts the
assignment into a gradebook (the folder's own SQLite file, or the ``db_url`` given). Everything
that needs student versions goes through it:

- :func:`generate` writes ``release/`` and never touches the course's gradebook;
- :func:`release` (``autograd-course release``) writes ``release/``, registers the
  assignments in the course's gradebook, whatever its ``db_url``, as
  ``nbgrader generate_assignment`` in the course root would, and releases them to the
  exchange (``Exchange.root``, which the course's config always sets), as
  ``nbgrader release_assignment`` would. Only the assignments named are registered. An
  assignment already in the exchange's ``outbound/`` is left as it is (release/, gradebook
  and exchange), unless ``force``: then it is generated and released again (nbgrader's
  ``--force``; students who fetched it keep their copy);
- the self-check and the grading workers keep a prepared course as it is (config, source,
  release and a gradebook that knows the assignment).
"""

from __future__ import annotations

import contextlib
import copy
import functools
import shutil
import sqlite3
import tempfile
import warnings
from collections.abc import Iterable
from pathlib import Path

from autograd_course.grading.course import CONFIG_FILE, Course

_IGNORE = shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__", "*.pyc", "gradebook.db")


class ReleaseError(RuntimeError):
    """nbgrader could not generate an assignment (its message says why)."""


def prepare(dest: Path, source: Course, names: Iterable[str], *,
            db_url: str | None = None, config_text: str | None = None) -> Path:
    """Make a course in ``dest``: ``source``'s config (or ``config_text``), a copy of the
    assignments ``names`` from its source folder, and nbgrader's generate_assignment of each,
    into ``dest``'s gradebook (or ``db_url``). Returns ``dest``."""
    from nbgrader.apps import NbGraderAPI

    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    text = config_text if config_text is not None else (source.root / CONFIG_FILE).read_text()
    (dest / CONFIG_FILE).write_text(text)
    overrides = {"CourseDirectory": {"db_url": db_url}} if db_url else {}
    work = Course.load_config(dest, **overrides)
    new_gradebook(work.db_url)
    names = list(names)
    for name in names:
        origin, target = source.directory("source", ".", name), work.directory("source", ".", name)
        if origin != target:
            shutil.copytree(origin, target, ignore=_IGNORE, dirs_exist_ok=True)
    api = NbGraderAPI(config=work.config)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # SQLAlchemy's notes on nbgrader's own queries
        for name in names:
            result = api.generate_assignment(name, force=True)
            if not result.get("success"):
                lines = (result.get("error") or result.get("log") or "").strip().splitlines()
                raise ReleaseError(f"nbgrader generate_assignment {name} failed: "
                                   + (lines[-1] if lines else "no message"))
    return dest


@functools.cache
def alembic_head() -> str:
    """nbgrader's database revision: the head of its migrations (what ``alembic heads`` tells
    nbgrader), read in this process."""
    from alembic.config import Config
    from alembic.script import ScriptDirectory
    from nbgrader.dbutil import ALEMBIC_DIR

    config = Config()
    config.set_main_option("script_location", ALEMBIC_DIR)
    [head] = ScriptDirectory.from_config(config).get_heads()
    return head


def new_gradebook(db_url: str) -> None:
    """Create the SQLite gradebook of ``db_url`` if there is none yet, stamped with nbgrader's
    database revision (:func:`alembic_head`) as nbgrader stamps a gradebook it creates: nbgrader
    then makes its tables and asks no ``alembic heads`` process (some 3 s of CPU) for the
    revision. Any other database, or a gradebook already there, is left to nbgrader."""
    from sqlalchemy.engine import make_url

    url = make_url(db_url)
    if url.get_backend_name() != "sqlite" or url.database in (None, "", ":memory:"):
        return
    path = Path(url.database)
    if path.exists():
        return
    head = alembic_head()
    # one transaction: an interrupted stamp leaves an empty file, which nbgrader stamps itself
    with contextlib.closing(sqlite3.connect(path, isolation_level=None)) as db:
        db.execute("BEGIN")
        db.execute("CREATE TABLE alembic_version (version_num VARCHAR(32) NOT NULL)")
        db.execute("INSERT INTO alembic_version (version_num) VALUES (?)", (head,))
        db.execute("COMMIT")


def _copy_release(work: Path, names: list[str], dest: Path) -> None:
    release = Course.load_config(work).directory("release")
    dest.mkdir(parents=True, exist_ok=True)
    for name in names:
        if (dest / name).exists():
            shutil.rmtree(dest / name)
        shutil.copytree(release / name, dest / name, ignore=_IGNORE)


def generate(root: str | Path, names: Iterable[str] | None = None,
             dest: str | Path | None = None) -> Path:
    """Write the student versions of ``names`` (default: every assignment of source/) into
    ``dest`` (default: the course's release/), leaving the course's gradebook alone."""
    course = Course.load(root)
    names = course.check_assignments(list(names or []))
    dest = Path(dest) if dest is not None else course.directory("release")
    with tempfile.TemporaryDirectory(prefix="autograd-course-release-") as tmp:
        _copy_release(prepare(Path(tmp), course, names), names, dest)
    return dest


def outbound(course: Course, name: str) -> Path:
    """Where nbgrader's exchange keeps the released ``name`` of ``course``."""
    from nbgrader.exchange.default import Exchange

    root = Exchange(config=course.config).root
    return Path(root) / course.course_id / "outbound" / name


def release(course: Course, names: Iterable[str], force: bool = False
            ) -> dict[str, str]:
    """``autograd-course release``: write release/, put the assignments into the course's
    gradebook (created if needed), as ``nbgrader generate_assignment`` in the root would, and
    release them to the exchange, as ``nbgrader release_assignment`` would. Returns each
    assignment with what was done: ``"released"``, ``"released again"`` (``force``), or
    ``"kept"`` (already in the exchange: nothing was changed for it)."""
    from nbgrader.apps import NbGraderAPI

    names = course.check_assignments(list(names))
    done = {name: ("released again" if force else "kept") if outbound(course, name).exists()
            else "released" for name in names}
    todo = [name for name in names if done[name] != "kept"]
    if not todo:
        return done
    with tempfile.TemporaryDirectory(prefix="autograd-course-release-") as tmp:
        work = prepare(Path(tmp), course, todo, db_url=course.db_url)
        _copy_release(work, todo, course.directory("release"))
    config = copy.deepcopy(course.config)
    config.ExchangeReleaseAssignment.force = force
    api = NbGraderAPI(config=config)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in todo:
            result = api.release_assignment(name)
            if not result.get("success"):
                lines = (result.get("error") or result.get("log") or "").strip().splitlines()
                raise ReleaseError(f"nbgrader release_assignment {name} failed: "
                                   + (lines[-1] if lines else "no message"))
    return done
