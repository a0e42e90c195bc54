"""Shared fixtures of the test suite."""

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def root() -> Path:
    """The course root (where nbgrader_config.py lives)."""
    return ROOT


#: Test modules that take longest (seconds of one worker in a whole-suite run on the reference
#: 2-core machine, measured with --junitxml), started first: pytest-xdist's loadscope hands out
#: modules in collection order, and a long module started last would run alone at the end.
SLOWEST_FIRST = ("test_grading", "test_grader_failures", "test_scale", "test_late",
                 "test_nbgrader_suite", "test_grade_class", "test_every_unit", "test_intake",
                 "test_submission_budget", "test_browser", "test_answer_catalogue",
                 "test_lab_check", "test_sent_to_kernel", "test_exchange", "test_hub",
                 "test_feedback_release", "test_prepared")


def pytest_collection_modifyitems(items):
    """Put the slowest modules first, each module's tests still together and in order."""
    rank = {name: i for i, name in enumerate(SLOWEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.stem, len(rank)))
