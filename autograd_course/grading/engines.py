"""One SQLAlchemy engine per prepared gradebook in a process, for nbgrader.

nbgrader opens its gradebook anew for each of its steps (``nbgrader.api.Gradebook(db_url)``: a
new SQLAlchemy engine, its tables looked up, the course checked), a dozen times for each
submission it grades, and SQLAlchemy compiles every query again for every new engine: some
queries' compilation was a tenth of a grading worker's time. A prepared course's own gradebook
(:func:`.tasks.sqlite_url`: made for one run or one check, never the course's gradebook) is
opened with one engine per process instead (:func:`share`), which keeps its compiled queries.
nbgrader still closes each ``Gradebook`` (its connections are closed, the engine stays), and
every other gradebook, the course's included, is opened as nbgrader opens it.
"""

from __future__ import annotations

import threading

_shared: dict = {}  # URL -> its SQLAlchemy engine (None until nbgrader asks for it)
_lock = threading.Lock()


def share(url: str) -> None:
    """Let nbgrader open the gradebook ``url`` with one engine in this process."""
    import nbgrader.api

    with _lock:
        _shared.setdefault(url, None)
        nbgrader.api.create_engine = _create_engine  # nbgrader's `from sqlalchemy import`


def _create_engine(url, *args, **kw):
    """nbgrader's ``create_engine``: the shared engine of a URL given to :func:`share`,
    else a new one, as SQLAlchemy makes it."""
    import sqlalchemy

    with _lock:
        if str(url) not in _shared:
            return sqlalchemy.create_engine(url, *args, **kw)
        engine = _shared[str(url)]
        if engine is None:
            engine = _shared[str(url)] = sqlalchemy.create_engine(url, *args, **kw)
        return engine


def release(url: str) -> None:
    """Forget the shared engine of ``url`` (its gradebook is about to be removed)."""
    with _lock:
        engine = _shared.pop(url, None)
    if engine is not None:
        engine.dispose()
