"""Fixtures of the preprocessors' unit tests."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest
from nbgrader.api import Gradebook

from autograd_course.grading.course import tools_on_path


@pytest.fixture(scope="session")
def blank_gradebook(tmp_path_factory) -> Path:
    """An empty SQLite gradebook, made once: nbgrader runs ``alembic`` (from PATH) to make
    one, which takes seconds; tests copy it (:func:`.course.gradebook`)."""
    tools_on_path()
    path = tmp_path_factory.mktemp("blank") / "gradebook.db"
    with warnings.catch_warnings(), Gradebook(f"sqlite:///{path}"):
        warnings.simplefilter("ignore")  # SQLAlchemy's notes on nbgrader's own queries
    return path
