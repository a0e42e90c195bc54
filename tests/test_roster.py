"""The class roster (roster.csv, nbgrader's `db student import` format): `autograd-course grade`
puts the students' names into the gradebook before it grades, so that formgrader lists them
by name; a roster it cannot read stops it before anything is graded, naming the file, the line
and the problem. And the folders that fetching and grading make at the course root are
git-ignored, the course's own are not."""

from __future__ import annotations

import csv
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from nbgrader.api import Gradebook
from support.lab import running_lab

from autograd_course.grading import roster
from autograd_course.grading.course import CourseError
from autograd_course.testkit import classes

ASSIGNMENT = "01_gradients"
#: Who submits, and what the roster says of them (carl is not on it; dora has not submitted).
CLASS = [("ada", "right"), ("blaise", "mistakes"), ("carl", "blank")]
ROSTER = ("id,first_name,last_name,email\n"
          "ada,Ada,Lovelace,ada@example.org\n"
          # an escape code and a tab: removed; markup: kept as text
          "blaise,\"Blaise\x1b[2K\t\",<b>Pascal</b>,\n"
          "dora,Dora,Markus,dora@example.org\n")
NAMES = {"ada": ("Ada", "Lovelace", "ada@example.org"),
         "blaise": ("Blaise", "<b>Pascal</b>", None),
         "dora": ("Dora", "Markus", "dora@example.org"),
         "carl": (None, None, None)}


def grade(course: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "autograd_course", "grade", ASSIGNMENT,
                           "--jobs", "2", *args], cwd=course, capture_output=True, text=True)


def names_in(course: Path) -> dict[str, tuple]:
    """Each student of ``course``'s gradebook with (first name, last name, email)."""
    with warnings.catch_warnings(), Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        warnings.simplefilter("ignore")
        return {s.id: (s.first_name, s.last_name, s.email) for s in gb.students}


def submitted_to(course: Path) -> list[str]:
    """The students whose submission of the assignment the gradebook holds."""
    with warnings.catch_warnings(), Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        warnings.simplefilter("ignore")
        return sorted(s.student.id for s in gb.find_assignment(ASSIGNMENT).submissions)


@pytest.fixture(scope="module")
def ungraded(tmp_path_factory, root) -> Path:
    """A course of 01_gradients with a class submitted and nothing graded."""
    course = classes.make_course(tmp_path_factory.mktemp("roster") / "course", root,
                                 [ASSIGNMENT])
    classes.submit_class(course, ASSIGNMENT, CLASS, seed=3)
    return course


@pytest.fixture(scope="module")
def graded(ungraded, tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess]:
    """The class graded with the roster in place."""
    course = tmp_path_factory.mktemp("roster-graded") / "course"
    shutil.copytree(ungraded, course)
    (course / roster.ROSTER_FILE).write_text(ROSTER)
    return course, grade(course)


# -- reading a roster ----------------------------------------------------------------------
def test_a_roster_is_read_as_nbgrader_reads_it(tmp_path):
    text = ("\ufeff id , first_name,last_name,email,section\r\n"  # Excel's BOM, CRLF, spaces
            "ada,Ada,,ada@example.org,A\r\n\r\n"
            '"zoe","Zoé ""Z""",van Dijk,,B\r\n')
    read = roster.parse(tmp_path / "roster.csv", text)
    assert read.students == {
        "ada": {"first_name": "Ada", "last_name": None, "email": "ada@example.org"},
        "zoe": {"first_name": 'Zoé "Z"', "last_name": "van Dijk", "email": None}}
    (warning,) = read.warnings  # a column nbgrader's Student lacks is ignored, and said so
    assert "'section'" in warning and "ignored" in warning


def test_control_characters_are_removed_from_a_roster(tmp_path):
    read = roster.parse(tmp_path / "r.csv", "id,last_name\nada,\"Love\x1b[1A\rlace\u202e\x07\"\n")
    assert read.students["ada"]["last_name"] == "Love lace"


LONG = "x" * (roster.MAX_CHARS + 1)


@pytest.mark.parametrize(("text", "line", "says"), [
    ("", 1, "empty"),
    ("first_name,last_name\nAda,Lovelace\n", 1, "no column 'id'"),
    ("id,email,email\nada,a,b\n", 1, "'email' is there twice"),
    ("id,first_name\nada,Ada\nblaise,Blaise,Pascal\n", 3, "3 fields, but the header row has 2"),
    ("id,first_name,last_name\nada,Ada\n", 2, "2 fields, but the header row has 3"),
    ("id,first_name\nada,Ada\n,Nobody\n", 3, "no student id"),
    ("id,first_name\nada,Ada\nbad/../id,Eve\n", 3, "'bad/../id' is not a student id"),
    ("id,first_name\nada,Ada\nblaise,B\nada,Again\n", 4, "also on line 2"),
    ("id,lms_user_id\nada,4821\nblaise,\nzoe,\neve,4821\n", 5,
     "the lms_user_id 4821 is also on line 2"),
    (f"id,first_name\nada,{LONG}\n", 2, f"the first_name is {len(LONG)} characters long"),
    ('id,first_name\nada,Ada\nblaise,"Blaise\nPascal\n', 3, "not valid CSV"),
    ('id,first_name\nada,"Ada\nLovelace",x\n', 2, "3 fields"),  # a row of two lines
])
def test_a_bad_roster_is_named_with_its_line_and_problem(tmp_path, text, line, says):
    path = tmp_path / "roster.csv"
    with pytest.raises(CourseError) as caught:
        roster.parse(path, text)
    assert str(caught.value).startswith(f"{path}, line {line}: "), caught.value
    assert says in str(caught.value)


