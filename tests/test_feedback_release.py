"""A term's release and feedback with hand-placed submissions: `autograd-course release` releases
only what it names, to the exchange; `nbgrader release_feedback` works for submissions that never
came through the exchange; manual grades and comments reach exactly the pages they change, by
`autograd-course feedback` and by `grade`; nbgrader's generate_feedback warns of no option."""

from __future__ import annotations

import csv
import os
import subprocess
import sys
import warnings
from pathlib import Path

import nbformat
import pytest
from nbgrader.utils import notebook_hash

from autograd_course.grading import feedback
from autograd_course.grading.course import Course
from autograd_course.testkit import classes

pytestmark = pytest.mark.class_grading

ASSIGNMENT = "01_gradients"


def run(cwd: Path, exchange: Path, *args: str, nbgrader: bool = False):
    env = dict(os.environ, AUTOGRAD_COURSE_EXCHANGE=str(exchange),
               PATH=os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]]))
    module = "nbgrader" if nbgrader else "autograd_course"
    return subprocess.run([sys.executable, "-m", module, *args], cwd=cwd, env=env,
                          capture_output=True, text=True)


def page(course: Path, student: str) -> Path:
    return course / "feedback" / student / ASSIGNMENT / f"{ASSIGNMENT}.html"


def set_manual(course: Path, student: str, score: float | None, comment: str) -> None:
    """What formgrader does when a grader types a score and a comment."""
    with warnings.catch_warnings(), Course.load(course).gradebook() as gb:
        warnings.simplefilter("ignore")
        notebook = gb.find_submission_notebook(ASSIGNMENT, ASSIGNMENT, student)
        if score is not None:
            grade = sorted(notebook.grades, key=lambda g: g.name)[0]
            grade.manual_score = score
        sorted(notebook.comments, key=lambda c: c.name)[0].manual_comment = comment
        gb.db.commit()


@pytest.fixture(scope="module")
def term(tmp_path_factory, root):
    base = tmp_path_factory.mktemp("term")
    course, exchange = base / "course", base / "exchange"
    course.mkdir()
    exchange.mkdir()
    (course / "nbgrader_config.py").write_text((root / "nbgrader_config.py").read_text())
    (course / "source").symlink_to(root / "source")
    seen = {"bare": run(course, exchange, "release"),
            "first": run(course, exchange, "release", ASSIGNMENT)}
    seen["again"] = run(course, exchange, "release", ASSIGNMENT)
    seen["forced"] = run(course, exchange, "release", ASSIGNMENT, "--force")
    source = root / "source" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    released = course / "release" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    for student, answers in (("ada", classes.reference_answers(source)), ("blaise", {})):
        folder = course / "submitted" / student / ASSIGNMENT  # by hand: no timestamp, no secret
        folder.mkdir(parents=True)
        nbformat.write(classes.fill(released, answers), folder / f"{ASSIGNMENT}.ipynb")
    seen["graded"] = run(course, exchange, "grade", ASSIGNMENT, "--jobs", "2")
    assert seen["graded"].returncode == 0, seen["graded"].stderr[-3000:]
    return dict(course=course, exchange=exchange, seen=seen)


def test_release_releases_only_what_it_names(term):
    seen, course, exchange = term["seen"], term["course"], term["exchange"]
    assert seen["bare"].returncode == 2 and "--all" in seen["bare"].stderr
    assert seen["first"].returncode == 0, seen["first"].stderr[-2000:]
    assert f"released {ASSIGNMENT}" in seen["first"].stdout
    outbound = exchange / "autograd-course" / "outbound"
    assert sorted(p.name for p in outbound.iterdir()) == [ASSIGNMENT]
    assert (outbound / ASSIGNMENT / f"{ASSIGNMENT}.ipynb").read_bytes() == (
        course / "release" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb").read_bytes()
    assert "already released" in seen["again"].stdout and seen["again"].returncode == 0
    assert f"released again {ASSIGNMENT}" in seen["forced"].stdout
    with warnings.catch_warnings(), Course.load(course).gradebook() as gb:
        warnings.simplefilter("ignore")
        assert [a.name for a in gb.assignments] == [ASSIGNMENT]
    with open(course / "grades.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert {row["assignment"] for row in rows} == {ASSIGNMENT}
    assert {row["student_id"]: float(row["score"]) for row in rows} == {"ada": 7.0,
                                                                        "blaise": 0.0}
    assert "made again" not in seen["graded"].stdout  # the workers' pages are up to date


def test_feedback_of_hand_placed_submissions_is_released(term):
    course, exchange = term["course"], term["exchange"]
    secret = Course.load(course).secret()
    for student in ("ada", "blaise"):
        folder = course / "feedback" / student / ASSIGNMENT
        assert (folder / "submission_secret.txt").read_text() == feedback.made_secret(
            secret, student, ASSIGNMENT)
        assert (folder / "timestamp.txt").read_text().endswith(" UTC")
    done = run(course, exchange, "release_feedback", ASSIGNMENT, nbgrader=True)
    assert done.returncode == 0, done.stderr[-2000:]
    released = exchange / "autograd-course" / "feedback"
    for student in ("ada", "blaise"):
        name = notebook_hash(secret=feedback.made_secret(secret, student, ASSIGNMENT),
                             notebook_id=ASSIGNMENT)
        assert (released / f"{name}.html").read_bytes() == page(course, student).read_bytes()


def test_manual_grades_reach_exactly_the_pages_they_change(term):
    course, exchange = term["course"], term["exchange"]
    ada_before = page(course, "ada").stat().st_mtime_ns, page(course, "ada").read_bytes()
    assert "(Score: 0.0 / 7.0)" in page(course, "blaise").read_text()
    set_manual(course, "blaise", 1.5, "See me about <b>partials</b>")
    done = run(course, exchange, "feedback")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "for 1 submissions" in done.stdout and "blaise/01_gradients" in done.stdout
    shown = page(course, "blaise").read_text()
    assert "(Score: 1.5 / 7.0)" in shown
    assert "See me about &lt;b&gt;partials&lt;/b&gt;" in shown  # as text
    assert (page(course, "ada").stat().st_mtime_ns, page(course, "ada").read_bytes()) == (
        ada_before)
    again = run(course, exchange, "feedback")
    assert "made again" not in again.stdout and again.returncode == 0
    # grade itself notices: ada's submission is unchanged (skipped), her comment is new
    set_manual(course, "ada", None, "Well argued.")
    graded = run(course, exchange, "grade", ASSIGNMENT, "--jobs", "1")
    assert graded.returncode == 0, graded.stderr[-2000:]
    assert "graded before and have not changed" in graded.stdout
    assert "for 1 submissions" in graded.stdout and "ada/01_gradients" in graded.stdout
    assert "Well argued." in page(course, "ada").read_text()


def test_nbgrader_generate_feedback_warns_of_no_option(term):
    done = run(term["course"], term["exchange"], "generate_feedback", ASSIGNMENT, "--force",
               nbgrader=True)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "not recognized" not in done.stdout + done.stderr, done.stderr[-2000:]
    for student in ("ada", "blaise"):  # formgrader's button, then its Release, work too
        folder = term["course"] / "feedback" / student / ASSIGNMENT
        assert {"submission_secret.txt", "timestamp.txt", f"{ASSIGNMENT}.html"} <= {
            p.name for p in folder.iterdir()}
