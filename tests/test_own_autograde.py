"""nbgrader's own Autograde under the course's config (plain `nbgrader autograde`, and
formgrader's *Autograde*: `NbGraderAPI.autograde`, run as formgrader runs it) does around each
submission what `autograd-course grade` does: an honest submission gives no checksum warning,
a locked cell a student edited is still caught and restored; formgrader's log holds INFO
lines, not DEBUG ones with the sandbox's command line; the roster's names reach the gradebook;
the course's grading lock, held by another run, makes it wait; and a flagged question says
why it needs a person, in its comment and in its test cell's output, in lines formgrader
shows whole."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import nbformat
import pytest
from nbgrader.api import Gradebook
from support import autograde_api
from support.toy import make_class

from autograd_course.grading import gradebook
from autograd_course.grading.course import Course
from autograd_course.grading.preprocessors import around, inert, results
from autograd_course.testkit import classes

pytestmark = pytest.mark.class_grading

STUDENTS = ["right", "edited_locked", "attack_frames"]
ROSTER = ("id,first_name,last_name\n"
          "right,Ada,Lovelace\n"
          'attack_frames,"Smith, Jr.",Pascal\n')
#: nbgrader's warning for a locked cell whose source is not the one it keeps.
CHECKSUM = re.compile(r"Attribute 'checksum' for cell (\w+) has changed")


@pytest.fixture(scope="module")
def course(tmp_path_factory, root) -> Path:
    base = make_class(tmp_path_factory.mktemp("own-autograde") / "course", root, STUDENTS)
    (base / "roster.csv").write_text(ROSTER)
    return base


def gradebook_of(course: Path) -> Gradebook:
    warnings.simplefilter("ignore")
    return Gradebook(f"sqlite:///{course / 'gradebook.db'}")


def test_an_honest_submission_gives_no_checksum_warning(course):
    done = classes.nbgrader(course, "autograde", "toy", "--student", "right", "--force")
    assert done.returncode == 0, done.stderr[-3000:]
    assert CHECKSUM.findall(done.stderr) == [], done.stderr[-3000:]
    assert "Autograding" in done.stderr  # the log was read
    with gradebook_of(course) as gb:
        assert gb.find_submission("toy", "right").score == 4


def test_an_edited_locked_cell_is_still_caught_and_restored(course):
    done = classes.nbgrader(course, "autograde", "toy", "--student", "edited_locked", "--force")
    assert done.returncode == 0, done.stderr[-3000:]
    assert CHECKSUM.findall(done.stderr) == ["q2_test"]
    with gradebook_of(course) as gb:  # q2's own test ran, not the student's `pass`
        assert gb.find_submission("toy", "edited_locked").score == 3
    record = classes.grade_record(course, "edited_locked", "toy")
    assert any("was edited" in note for note in record.notes), record.notes


@pytest.fixture(scope="module")
def formgraded(course) -> dict:
    """formgrader's Autograde of the flagged student, as formgrader runs it."""
    answer = autograde_api.autograde(course, "toy", "attack_frames")
    assert answer["success"], answer
    return answer


def test_formgrader_shows_info_lines_not_the_sandbox_command(formgraded):
    log = formgraded["log"]
    assert "[INFO] Autograding" in log and "[INFO] Sanitizing" in log, log
    assert "[DEBUG]" not in log and "bwrap" not in log, log
    assert "FLAGGED attack_frames/toy/toy" in log  # its warnings stay


def test_formgrader_autograde_applies_the_roster(course, formgraded):
    with gradebook_of(course) as gb:
        names = {s.id: (s.first_name, s.last_name) for s in gb.students}
    assert names["attack_frames"] == ("Smith, Jr.", "Pascal")
    assert names["right"] == ("Ada", "Lovelace")  # the whole roster, as grade puts it
    assert "roster roster.csv: 2 students" in formgraded["log"]


def test_a_flagged_question_says_why_in_its_comment(course, formgraded):
    with gradebook_of(course) as gb:
        notebook = gb.find_submission_notebook("toy", "toy", "attack_frames")
        comments = {c.name: c.auto_comment for c in notebook.comments}
        needs = {g.name: g.needs_manual_grade for g in notebook.grades}
    assert needs == {"q1_test": False, "q2_test": True, "q3_test": False}
    assert comments["q2"].startswith(
        results.MANUAL_LOOK + "the code scan flagged q2, line 6: calls sys._getframe;"), comments
    assert "CheckError: triple(random x) has the wrong values" in comments["q2"]
    assert results.MANUAL_LOOK not in comments["q1"] + comments["q3"]


def test_test_verdicts_are_lines_formgrader_shows_whole(course, formgraded):
    graded = nbformat.read(course / "autograded" / "attack_frames" / "toy" / "toy.ipynb", 4)
    verdicts = {c.metadata.nbgrader.grade_id: c.outputs for c in graded.cells
                if c.metadata.get("nbgrader", {}).get("grade_id", "").endswith("_test")}
    shown = " ".join(verdicts["q2_test"][0].text.split())
    assert shown.startswith(results.MANUAL_LOOK + "the code scan flagged q2"), shown
    for outputs in verdicts.values():
        for output in outputs:
            text = output.get("text") or "\n".join(output.get("traceback", []))
            assert max(map(len, text.splitlines())) <= inert.VERDICT_WIDTH, text
    q1 = verdicts["q1_test"][0]  # the message itself stays whole for the record
    assert q1.evalue.startswith("square_grad(ones) has the wrong sign") and "\n" not in q1.evalue


def test_a_held_grading_lock_makes_formgrader_autograde_wait(course):
    with gradebook.exclusive(Course.load(course)):
        process = autograde_api.start(course, "toy", "right")
        for line in process.stderr:  # the log as the server's console shows it, as it comes
            if around.WAITING in line:
                break
        else:
            pytest.fail("formgrader's Autograde never waited for the lock")
        assert process.poll() is None  # it cannot go on while the lock is held
        assert not (course / "autograded" / "right" / "toy" / "toy.ipynb").exists()
    answer = autograde_api.answer(process)
    assert answer["success"], answer
    assert answer["log"].index(around.WAITING) < answer["log"].index("[INFO] Autograding")