def test_a_roster_that_is_not_utf8_is_named_with_its_line(tmp_path):
    path = tmp_path / "roster.csv"
    path.write_bytes("id,last_name\nada,Lovelace\nzoe,Dijk\xe9\n".encode("latin-1"))
    with pytest.raises(CourseError, match=r"roster\.csv, line 3: not UTF-8"):
        roster.parse(path, roster._text(path))


# -- grading with a roster -----------------------------------------------------------------
@pytest.mark.class_grading
def test_grading_puts_the_roster_into_the_gradebook(graded):
    course, done = graded
    assert done.returncode == 0, done.stderr[-3000:]
    assert names_in(course) == NAMES
    assert submitted_to(course) == ["ada", "blaise", "carl"]  # carl is graded all the same
    assert "roster roster.csv: 3 students (3 new in the gradebook" in done.stdout
    (warning,) = [line for line in done.stderr.splitlines() if "does not list" in line]
    assert warning.startswith("WARNING: roster.csv does not list 1 ") and warning.endswith(
        ": carl"), warning
    with open(course / "grades.csv") as f:  # nbgrader's export has the names too
        rows = {row["student_id"]: row for row in csv.DictReader(f)}
    assert (rows["ada"]["first_name"], rows["ada"]["last_name"]) == ("Ada", "Lovelace")
    assert rows["carl"]["last_name"] in ("", "None")


@pytest.mark.class_grading
def test_a_changed_roster_updates_the_names_at_the_next_run(graded, tmp_path):
    course = tmp_path / "course"
    shutil.copytree(graded[0], course)
    (course / roster.ROSTER_FILE).write_text(ROSTER.replace("Lovelace", "King") + "carl,Carl,,\n")
    done = grade(course)
    assert done.returncode == 0, done.stderr[-3000:]
    # carl is in the gradebook since he was graded: his name is an update, as ada's
    assert "roster roster.csv: 4 students (0 new in the gradebook, 2 with names updated)" in (
        done.stdout)
    assert "does not list" not in done.stderr
    assert "3 submissions were graded before and have not changed" in done.stdout
    assert names_in(course) == dict(NAMES, ada=("Ada", "King", "ada@example.org"),
                                    carl=("Carl", None, None))


@pytest.mark.class_grading
def test_a_bad_roster_stops_grading_before_anything_is_graded(ungraded, tmp_path):
    course = tmp_path / "course"
    shutil.copytree(ungraded, course)
    (course / roster.ROSTER_FILE).write_text("id,first_name\nada,Ada\nblaise,Blaise,Pascal\n")
    done = grade(course)
    assert done.returncode == 2
    # (after the start of the progress bar, which the command draws before grading starts)
    said = [line.partition("autograd-course grade: ")[2] for line in done.stderr.splitlines()
            if "autograd-course grade: " in line]
    assert said == [f"{course / roster.ROSTER_FILE}, line 3: 3 fields, but the header row "
                    "has 2"], done.stderr
    assert not any((course / "autograded").glob("*/*")) and not (course / "feedback").exists()
    assert submitted_to(course) == [] and names_in(course) == {}


@pytest.mark.class_grading
@pytest.mark.services
def test_formgrader_lists_the_students_by_name(graded, tmp_path):
    course = graded[0]
    with running_lab(course, tmp_path / "lab.log") as lab:
        students = lab.get("formgrader/api/students")
        pages = {s["id"]: lab.get(f"formgrader/api/student/{s['id']}") for s in students}
    listed = {s["id"]: (s["first_name"], s["last_name"], s["email"]) for s in students}
    assert listed == NAMES
    assert {k: (v["first_name"], v["last_name"]) for k, v in pages.items()} == {
        k: v[:2] for k, v in NAMES.items()}


# -- what git leaves out -------------------------------------------------------------------
IGNORED = ["roster.csv", "gradebook.db.lock", ".grading.lock", "01_gradients/01_gradients.ipynb",
           "10_functional/10_functional.ipynb", "05_sgd/.ipynb_checkpoints/x.ipynb"]
KEPT = ["source/01_gradients/01_gradients.ipynb", "release/01_gradients/01_gradients.ipynb",
        "notebooks/01_gradients.ipynb", "source/roster.csv", "docs/01_gradients/notes.md",
        "nbgrader_config.py"]


@pytest.mark.parametrize(("path", "ignored"), [(p, True) for p in IGNORED]
                         + [(p, False) for p in KEPT])
def test_git_ignores_what_fetching_and_grading_make_at_the_root(root, tmp_path, path, ignored):
    repo = tmp_path / "repo"
    repo.mkdir()
    git = shutil.which("git")
    assert git, "git is needed"
    subprocess.run([git, "init", "-q", str(repo)], check=True)
    shutil.copy2(root / ".gitignore", repo / ".gitignore")
    found = subprocess.run([git, "check-ignore", "--no-index", "-q", path], cwd=repo)
    assert found.returncode == (0 if ignored else 1), (path, found)
