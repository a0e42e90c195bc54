"""The hidden-test check from inside JupyterLab: the last cell of an assignment, in Chromium.

A course with a grader secret (the test kit's ``make_course``) is served by a real JupyterLab
as `make lab` serves it; the instructor releases 01_gradients to the course's exchange, and
the Assignment List's own endpoint fetches it to ``<root>/01_gradients/``, where a learner's
copy lives. The server keeps the course's warm check (autograd_course/warmcheck.py), which
the cell and the command ask. The notebook of release/ gets an answer that the hidden tests
catch (right on the visible example only), the fetched one the reference answers. Headless
Chromium opens each, selects the check cell and runs it with Shift+Enter; the report it
prints after its first line (which file, saved when) must be, line for line, what
`autograd-course check` prints for the same saved file.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest
from support.browser import CHROMIUM, chromium
from support.lab import TOKEN, lab_check, running_lab

from autograd_course import warmcheck
from autograd_course.lab import selfstudy
from autograd_course.testkit import WRONG_ANSWERS, classes

pytestmark = [pytest.mark.lab_check, pytest.mark.services]

ASSIGNMENT = "01_gradients"
COURSE_ID = "autograd-course"
WRONG = "q2_leaf_and_grad_fn"
#: Where each notebook lies in the course: one of release/, and the Assignment List's copy.
PLACES = {"release": f"release/{ASSIGNMENT}/{ASSIGNMENT}.ipynb",
          "fetched": f"{ASSIGNMENT}/{ASSIGNMENT}.ipynb"}
#: The lines of a report that say a result: each question's, the total.
RESULT = re.compile(r"^\s*(PASS|FAIL) \S+: |^\s*total: ")


def results(text: str) -> list[str]:
    """The result lines of a report, without their indentation."""
    return [line.strip() for line in text.splitlines() if RESULT.match(line)]


def split_student_id(lines: list[str]) -> tuple[str, list[str]]:
    """The report's student-id entry (its lines joined), and its other lines."""
    at = next(i for i, line in enumerate(lines) if line.startswith("  student id: "))
    end = next((i for i in range(at + 1, len(lines)) if not lines[i].startswith("      ")),
               len(lines))
    return " ".join(line.strip() for line in lines[at:end]), lines[:at] + lines[end:]


def wrong_answer():
    """An answer to question 2 that passes its visible checks and fails the hidden tests."""
    return next(w for w in WRONG_ANSWERS[ASSIGNMENT, WRONG] if w.hidden_only == "hard-coded")


def cli_check(course: Path, place: str) -> tuple[str, float]:
    """What `autograd-course check` prints for the notebook at ``place``, and its seconds."""
    start = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "autograd_course", "check", place], cwd=course,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout, time.monotonic() - start


@pytest.fixture(scope="module")
def course(tmp_path_factory, root):
    """A course with its secret, 01_gradients released to its exchange."""
    course = classes.make_course(tmp_path_factory.mktemp("lab_check") / "course", root,
                                 [ASSIGNMENT])
    released = classes.nbgrader(course, "release_assignment", ASSIGNMENT)
    assert released.returncode == 0, released.stderr[-2000:]
    return course


@pytest.fixture(scope="module")
def checked(course):
    """Each place's report, in JupyterLab and from the command line, with their seconds:
    {place: {"lab": (text, s), "cli": (text, s)}}."""
    assert Path(CHROMIUM).exists() and shutil.which("chromium"), (
        "Debian's chromium is required: `make test` installs it when run as root")
    source = course / "source" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    right = classes.reference_answers(source)
    seen = {place: {} for place in PLACES}
    with running_lab(course, course.parent / "lab.log") as lab:
        fetched = lab.ask("assignments/fetch", "POST",
                          {"course_id": COURSE_ID, "assignment_id": ASSIGNMENT})
        assert fetched["success"], fetched
        answers = {"release": right | {WRONG: wrong_answer().code}, "fetched": right}
        for place, chosen in answers.items():
            path = course / PLACES[place]
            assert path.is_file(), place  # the Assignment List fetched it there
            nbformat.write(classes.fill(path, chosen), path)
        seen["release"]["cli"] = cli_check(course, PLACES["release"])  # prepares the check
        with chromium() as browser:
            browser.visit(f"{lab.base}/api/status?token={TOKEN}", settle_ms=0)  # the login
            for place in PLACES:
                text, (took,) = lab_check(browser, lab, PLACES[place],
                                          course.parent / f"lab_check-{place}.png")
                seen[place]["lab"] = (text, took)
        seen["fetched"]["cli"] = cli_check(course, PLACES["fetched"])
        answered_warm = warmcheck.Service(course).answered()
    for place, said in seen.items():
        print(f"\n{place}: in JupyterLab {said['lab'][1]:.1f} s (key to total), "
              f"autograd-course check {said['cli'][1]:.1f} s; screenshot "
              f"{course.parent / f'lab_check-{place}.png'}")
    return seen | {"answered warm": answered_warm}


