"""around.submission: the course's grading lock and roster around each notebook nbgrader's own
Autograde reads.

The rules are the module docstring of ``preprocessors/around.py``: the lock is held for each
stage and released whatever its outcome, a second run waits and logs it, a thread holding it
does not take it again; the roster is put into the gradebook when it is new or changed, and
one that cannot be read is a warning. Plain ``nbgrader autograde`` around it all is
test_own_autograde.py's.
"""

from __future__ import annotations

import contextlib
import fcntl
import shutil
import threading
import time
import warnings
from types import SimpleNamespace

import pytest
from nbgrader.api import Gradebook
from nbgrader.coursedir import CourseDirectory
from traitlets.config import Config

from autograd_course.grading import gradebook
from autograd_course.grading.preprocessors import around

from .course import STUDENT, resources


class Log:
    """A logger that keeps its lines: (level, text)."""

    def __init__(self):
        self.lines: list[tuple[str, str]] = []

    def info(self, message, *args):
        self.lines.append(("INFO", message % args))

    def warning(self, message, *args):
        self.lines.append(("WARNING", message % args))


@pytest.fixture
def converter(tmp_path, blank_gradebook):
    """nbgrader's Autograde as :func:`around.submission` sees it: a course directory and a
    config, with a gradebook at the course root."""
    shutil.copyfile(blank_gradebook, tmp_path / "gradebook.db")
    config = Config()
    config.CourseDirectory.root = str(tmp_path)
    return SimpleNamespace(coursedir=CourseDirectory(config=config), config=config)


def locked(converter) -> bool:
    """Whether another open file (another run) would wait for the gradebook's lock."""
    path = around.course_of(converter).sqlite_path()
    with open(path.parent / f"{path.name}.lock", "a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(handle, fcntl.LOCK_UN)
        return False


def test_a_stage_of_a_submission_holds_the_lock_and_releases_it(converter):
    with around.submission(converter, "nb.ipynb", resources(), Log()):
        assert locked(converter)
    assert not locked(converter) and not around._HELD


def test_a_failing_stage_releases_the_lock(converter):
    with pytest.raises(RuntimeError), around.submission(converter, "nb.ipynb", resources(),
                                                        Log()):
        raise RuntimeError("the stage failed")
    assert not locked(converter) and not around._HELD


def test_what_is_not_a_submission_runs_without_the_lock(converter):
    for found in ({"nbgrader": {"assignment": "ps1"}}, None):
        with around.submission(converter, "nb.ipynb", found, Log()):
            assert not locked(converter)
    with around.submission(SimpleNamespace(), "nb.ipynb", resources(), Log()):
        assert not locked(converter)


def test_a_thread_that_holds_the_lock_does_not_take_it_again(converter, monkeypatch):
    taken = []

    @contextlib.contextmanager
    def exclusive(course, wait_message=None):
        taken.append(course.db_url)
        yield

    monkeypatch.setattr(gradebook, "exclusive", exclusive)
    with around.submission(converter, "nb.ipynb", resources(), Log()), around.submission(
            converter, "nb.ipynb", resources(), Log()):
        pass
    assert len(taken) == 1


def test_a_second_run_waits_for_the_lock_and_says_so(converter):
    log, entered = Log(), threading.Event()

    def second():
        with around.submission(converter, "nb.ipynb", resources(), log):
            entered.set()

    with around.submission(converter, "nb.ipynb", resources(), Log()):
        waiting = threading.Thread(target=second)
        waiting.start()
        deadline = time.monotonic() + 30
        while ("INFO", around.WAITING) not in log.lines and time.monotonic() < deadline:
            time.sleep(0.05)
        assert ("INFO", around.WAITING) in log.lines and not entered.is_set()
    waiting.join(30)
    assert entered.is_set()


def names(converter) -> dict[str, str | None]:
    with warnings.catch_warnings(), Gradebook(around.course_of(converter).db_url) as gb:
        warnings.simplefilter("ignore")
        return {s.id: s.first_name for s in gb.students}


def test_the_roster_is_put_into_the_gradebook_when_new_or_changed(converter, tmp_path):
    roster = tmp_path / "roster.csv"
    roster.write_text(f"id,first_name\n{STUDENT},Ada\n")
    log = Log()
    for _ in range(2):  # the second time: the same file, not read again
        with around.submission(converter, "nb.ipynb", resources(), log):
            assert names(converter) == {STUDENT: "Ada"}
    assert log.lines == [("INFO", "roster roster.csv: 1 students (1 new in the gradebook, 0 "
                                  "with names updated)")]
    roster.write_text(f"id,first_name\n{STUDENT},Augusta\n")
    with around.submission(converter, "nb.ipynb", resources(), log):
        pass
    assert names(converter) == {STUDENT: "Augusta"}
    assert log.lines[-1] == ("INFO", "roster roster.csv: 1 students (0 new in the gradebook, 1 "
                                     "with names updated)")


def test_a_roster_that_cannot_be_read_is_a_warning_and_grading_goes_on(converter, tmp_path):
    (tmp_path / "roster.csv").write_text("first_name\nAda\n")
    log, graded = Log(), []
    with around.submission(converter, "nb.ipynb", resources(), log):
        graded.append(True)
    ((level, line),) = log.lines
    assert graded and level == "WARNING" and "roster.csv, line 1: no column 'id'" in line
    assert line.endswith("; the students' names were not updated")
    assert names(converter) == {}
