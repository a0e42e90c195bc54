"""Shared fixtures of the test suite."""

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def root() -> Path:
    """The course root (where nbgrader_config.py lives)."""
    return ROOT