def test_jupyterlabs_warm_check_answered_the_cell_and_the_command(checked):
    # the server started the course's warm check (autograd_course/warmcheck.py); the cell and
    # `autograd-course check` asked it, each place twice
    assert checked["answered warm"] == 2 * len(PLACES)


@pytest.mark.parametrize("place", PLACES)
def test_the_check_cell_prints_what_the_command_prints(checked, place):
    lab, cli = checked[place]["lab"][0], checked[place]["cli"][0]
    assert len(results(cli)) == 5, cli  # four questions and the total
    assert results(lab) == results(cli), (lab, cli)
    # all of it, after the cell's own first line (which file, saved when), but where the
    # student id came from: in the notebook, the learner gives no --student
    in_lab, lab_lines = split_student_id(lab.strip().splitlines()[1:])
    in_terminal, cli_lines = split_student_id(cli.strip().splitlines())
    assert lab_lines == cli_lines, (lab, cli)
    assert in_lab.split("(")[0] == in_terminal.split("(")[0], (in_lab, in_terminal)
    assert "--student" in in_terminal and "--student" not in in_lab, in_lab


@pytest.mark.parametrize("place", PLACES)
def test_the_check_cell_names_the_saved_file_it_checked(checked, course, place):
    first = checked[place]["lab"][0].splitlines()[0]
    assert first.startswith(f"Checking {course / PLACES[place]} as saved at "), first
    assert selfstudy.NOT_HERE not in checked[place]["lab"][0]


def test_the_hidden_tests_catch_what_the_visible_checks_pass(checked):
    report = results(checked["release"]["lab"][0])
    assert [line.split()[0] for line in report[:4]] == ["PASS", "FAIL", "PASS", "PASS"], report
    assert report[1].startswith(f"FAIL {WRONG}_test: 0/2"), report
    assert report[-1] == "total: 5/7", report
    fetched = results(checked["fetched"]["lab"][0])
    assert all(line.startswith("PASS") for line in fetched[:4]) and fetched[-1] == "total: 7/7"


def test_grading_runs_the_check_cell_as_a_cell_that_does_nothing(course):
    # the cell runs in every grading kernel (sandboxed: autograd_course.lab.selfstudy is not
    # there) and in the judge: it must neither fail nor start a check
    source = course / "source" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    notebook = classes.fill(course / PLACES["release"], classes.reference_answers(source))
    classes.submit(course, "ada", ASSIGNMENT, ASSIGNMENT, notebook)
    done = subprocess.run([sys.executable, "-m", "autograd_course", "grade", ASSIGNMENT,
                           "--jobs", "1"], cwd=course, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    graded = nbformat.read(course / "autograded" / "ada" / ASSIGNMENT
                           / f"{ASSIGNMENT}.ipynb", as_version=4)
    cell = next(c for c in graded.cells
                if c.metadata.get("nbgrader", {}).get("grade_id") == "check_notebook")
    assert cell.outputs == [], cell.outputs
    assert classes.grade_record(course, "ada", ASSIGNMENT).score == 7


def test_outside_jupyterlab_one_line_names_the_terminal_command(capsys, tmp_path):
    selfstudy.check_saved_notebook(ASSIGNMENT, environ={})
    # a grading or validating run, whatever the environment says of a session
    selfstudy.check_saved_notebook(ASSIGNMENT, environ={
        "NBGRADER_EXECUTION": "validate", selfstudy.SESSION: str(tmp_path / "x.ipynb")})
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2 and lines[0] == lines[1], lines
    assert lines[0].startswith(selfstudy.ELSEWHERE)
    assert f"autograd-course check release/{ASSIGNMENT}/{ASSIGNMENT}.ipynb" in lines[0]


def test_without_the_course_it_says_the_hidden_tests_are_not_here(capsys, tmp_path, monkeypatch):
    # a student's home on a course server: the notebook, no nbgrader_config.py or source/
    folder = tmp_path / ASSIGNMENT
    folder.mkdir()
    (folder / f"{ASSIGNMENT}.ipynb").write_text("{}")
    monkeypatch.chdir(folder)
    selfstudy.check_saved_notebook(ASSIGNMENT, environ={
        selfstudy.SESSION: f"{ASSIGNMENT}/{ASSIGNMENT}.ipynb"})  # relative to the server root
    said = capsys.readouterr().out
    assert said.startswith(selfstudy.NOT_HERE) and "Assignment List" in said, said
    assert said.count("\n") == 1


def test_a_session_name_relative_to_the_server_root_is_found(course, monkeypatch):
    folder = course / "release" / ASSIGNMENT
    monkeypatch.chdir(folder)
    found = selfstudy.session_notebook({selfstudy.SESSION: PLACES["release"]}, folder)
    assert found == (course / PLACES["release"]).resolve()
    assert selfstudy.course_root(found.parent) == course
