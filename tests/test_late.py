"""Late work as nbgrader computes it: `autograd-course grade` and plain `nbgrader autograde`
give the same gradebook for a class with a due date, under each late-penalty method.

One class of 01_gradients, with a due date and one extension: on time, late, blank and late,
no timestamp at all, late but within an extension. It is graded both ways under nbgrader's
``LateSubmissionPlugin`` methods "none" and "zero" and under a plugin class of the course's
config (half the score); the "zero" course is then graded again after the due date moves.
Every column nbgrader keeps for a submission is compared, student by student.
"""

from __future__ import annotations

import contextlib
import io
import shutil
import warnings
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from autograd_course import cli
from autograd_course.grading.course import Course
from autograd_course.testkit import classes as course

pytestmark = pytest.mark.class_grading

ASSIGNMENT = "01_gradients"
FULL = course.full_marks(Path(__file__).parent.parent / "source" / ASSIGNMENT
                         / f"{ASSIGNMENT}.ipynb")
DUE = "2026-11-30 11:00:00 UTC"  # submit() stamps 12:00 UTC: an hour late
CLASS = [("ada", "right"), ("bob", "right"), ("carl", "blank"), ("dora", "right"),
         ("eve", "right")]
EXTENSION = {"eve": timedelta(hours=2)}  # late by an hour, within her extension
ON_TIME = {"ada": "2026-11-30 10:00:00.000000 UTC"}
METHODS = {
    "none": 'c.LateSubmissionPlugin.penalty_method = "none"\n',
    "zero": 'c.LateSubmissionPlugin.penalty_method = "zero"\n',
    "half": ("\nfrom nbgrader.plugins import LateSubmissionPlugin\n\n\n"
             "class HalfOff(LateSubmissionPlugin):\n"
             "    def late_submission_penalty(self, student_id, score, total_seconds_late):\n"
             "        return score / 2\n\n\n"
             "c.AssignLatePenalties.plugin_class = HalfOff\n"),
}


def gradebook_columns(where: Path) -> dict:
    """Every column nbgrader keeps for each student's submission of the assignment."""
    rows = {}
    with Course.load(where).gradebook() as gb:
        for submission in gb.find_assignment(ASSIGNMENT).submissions:
            student = submission.student.id
            rows[student] = dict(
                timestamp=submission.timestamp, score=submission.score,
                penalty=submission.late_submission_penalty,
                seconds_late=submission.total_seconds_late,
                needs_manual_grade=submission.needs_manual_grade,
                notebooks={nb.name: nb.late_submission_penalty for nb in submission.notebooks},
                grades={(g.notebook.name, g.name): (g.auto_score, g.needs_manual_grade)
                        for nb in submission.notebooks for g in nb.grades},
                comments={(c.notebook.name, c.name): c.auto_comment
                          for nb in submission.notebooks for c in nb.comments})
    return rows


def set_due(where: Path, due: str) -> None:
    """The due date, as an instructor sets it (`nbgrader db assignment add`)."""
    done = course.nbgrader(where, "db", "assignment", "add", ASSIGNMENT, f"--duedate={due}")
    assert done.returncode == 0, done.stderr[-2000:]


@pytest.fixture(scope="module")
def base(tmp_path_factory, root):
    """The class, released, with its due date and eve's extension in the gradebook."""
    where = course.make_course(tmp_path_factory.mktemp("late") / "base", root, [ASSIGNMENT])
    course.submit_class(where, ASSIGNMENT, CLASS, seed=3)
    for student, stamp in ON_TIME.items():
        (where / "submitted" / student / ASSIGNMENT / "timestamp.txt").write_text(stamp)
    (where / "submitted" / "dora" / ASSIGNMENT / "timestamp.txt").unlink()
    set_due(where, DUE)
    with warnings.catch_warnings(), Course.load(where).gradebook() as gb:
        warnings.simplefilter("ignore")  # SQLAlchemy's notes on nbgrader's own queries
        for student, extension in EXTENSION.items():
            gb.update_or_create_student(student)
            gb.update_or_create_submission(ASSIGNMENT, student, extension=extension)
    return where


