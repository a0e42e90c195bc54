"""autograd-course, the command: its parser, messages, zips it refuses, progress and Ctrl-C,
and what its start-up imports (a grade run with nothing to do: grading/idle.py)."""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
import subprocess
import sys
import textwrap
import time
import warnings
import zipfile
from pathlib import Path

import pytest
from support.commands import ASSIGNMENT, run

from autograd_course import cli
from autograd_course.grading import gradebook, idle, runner, tasks
from autograd_course.grading.course import Course, Submission
from autograd_course.grading.release import generate
from autograd_course.lab import selfstudy


def test_help_lists_every_command():
    result = run("--help")
    assert result.returncode == 0
    assert "usage: autograd-course" in result.stdout
    for command in ("release", "grade", "start", "check", "validate", "demo", "feedback",
                    "export"):
        assert command in result.stdout


def documented_commands(root: Path) -> list[str]:
    """Every ``autograd-course ...`` command line in the README's and docs' code blocks."""
    found = []
    for page in [root / "README.md", *sorted((root / "docs").glob("*.md"))]:
        in_block = False
        for line in page.read_text().splitlines():
            if line.startswith("```"):
                in_block = not in_block
                continue
            command = line.split("#")[0].split("&&")[0].strip()
            if in_block and command.startswith("autograd-course "):
                found.append(command)
    return found


def test_every_documented_command_is_one_the_parser_takes(root):
    commands = documented_commands(root)
    assert len(commands) >= 9 and any("--layout canvas" in c for c in commands)
    parser = cli.build_parser()
    for command in commands:
        try:
            parser.parse_args(command.split()[1:])
        except SystemExit:
            pytest.fail(f"a documented command is not one autograd-course takes: {command}")


@pytest.mark.parametrize(("args", "says"), [
    (["grade", "no_such_unit"], "no assignment 'no_such_unit'"),
    (["grade", "--jobs", "0"], "--jobs must be at least 1"),
    (["check", "missing.ipynb"], "missing.ipynb: no such file"),
    (["grade", "--require-sandbox", "--jobs", "0"], "--jobs must be at least 1"),
    (["check", "README.md"], "not a notebook"),
    (["--course", "/", "release"], "is not a course root"),
    (["grade", "--zip", "README.md"], "is not a zip file"),
])
def test_bad_arguments_get_one_clear_line(root, args, says):
    result = run(*args, cwd=root)
    assert result.returncode == 2
    assert says in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert "Traceback" not in result.stderr


def test_grade_without_submissions_says_where_it_looked(tmp_path, root):
    shutil.copy2(root / "nbgrader_config.py", tmp_path)
    shutil.copytree(root / "source" / ASSIGNMENT, tmp_path / "source" / ASSIGNMENT)
    result = run("grade", ASSIGNMENT, cwd=tmp_path)
    assert result.returncode == 2
    assert "no submissions under" in result.stderr and "submitted/STUDENT/ASSIGNMENT" in (
        result.stderr)


@pytest.mark.parametrize(("member", "says"), [
    ("/etc/evil/a/b.ipynb", "unsafe path"),
    ("ada/01_gradients/../../../../evil.ipynb", "unsafe path"),
    ("C:/evil/a/b.ipynb", "unsafe path"),
    ("ada/01_gradients/link.ipynb", "is a link"),
    ("ada/01_gradients/bomb.bin", "more than the limit"),  # 20 MB of zeros in 20 kB
    ("bob/01_gradients/./01_gradients.ipynb", "name the same file"),
    ("BOB/01_gradients/01_gradients.ipynb", "name the same file"),
    ("<img src=x>/01_gradients/01_gradients.ipynb", "is not a student id"),
])
def test_zip_members_that_leave_submitted_are_refused(tmp_path, root, member, says):
    shutil.copy2(root / "nbgrader_config.py", tmp_path)
    shutil.copytree(root / "source" / ASSIGNMENT, tmp_path / "source" / ASSIGNMENT)
    archive = tmp_path / "class.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("bob/01_gradients/01_gradients.ipynb", "{}")
        info = zipfile.ZipInfo(member)
        if says == "is a link":
            info.external_attr = (0o120777 << 16)
            zf.writestr(info, "/etc/passwd")
        elif member.endswith("bomb.bin"):
            zf.writestr(info, bytes(20 * 10**6), compress_type=zipfile.ZIP_DEFLATED)
        else:
            zf.writestr(info, "{}")
    def files():  # all but exchange/, which loading the course's config makes
        return {p for p in tmp_path.parent.rglob("*") if "exchange" not in p.parts}

    before = files()
    result = run("grade", "--zip", str(archive), cwd=tmp_path)
    assert result.returncode == 2 and says in result.stderr and member in result.stderr
    assert files() == before, "nothing may be written"


