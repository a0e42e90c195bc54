"""nbgrader's exchange loop on one machine, end to end, as nbgrader's documentation runs it.

The instructor releases 01_gradients to an exchange folder (`autograd-course release`); two
students, each with an identity of their own, fetch it into their home folders and submit their
work; the instructor collects, adds a third student's submission by hand (as docs/instructors.md
describes: no exchange, no submission_secret.txt), grades with `autograd-course grade`,
generates and releases feedback for the whole class at once; each student who submitted
through the exchange fetches their own, as before. nbgrader takes a student's identity from
the OS account (from JUPYTERHUB_USER when that account is JupyterHub's `jovyan`), or from
`--student=ID`; here each student's commands carry their identity with `--student=ID`, since
this machine's Python cannot be run by another OS account, and run with a home folder of their
own (HOME), where nbgrader keeps the student's copy of what they submitted and which
`fetch_feedback` reads: with a shared home, each student would fetch every student's feedback.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from autograd_course.testkit import classes

pytestmark = pytest.mark.services

ASSIGNMENT = "01_gradients"
COURSE = "autograd-course"


def run(args: list[str], cwd: Path, exchange: Path, user: str | None = None):
    env = dict(os.environ, AUTOGRAD_COURSE_EXCHANGE=str(exchange),
               PATH=os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]]))
    if user:  # a student, in their own home (nbgrader caches their submissions there)
        env["HOME"] = str(cwd)
    done = subprocess.run([sys.executable, "-m", *args], cwd=cwd, env=env, capture_output=True,
                          text=True)
    assert done.returncode == 0, (args, done.stdout[-1500:], done.stderr[-2500:])
    return done


def nbgrader(cwd, exchange, *args, user=None, course=False):
    extra = [f"--Exchange.root={exchange}", f"--course={COURSE}"] if course else []
    if user:
        extra.append(f"--student={user}")
    return run(["nbgrader", *args, *extra], cwd, exchange, user)


@pytest.fixture(scope="module")
def loop(tmp_path_factory, root):
    base = tmp_path_factory.mktemp("exchange")
    exchange, course = base / "exchange", base / "course"
    exchange.mkdir()
    for name in ("nbgrader_config.py",):
        (course / name).parent.mkdir(parents=True, exist_ok=True)
        (course / name).write_text((root / name).read_text())
    (course / "source").symlink_to(root / "source")
    run(["autograd_course", "release", ASSIGNMENT], course, exchange)  # to the exchange too
    answers = {"ada": classes.reference_answers(root / "source" / ASSIGNMENT
                                                / f"{ASSIGNMENT}.ipynb"),
               "blaise": {"q1_partials": "def partials(f, x, y):\n    return -y, -x"}}
    homes = {}
    for student, chosen in answers.items():
        home = base / f"home-{student}"
        home.mkdir()
        nbgrader(home, exchange, "fetch_assignment", ASSIGNMENT, user=student, course=True)
        path = home / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
        nbformat.write(classes.fill(path, chosen), path)
        nbgrader(home, exchange, "submit", ASSIGNMENT, user=student, course=True)
        homes[student] = home
    nbgrader(course, exchange, "collect", ASSIGNMENT)
    by_hand = course / "submitted" / "carl" / ASSIGNMENT
    by_hand.mkdir(parents=True)
    nbformat.write(classes.fill(course / "release" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", {}),
                   by_hand / f"{ASSIGNMENT}.ipynb")
    graded = run(["autograd_course", "grade", ASSIGNMENT, "--jobs", "2"], course, exchange)
    nbgrader(course, exchange, "generate_feedback", ASSIGNMENT, "--force")
    released = nbgrader(course, exchange, "release_feedback", ASSIGNMENT)  # all at once
    for student, home in homes.items():
        nbgrader(home, exchange, "fetch_feedback", ASSIGNMENT, user=student, course=True)
    return dict(course=course, homes=homes, graded=graded, released=released,
                exchange=exchange)


def test_collected_submissions_are_graded(loop):
    assert sorted(p.name for p in (loop["course"] / "submitted").iterdir()) == [
        "ada", "blaise", "carl"]
    assert "3 submissions graded" in loop["graded"].stdout
    assert classes.gradebook_scores(loop["course"], ASSIGNMENT) == {"ada": 7.0, "blaise": 0.0,
                                                                    "carl": 0.0}


def test_feedback_is_released_for_the_whole_class(loop):
    log = loop["released"].stdout + loop["released"].stderr
    for student in ("ada", "blaise", "carl"):
        assert f"Releasing feedback for student '{student}'" in log
    assert len(list((loop["exchange"] / COURSE / "feedback").glob("*.html"))) == 3
    for student in ("ada", "blaise"):  # the exchange's own secret, kept
        secret = loop["course"] / "feedback" / student / ASSIGNMENT / "submission_secret.txt"
        submitted = loop["course"] / "submitted" / student / ASSIGNMENT / secret.name
        assert secret.read_bytes() == submitted.read_bytes()


def test_each_student_fetches_only_their_own_feedback(loop):
    pages = {student: sorted(home.glob(f"{ASSIGNMENT}/feedback/*/{ASSIGNMENT}.html"))
             for student, home in loop["homes"].items()}
    assert all(len(found) == 1 for found in pages.values()), pages
    ada, blaise = (pages[s][0].read_text() for s in ("ada", "blaise"))
    assert "All tests passed." in ada and "wrong sign" not in ada
    assert "wrong sign" in blaise and "NotAnswered" in blaise
    for page in (ada, blaise):
        assert "BEGIN HIDDEN TESTS" not in page