def grade(where: Path) -> tuple[int, str]:
    """`autograd-course grade` in ``where``: its exit status and what it printed."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        status = cli.main(["--course", str(where), "grade", ASSIGNMENT, "--jobs", "2"])
    return status, out.getvalue()


@pytest.fixture(scope="module", params=sorted(METHODS))
def graded(request, base, tmp_path_factory):
    """``base`` copied twice with the method's config: graded by plain nbgrader, and by
    autograd-course grade."""
    dest = tmp_path_factory.mktemp(request.param)
    plain, ours = (course.copy_course(base, dest / name, METHODS[request.param])
                   for name in ("plain", "ours"))
    for where in (plain, ours):  # the released gradebook, with the due date and extension
        shutil.copy2(base / "gradebook.db", where / "gradebook.db")
    assert course.nbgrader(plain, "autograde", ASSIGNMENT, "--force").returncode == 0
    status, out = grade(ours)
    return dict(method=request.param, plain=plain, ours=ours, status=status, out=out)


def test_every_gradebook_column_equals_plain_nbgrader(graded):
    assert graded["status"] == 0
    plain, ours = gradebook_columns(graded["plain"]), gradebook_columns(graded["ours"])
    assert sorted(ours) == sorted(s for s, _ in CLASS)
    for student in ours:
        assert ours[student] == plain[student], student
    bob, carl = ours["bob"], ours["carl"]
    assert bob["seconds_late"] == 3600 and ours["ada"]["seconds_late"] == 0
    assert ours["dora"]["timestamp"] is None and ours["eve"]["seconds_late"] == 0
    expected = {"none": 0, "zero": FULL, "half": FULL / 2}[graded["method"]]
    assert bob["score"] == FULL and bob["penalty"] == expected
    assert carl["score"] == 0 and carl["penalty"] == 0  # nothing to take from a blank one
    assert ours["ada"]["penalty"] == ours["dora"]["penalty"] == ours["eve"]["penalty"] == 0


def test_the_record_and_the_feedback_show_the_penalty(graded):
    ours = graded["ours"]
    bob = course.grade_record(ours, "bob", ASSIGNMENT)
    expected = {"none": None, "zero": FULL, "half": FULL / 2}[graded["method"]]
    assert bob.seconds_late == 3600 and bob.late_penalty == expected
    assert course.grade_record(ours, "ada", ASSIGNMENT).seconds_late == 0
    page = (ours / "feedback" / "bob" / ASSIGNMENT / f"{ASSIGNMENT}.html").read_text()
    assert ("Late submission penalty" in page) == bool(expected)  # nbgrader's template


def test_the_summary_names_the_late_submissions(graded):
    lines = [line for line in graded["out"].splitlines() if "LATE" in line]
    penalty = {"none": 0, "zero": FULL, "half": FULL / 2}[graded["method"]]
    assert f"  LATE    bob/{ASSIGNMENT}: 1 h late (3600 s), penalty {penalty:g}" in lines
    assert f"  LATE    carl/{ASSIGNMENT}: 1 h late (3600 s), penalty 0" in lines
    assert len(lines) == 2, lines  # ada on time, dora with no timestamp, eve's extension
    assert gradebook_columns(graded["ours"])["bob"]["timestamp"] == datetime(2026, 11, 30, 12)


def test_a_new_due_date_regrades_and_still_equals_plain_nbgrader(graded):
    plain, ours = graded["plain"], graded["ours"]
    before = gradebook_columns(ours)
    later = "2026-11-30 13:00:00 UTC"  # bob and carl are on time now
    for where in (plain, ours):
        set_due(where, later)
    assert course.nbgrader(plain, "autograde", ASSIGNMENT, "--force").returncode == 0
    status, out = grade(ours)
    assert status == 0 and "have not changed" not in out, "a new due date must regrade"
    after = gradebook_columns(ours)
    assert after == gradebook_columns(plain)
    assert before["bob"]["seconds_late"] == 3600 and after["bob"]["seconds_late"] == 0
    assert after["bob"]["penalty"] == 0 and after["bob"]["score"] == FULL
    # the same due date again: nothing changed, nothing is graded
    status, out = grade(ours)
    assert status == 0 and f"{len(CLASS)} submissions were graded before and have not " in out
