"""Shared fixtures of the test suite."""

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def root() -> Path:
    """The course root (where nbgrader_config.py lives)."""
    return ROOT


#: Test modules that take longest (seconds of one worker in a whole-suite run on the reference
#: 2-core machine, measured with --junitxml), started first. The Makefile runs pytest-xdist's
#: loadscope with --no-loadscope-reorder, which hands modules out in collection order (by
#: default it sorts them by their number of tests, and the one-test 264-s module went last).
SLOWEST_FIRST = ("test_grading", "test_grader_failures", "test_scale", "test_late",
                 "test_nbgrader_suite", "test_grade_class", "test_every_unit", "test_intake",
                 "test_submission_budget", "test_browser", "test_answer_catalogue",
                 "test_lab_check", "test_sent_to_kernel", "test_exchange", "test_hub",
                 "test_feedback_release", "test_prepared", "test_own_autograde",
                 "test_lessons", "test_containment", "test_nbgrader_validate", "test_roster",
                 "test_lab", "test_feedback_pages")


def pytest_collection_modifyitems(items):
    """Put the slowest modules first, each module's tests still together and in order."""
    rank = {name: i for i, name in enumerate(SLOWEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.stem, len(rank)))