def test_find_submissions_filters_students(tmp_path):
    for student in ("a", "b"):
        (tmp_path / "submitted" / student / ASSIGNMENT).mkdir(parents=True)
    shutil.copy2(Path(__file__).parent.parent / "nbgrader_config.py", tmp_path)
    (tmp_path / "source").mkdir()
    found = Course.load(tmp_path).submissions([ASSIGNMENT], ["b"])
    assert found == [Submission("b", ASSIGNMENT)]


def test_generating_release_leaves_the_gradebook_alone(tmp_path, root):
    shutil.copy2(root / "nbgrader_config.py", tmp_path)
    shutil.copytree(root / "source" / ASSIGNMENT, tmp_path / "source" / ASSIGNMENT)
    generate(tmp_path, [ASSIGNMENT], dest=tmp_path / "out")
    assert (tmp_path / "out" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb").is_file()
    assert not list(tmp_path.glob("gradebook.db*"))
    released = run("release", ASSIGNMENT, cwd=tmp_path)  # as the README says: with gradebook
    assert released.returncode == 0, released.stderr[-2000:]
    assert (tmp_path / "gradebook.db").is_file()
    assert (tmp_path / "release" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb").read_bytes() == (
        tmp_path / "out" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb").read_bytes()


def test_no_gradebook_or_student_data_is_committed(root):
    tracked = subprocess.run(["git", "ls-files"], cwd=root, capture_output=True, text=True,
                             check=True).stdout.split()
    assert "nbgrader_config.py" in tracked, "not a git checkout"
    student_data = ["gradebook.db", "grades.csv", ".grader-secret", "submitted/ada/a/a.ipynb",
                    "autograded/ada/a/a.ipynb", "feedback/ada/a/a.html", "reports/a/report.csv",
                    "exchange/autograd-course/inbound/x", ".autograd-course-cache/a/x"]
    for path in student_data:
        top = path.split("/")[0]
        assert not [f for f in tracked if f == path or f.startswith(f"{top}/")
                    and not f.endswith(".gitkeep")], f"{top} is committed"
        ignored = subprocess.run(["git", "check-ignore", "-q", path], cwd=root)
        assert ignored.returncode == 0, f"{path} is not git-ignored"


def test_start_copies_an_assignment_into_work_and_never_replaces_a_copy(tmp_path, root):
    shutil.copy2(root / "nbgrader_config.py", tmp_path)
    shutil.copytree(root / "source" / ASSIGNMENT, tmp_path / "source" / ASSIGNMENT)
    shutil.copytree(root / "release" / ASSIGNMENT, tmp_path / "release" / ASSIGNMENT)
    copy = tmp_path / "work" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    started = run("start", ASSIGNMENT.split("_")[0], cwd=tmp_path)  # "01" will do
    assert started.returncode == 0, started.stderr
    assert copy.read_bytes() == (root / "release" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
                                 ).read_bytes()
    assert f"Open work/{ASSIGNMENT}/{ASSIGNMENT}.ipynb in JupyterLab" in started.stdout
    copy.write_text("{} my work")
    again = run("start", ASSIGNMENT, cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert "is there already" in again.stdout and "nothing was copied" in again.stdout
    assert copy.read_text() == "{} my work"
    unknown = run("start", "99_nothing", cwd=tmp_path)
    assert unknown.returncode == 2 and "no assignment '99_nothing'" in unknown.stderr
    # the check finds the course above the copy, as the notebook's check cell does
    assert selfstudy.course_root(copy.parent).resolve() == tmp_path.resolve()


@pytest.mark.parametrize("link", ["work", f"work/{ASSIGNMENT}",
                                  f"work/{ASSIGNMENT}/{ASSIGNMENT}.ipynb"])
def test_start_writes_through_no_symbolic_link(tmp_path, root, link):
    course = tmp_path / "course"
    course.mkdir()
    shutil.copy2(root / "nbgrader_config.py", course)
    for folder in ("source", "release"):
        shutil.copytree(root / folder / ASSIGNMENT, course / folder / ASSIGNMENT)
    target = tmp_path / "outside" / "target"
    if link.endswith(".ipynb"):  # a dangling link: a copy would make the file it names
        target.parent.mkdir()
    else:  # a link to a folder outside the course: a copy would write into it
        target.mkdir(parents=True)
    (course / link).parent.mkdir(parents=True, exist_ok=True)
    (course / link).symlink_to(target)
    started = run("start", ASSIGNMENT, cwd=course)
    assert started.returncode == 2, started.stdout
    assert f"autograd-course start: {link} is a symbolic link" in started.stderr
    assert started.stderr.count("\n") == 1 and not started.stdout
    assert [p.name for p in target.parent.rglob("*")] == ([] if link.endswith(".ipynb")
                                                          else ["target"])
    assert (course / link).is_symlink()


def test_a_learners_working_copies_are_git_ignored(root):
    ignored = subprocess.run(["git", "check-ignore", "-q",
                              f"work/{ASSIGNMENT}/{ASSIGNMENT}.ipynb"], cwd=root)
    assert ignored.returncode == 0, "work/ is not git-ignored"


def test_a_message_while_the_progress_bar_runs_is_on_a_line_of_its_own(capsys):
    progress = cli.Progress(3)
    progress.write("WARNING: roster.csv does not list 1 of the students", file=sys.stderr)
    progress.close()
    err = capsys.readouterr().err
    segments = [part.strip() for line in err.split("\n") for part in line.split("\r")]
    assert "WARNING: roster.csv does not list 1 of the students" in segments, err
    assert err.endswith("\n")  # closed: what comes next starts a line


def test_an_interrupted_grade_says_what_was_merged_in_one_line(monkeypatch, capsys):
    def interrupted(args):
        raise runner.Interrupted(2, 3)

    monkeypatch.setattr(cli, "cmd_grade", interrupted)
    assert cli.main(["grade"]) == 130
    err = capsys.readouterr().err
    assert err == ("autograd-course grade: interrupted; 2 submissions merged, 3 not graded "
                   "(run grade again to go on)\n")


# -- start-up: only what is used ------------------------------------------------------------
#: What ``--help``, a ``grade`` with nothing to do and ``check`` before its grading child do
#: not import: each costs a second or more (nbgrader's package imports Jupyter's server,
#: nbconvert and SQLAlchemy), and none of them is used there.
NOT_AT_START = ("torch", "dask", "distributed", "sqlalchemy", "nbconvert", "nbgrader",
                "matplotlib")
#: What ``check`` does not import before its grading child starts. Reading the course's config
#: imports nbgrader (nbgrader_config.py builds its pipelines from nbgrader's), and with it
#: SQLAlchemy and nbconvert; torch (the judge's, the kernel's) and Dask are left to the child.
NOT_BEFORE_CHECKING = ("torch", "dask", "distributed", "matplotlib")
#: What the stamped course's last run was asked.
ASKED = {"assignments": [], "students": [], "rename_notebook": False}


def imported_by(code: str, cwd: Path | None = None) -> tuple[str, set[str]]:
    """What a fresh Python prints running ``code``, and the top-level packages it imported."""
    script = code + "\nimport sys\nprint('imported:', *sorted({m.partition('.')[0] for m in " \
        "sys.modules}))"
    done = subprocess.run([sys.executable, "-c", script], cwd=cwd, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    out, _, imported = done.stdout.rpartition("imported:")
    return out, set(imported.split())


def leave_stamp(where: Path) -> None:
    """Leave the stamp of a run of the course ``where`` (grading/idle.py), taken as a run takes
    it, over its SQLite gradebook file and its grades.csv."""
    stamp = idle.Stamp(where, ASKED)
    course = Course.load(where)
    stamp.inputs(course)
    stamp.graded(course)
    stamp.outputs([where / "grades.csv"])
    stamp.leave({"submissions": 1, "warnings": ["roster.csv does not list 1 of the students"],
                 "lines": [f"grades: {where / 'grades.csv'}"]})


@pytest.fixture
def stamped(tmp_path, root) -> Path:
    """A small course, with a SQLite gradebook file and a grades.csv, whose last grade run
    left its stamp."""
    shutil.copy2(root / "nbgrader_config.py", tmp_path)
    shutil.copytree(root / "source" / ASSIGNMENT, tmp_path / "source" / ASSIGNMENT)
    submitted = tmp_path / "submitted" / "ada" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    submitted.parent.mkdir(parents=True)
    submitted.write_text("{}")
    with contextlib.closing(sqlite3.connect(tmp_path / "gradebook.db")) as db:
        db.execute("CREATE TABLE grade (student TEXT, score REAL)")
        db.commit()
    (tmp_path / "grades.csv").write_text("student_id,score\n")
    leave_stamp(tmp_path)
    return tmp_path


def test_help_imports_nothing_it_does_not_use():
    out, imported = imported_by("from autograd_course import cli\n"
                                "try:\n    cli.main(['--help'])\nexcept SystemExit:\n    pass")
    assert "usage: autograd-course" in out
    assert imported.isdisjoint(NOT_AT_START), imported & set(NOT_AT_START)


def test_a_grade_with_nothing_to_do_says_so_without_nbgrader_or_torch(stamped):
    out, imported = imported_by(f"from autograd_course import cli\n"
                                f"assert cli.main(['--course', {str(stamped)!r}, 'grade']) == 0")
    assert "1 submissions were graded before and have not changed: kept" in out, out
    assert "nothing else changed since the last run" in out
    assert f"grades: {stamped / 'grades.csv'}" in out
    assert imported.isdisjoint(NOT_AT_START), imported & set(NOT_AT_START)


def test_check_imports_no_torch_before_its_grading_child(root, tmp_path):
    notebook = tmp_path / f"{ASSIGNMENT}.ipynb"
    shutil.copy2(root / "release" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", notebook)
    out, imported = imported_by(textwrap.dedent(f"""\
        from autograd_course import cli
        from autograd_course.grading import selfcheck

        def child(*args, **kwargs):  # where the grading child (and its kernel) would start
            print("the grading child starts here")
            raise SystemExit(0)

        selfcheck._grade_bounded = child
        cli.main(['--course', {str(root)!r}, 'check', '--student', 'ada', {str(notebook)!r}])
        """))
    assert "the grading child starts here" in out, out
    assert imported.isdisjoint(NOT_BEFORE_CHECKING), imported & set(NOT_BEFORE_CHECKING)


def test_a_stamp_stands_only_while_nothing_it_fingerprinted_changed(stamped):
    def said(asked=ASKED):
        return idle.Stamp(stamped, asked).last()

    assert said()["submissions"] == 1
    assert said(dict(ASKED, students=["ada"])) is None  # another question
    with gradebook.exclusive(Course.load(stamped)):  # a run is grading: wait for it, in full
        assert said() is None
    kept = stamped / ".autograd-course-cache" / idle.STAMP_FILE
    kept.chmod(0o620)
    assert said() is None  # one that another user could have written
    kept.chmod(0o600)

    def commit():  # formgrader's manual grade
        with contextlib.closing(sqlite3.connect(stamped / "gradebook.db")) as db:
            db.execute("INSERT INTO grade VALUES ('ada', 1.5)")
            db.commit()

    def append(path: Path, text: str):
        with path.open("a") as handle:
            handle.write(text)

    submission = stamped / "submitted" / "ada" / ASSIGNMENT
    for change in (lambda: (submission / "helper.py").write_text("x = 1\n"),
                   lambda: append(submission / f"{ASSIGNMENT}.ipynb", " "),
                   lambda: (stamped / "submitted" / "bea" / ASSIGNMENT).mkdir(parents=True),
                   lambda: (stamped / "roster.csv").write_text("id\nada\n"),
                   lambda: append(stamped / "nbgrader_config.py", "\n"),
                   commit,
                   lambda: (stamped / "grades.csv").unlink()):
        leave_stamp(stamped)
        assert said() is not None
        change()
        assert said() is None
    header = (stamped / "gradebook.db").read_bytes()[:100]
    commit()
    assert (stamped / "gradebook.db").read_bytes()[:100] != header  # its change counter moves


def test_a_symbolic_link_where_a_walk_goes_deep_leaves_no_stamp(stamped):
    # a run reads through submitted/bea into elsewhere/, where a walk that does not follow
    # the link would see no edit
    elsewhere = stamped / "elsewhere" / ASSIGNMENT
    elsewhere.mkdir(parents=True)
    (elsewhere / f"{ASSIGNMENT}.ipynb").write_text("{}")
    (stamped / "submitted" / "bea").symlink_to(stamped / "elsewhere")
    kept = stamped / ".autograd-course-cache" / idle.STAMP_FILE
    kept.unlink()
    leave_stamp(stamped)
    assert not kept.exists()


@pytest.mark.parametrize("step", ["source", "submitted"])
def test_a_linked_course_folder_is_fingerprinted_where_it_leads(stamped, step):
    # submitted/ (or source/) a link to this term's folder, then `ln -sfn` to the next term's,
    # where one more folder waits: a run reads the new one, where the folder it resolved last
    # time has not changed
    for term in ("term1", "term2"):
        shutil.copytree(stamped / step, stamped / term, symlinks=True)
    (stamped / "term2" / "bea" / ASSIGNMENT).mkdir(parents=True)
    shutil.rmtree(stamped / step)
    (stamped / step).symlink_to(stamped / "term1")
    leave_stamp(stamped)
    assert idle.Stamp(stamped, ASKED).last() is not None  # a linked folder keeps its stamp
    (stamped / step).unlink()
    (stamped / step).symlink_to(stamped / "term2")
    assert idle.Stamp(stamped, ASKED).last() is None


def test_a_submissions_pycache_is_fingerprinted(stamped):
    # grading takes a submission's __pycache__ in (intake.scan): only the package's is left out
    cached = stamped / "submitted" / "ada" / ASSIGNMENT / "__pycache__" / "helper.cpython.pyc"
    cached.parent.mkdir()
    cached.write_bytes(b"x")
    leave_stamp(stamped)
    assert idle.Stamp(stamped, ASKED).last() is not None
    cached.write_bytes(b"yy")
    assert idle.Stamp(stamped, ASKED).last() is None


def test_a_same_size_write_under_times_that_do_not_move_is_seen(stamped, monkeypatch):
    Course.load(stamped)  # nbgrader's config read once, before the clock stands still
    frozen, lstat = time.time_ns(), os.lstat

    class Coarse:  # a file system whose times have not moved since the test began
        def __init__(self, info):
            self.info = info

        def __getattr__(self, name):
            return frozen if name in ("st_mtime_ns", "st_ctime_ns") else getattr(self.info, name)

    monkeypatch.setattr(idle, "FRESH_NS", 600 * 10**9, raising=False)  # however slow the run
    monkeypatch.setattr(idle.os, "lstat", lambda path: Coarse(lstat(path)))
    leave_stamp(stamped)
    assert idle.Stamp(stamped, ASKED).last() is not None
    (stamped / "grades.csv").write_text("student_id,scorf\n")  # the same size, the same inode
    assert idle.Stamp(stamped, ASKED).last() is None


def test_a_due_date_moved_while_grading_is_told_under_the_lock(stamped, monkeypatch):
    course, ada = Course.load(stamped), Submission("ada", ASSIGNMENT)

    def due(date: str) -> None:  # as formgrader commits it, without the grading lock
        with warnings.catch_warnings(), course.gradebook() as gb:
            warnings.simplefilter("ignore")
            gb.update_or_create_assignment(ASSIGNMENT, duedate=date)

    due("2026-11-30 11:00:00")
    with warnings.catch_warnings(), course.gradebook() as gb:  # ada's graded: nothing to do
        warnings.simplefilter("ignore")
        gradebook.MARKERS.write(gb, ASSIGNMENT, "ada", tasks.make_task(course, ada).digest)
        gb.db.commit()

    def grade() -> tuple[idle.Stamp, bool]:
        stamp, held = idle.Stamp(stamped, ASKED), []

        def on_merged():
            with gradebook.free(gradebook.lock_path(course)) as free:
                held.append(not free)
            stamp.graded(course)

        stamp.inputs(course)
        summary = runner.grade_class(course, [ada], on_merged=on_merged)
        assert held == [True] and summary.skipped == [ada]
        return stamp, summary.settled

    stamp, settled = grade()
    assert settled  # and what was fingerprinted under the lock is what is there now
    assert idle._again(stamp.taken["graded"]) == stamp.taken["graded"]
    make_task = tasks.make_task

    def and_formgrader_moves_the_due_date(*args, **kwargs):
        task = make_task(*args, **kwargs)
        due("2026-12-01 11:00:00")
        return task

    monkeypatch.setattr(runner.tasks, "make_task", and_formgrader_moves_the_due_date)
    assert not grade()[1]
