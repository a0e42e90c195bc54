"""autograd-course: its commands, parallel grading equal to serial nbgrader, the self-check."""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import zipfile
from pathlib import Path

import nbformat
import pytest
from support.units import UNITS

sys.path.insert(0, str(Path(__file__).parent / "fixtures"))
import liar  # noqa: E402

from autograd_course import cli
from autograd_course.grading import prepared, record, runner, selfcheck
from autograd_course.grading.course import Course, Submission
from autograd_course.grading.release import generate
from autograd_course.testkit import WRONG_ANSWERS
from autograd_course.testkit import classes as course

ASSIGNMENT = "01_gradients"
FULL = course.full_marks(Path(__file__).parent.parent / "source" / ASSIGNMENT
                         / f"{ASSIGNMENT}.ipynb")
CLASS = [("ada", "right"), ("blaise", "mistakes"), ("carl", "blank"), ("dora", "mixed"),
         ("fermat", "tamper")]


def run(*args, cwd=None, env=None):
    return subprocess.run([sys.executable, "-m", "autograd_course", *args], cwd=cwd,
                          capture_output=True, text=True,
                          env=None if env is None else {**os.environ, **env})


def test_help_lists_every_command():
    result = run("--help")
    assert result.returncode == 0
    assert "usage: autograd-course" in result.stdout
    for command in ("release", "grade", "check", "validate", "demo", "feedback", "export"):
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


@pytest.fixture(scope="module")
def two_courses(tmp_path_factory, root):
    """The same synthetic class twice: graded by serial nbgrader, and by autograd-course."""
    base = tmp_path_factory.mktemp("cli")
    serial = course.make_course(base / "serial", root, [ASSIGNMENT])
    course.submit_class(serial, ASSIGNMENT, CLASS, seed=1)
    parallel_course = course.copy_course(serial, base / "parallel")
    # one more student arrives in a zip, as nbgrader's zip_collect would take it
    archive = base / "late.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.write(serial / "submitted" / "ada" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb",
                 f"zoe/{ASSIGNMENT}/{ASSIGNMENT}.ipynb")
    # a student whose code kills the grading process (the kernel's parent)
    killer = course.fill(serial / "release" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", {})
    killer.cells.insert(2, nbformat.v4.new_code_cell(
        "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)"))
    course.submit(parallel_course, "mallory", ASSIGNMENT, ASSIGNMENT, killer)
    before = course.snapshot(parallel_course / "submitted")
    assert course.nbgrader(serial, "autograde", ASSIGNMENT, "--force").returncode == 0
    scratch = base / "tmp"  # the grading run's temporary folder
    scratch.mkdir()
    graded = run("grade", ASSIGNMENT, "--jobs", "2", "--zip", str(archive), cwd=parallel_course,
                 env={"TMPDIR": str(scratch)})
    return dict(serial=serial, parallel=parallel_course, graded=graded, before=before,
                scratch=scratch)


@pytest.mark.class_grading
def test_parallel_scores_equal_serial_nbgrader(two_courses):
    assert two_courses["graded"].returncode == 0, two_courses["graded"].stderr[-2000:]
    serial = course.gradebook_scores(two_courses["serial"], ASSIGNMENT)
    parallel_scores = course.gradebook_scores(two_courses["parallel"], ASSIGNMENT)
    assert parallel_scores.pop("zoe") == serial["ada"]
    assert parallel_scores.pop("mallory") == 0  # her kill attempt fails in the sandbox
    assert parallel_scores == serial
    assert serial["ada"] == FULL and serial["carl"] == 0 and serial["fermat"] == 0
    for student, _ in CLASS:
        mine, theirs = (course.grade_record(c, student, ASSIGNMENT)
                        for c in (two_courses["parallel"], two_courses["serial"]))
        # hidden tests draw fresh random inputs, so a wrong answer may fail a different
        # check in another run; the kind of error and the score may not differ
        assert [(q["question"], q["score"], q["message"].split(":")[0])
                for q in mine.questions] == [
            (q["question"], q["score"], q["message"].split(":")[0])
            for q in theirs.questions], student
        assert bool(mine.flags) == bool(theirs.flags)


@pytest.mark.class_grading
def test_grade_writes_grades_feedback_report_and_summary(two_courses):
    where = two_courses["parallel"]
    out = two_courses["graded"].stdout
    lines = (where / "grades.csv").read_text().splitlines()
    assert lines[0].startswith("assignment,duedate,timestamp,student_id")
    assert len(lines) == 1 + len(CLASS) + 2  # the class, zoe and mallory
    for student in [s for s, _ in CLASS] + ["zoe"]:  # all but mallory, who was not graded
        assert (where / "feedback" / student / ASSIGNMENT / f"{ASSIGNMENT}.html").is_file()
    for name in ("report.csv", "report.png", "report.html"):
        assert (where / "reports" / ASSIGNMENT / name).is_file()
    assert "FLAGGED fermat/01_gradients" in out
    assert "FAILED" not in out
    mallory = course.grade_record(where, "mallory", ASSIGNMENT)
    # in the sandbox her signal to the grader is refused: her blank answers score 0, and her
    # attempt is flagged for a person to look at
    assert mallory.score == 0 and any("os.kill" in flag for flag in mallory.flags)
    total = len(CLASS) + 2
    assert "grading: 100%" in two_courses["graded"].stderr
    assert f"{total}/{total} [" in two_courses["graded"].stderr  # tqdm: done/total [elapsed<ETA


@pytest.mark.class_grading
def test_grading_leaves_no_temporary_folder_behind(two_courses):
    assert two_courses["graded"].returncode == 0
    assert sorted(p.name for p in two_courses["scratch"].iterdir()) == []


@pytest.mark.class_grading
def test_submitted_is_unchanged_apart_from_the_zip(two_courses):
    after = course.snapshot(two_courses["parallel"] / "submitted")
    added = {k for k in after if k.startswith("zoe/")}
    assert added == {f"zoe/{ASSIGNMENT}/{ASSIGNMENT}.ipynb", f"zoe/{ASSIGNMENT}/timestamp.txt"}
    assert {k: v for k, v in after.items() if k not in added} == two_courses["before"]


@pytest.mark.class_grading
def test_one_student_regraded_the_report_still_covers_the_class(two_courses):
    where = two_courses["parallel"]
    # records that are not the grader's: a malformed one, and a classmate's filed under ada
    folder = record.store(where).folder(ASSIGNMENT, "ada")
    (folder / "extra.json").write_text('{"student": "ada", "surprise": 1}')
    (folder / "copied.json").write_bytes(
        record.store(where).path(ASSIGNMENT, "carl", ASSIGNMENT).read_bytes())
    again = run("grade", ASSIGNMENT, "--student", "blaise", "--force", cwd=where)
    assert again.returncode == 0, again.stderr[-2000:]
    assert "1 submissions graded" in again.stdout
    assert "WARNING: skipped the grade record" in again.stderr
    assert "extra.json: unknown keys ['surprise']" in again.stderr
    assert "copied.json: it is the record of carl/" in again.stderr
    with open(where / "reports" / ASSIGNMENT / "report.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert rows and {row["students"] for row in rows} == {str(len(CLASS) + 2)}  # zoe, mallory
    # the gradebook's comment on an answer is its diagnosis, as the student reads it
    rec = course.grade_record(where, "blaise", ASSIGNMENT)
    failed = [q for q in rec.questions if not q["passed"]]
    assert failed
    with Course.load(where).gradebook() as gb:
        for q in failed:
            answer = q["question"].removesuffix("_test")
            comment = gb.find_comment(answer, ASSIGNMENT, ASSIGNMENT, "blaise").auto_comment
            assert comment == q["message"]


@pytest.mark.class_grading
@pytest.mark.parametrize("student", ["ada", "blaise", "fermat"])
def test_self_check_agrees_with_the_instructors_autograde(two_courses, student):
    serial = two_courses["serial"]
    notebook = serial / "submitted" / student / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    (mine,) = cli.check_notebook(serial, notebook)
    theirs = course.grade_record(serial, student, ASSIGNMENT)
    assert mine.student == student  # read from submitted/STUDENT/..., so the same inputs
    assert mine.questions == theirs.questions


def test_check_prints_points_and_messages(root, tmp_path):
    notebook = tmp_path / f"{ASSIGNMENT}.ipynb"
    shutil.copy2(root / "release" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", notebook)
    result = run("check", str(notebook), cwd=root)
    assert result.returncode == 0, result.stderr
    assert "FAIL q1_partials_test: 0/2  NotAnswered: the answer cell still raises" in (
        result.stdout)
    assert result.stderr == "", "nbgrader's own warnings stay out of a learner's way"
    assert f"total: 0/{FULL:g}" in result.stdout


def _notebook(root, answers: dict[str, str]):
    return course.fill(root / "release" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", answers)


def _reference(root) -> dict[str, str]:
    return course.reference_answers(root / "source" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb")


def test_check_names_each_notebook_as_given_its_student_id_and_failing_cells(root, tmp_path):
    (tmp_path / "blank").mkdir()
    nbformat.write(_notebook(root, {}), tmp_path / "blank" / f"{ASSIGNMENT}.ipynb")
    answers = _reference(root) | {"q1_partials": "1 / 0"}
    mine = _notebook(root, answers)
    index = next(i for i, c in enumerate(mine.cells)
                 if c.metadata.get("nbgrader", {}).get("grade_id") == "q2_leaf_and_grad_fn")
    mine.cells.insert(index + 1, nbformat.v4.new_code_cell("\nprint(undefined_name)"))
    (tmp_path / "mine").mkdir()
    nbformat.write(mine, tmp_path / "mine" / f"{ASSIGNMENT}.ipynb")
    result = run("--course", str(root), "check", f"blank/{ASSIGNMENT}.ipynb",
                 str(tmp_path / "mine" / f"{ASSIGNMENT}.ipynb"), cwd=tmp_path,
                 env={"JUPYTERHUB_USER": "", "LOGNAME": "learner"})
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    blank, mine_at = lines.index(f"blank/{ASSIGNMENT}.ipynb"), lines.index(
        f"mine/{ASSIGNMENT}.ipynb")  # each its own path, the absolute one relative to here
    assert f"{ASSIGNMENT}/{ASSIGNMENT}.ipynb" not in result.stdout
    for at in (blank, mine_at):
        assert lines[at + 1] == (
            "  student id: learner (your user name; set it with --student)")
    assert "checked as" not in result.stdout
    first, second = lines[blank:mine_at], lines[mine_at:]
    # the blank answers are "not answered" once, not again as errors of their cells
    assert not [line for line in first if "error in" in line], first
    assert ("  error in your answer to question 1 (q1_partials): ZeroDivisionError: "
            "division by zero") in second
    assert ("  error in your cell `print(undefined_name)` under question 2: NameError: name "
            "'undefined_name' is not defined") in second
    assert "cell cell" not in result.stdout and not re.search(r"\bcell \d", result.stdout)


def test_check_says_where_the_student_id_came_from(tmp_path, monkeypatch):
    notebook = tmp_path / "submitted" / "ada" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    monkeypatch.setenv("JUPYTERHUB_USER", "hub-user")
    assert selfcheck.student_and_origin(notebook, "zoe") == ("zoe", "given")
    assert selfcheck.student_and_origin(notebook, None) == ("ada", "path")
    elsewhere = tmp_path / f"{ASSIGNMENT}.ipynb"
    assert selfcheck.student_and_origin(elsewhere, None) == ("hub-user", "jupyterhub")
    monkeypatch.delenv("JUPYTERHUB_USER")
    monkeypatch.setenv("LOGNAME", "learner")
    assert selfcheck.student_and_origin(elsewhere, None) == ("learner", "user")
    for origin, text in cli.STUDENT_ORIGIN.items():
        assert "--student" in text or origin == "path", origin
    assert "submitted/ada/" in cli.STUDENT_ORIGIN["path"].format(student="ada")


@pytest.fixture(scope="module")
def checked_course(tmp_path_factory, root):
    """A small course whose self-check has built its cache (.autograd-course-cache/)."""
    base = tmp_path_factory.mktemp("copies") / "original"
    base.mkdir()
    shutil.copy2(root / "nbgrader_config.py", base)
    for step in ("source", "release"):
        shutil.copytree(root / step / ASSIGNMENT, base / step / ASSIGNMENT)
    checked = run("check", f"release/{ASSIGNMENT}/{ASSIGNMENT}.ipynb", cwd=base)
    assert checked.returncode == 0, checked.stderr
    assert len(list((base / prepared.CACHE).glob(f"{ASSIGNMENT}-*"))) == 1
    return base


def _empty_gradebook(copy: Path) -> None:  # left half-written, or of another course
    (cached,) = (copy / prepared.CACHE).glob(f"{ASSIGNMENT}-*")
    (cached / "gradebook.db").write_bytes(b"")


def _cache_a_file(copy: Path) -> None:  # a cache that cannot be written
    shutil.rmtree(copy / prepared.CACHE)
    (copy / prepared.CACHE).write_text("not a folder")


@pytest.mark.parametrize("damage", [None, _empty_gradebook, _cache_a_file],
                         ids=["copied", "its-gradebook-lost-the-assignment", "unwritable"])
def test_check_in_a_copied_course_rebuilds_a_cache_that_is_not_its_own(checked_course, damage):
    copy = checked_course.parent / f"copy-{damage.__name__ if damage else 'plain'}"
    shutil.copytree(checked_course, copy, symlinks=True)  # as cp -a does, the cache with it
    if damage:
        damage(copy)
    result = run("check", f"release/{ASSIGNMENT}/{ASSIGNMENT}.ipynb", cwd=copy)
    assert result.returncode == 0, result.stderr
    assert result.stderr == "" and "Please see" not in result.stdout
    assert "FAIL q1_partials_test: 0/2  NotAnswered" in result.stdout
    assert f"total: 0/{FULL:g}" in result.stdout
    if damage is _cache_a_file:
        assert (copy / prepared.CACHE).read_text() == "not a folder"  # built aside, once
        return
    (cached,) = (copy / prepared.CACHE).glob(f"{ASSIGNMENT}-*")
    assert json.loads((cached / prepared.STAMP).read_text())["root"] == str(copy.resolve())
    assert not list((copy / prepared.CACHE).glob(".*")), "no build or stale copy left"


def test_a_cache_someone_else_could_have_written_is_not_used(checked_course, tmp_path):
    (cached,) = (checked_course / prepared.CACHE).glob(f"{ASSIGNMENT}-*")
    course = Course.load(checked_course)
    stamp = json.loads((cached / prepared.STAMP).read_text())
    assert prepared.usable(cached, course, ASSIGNMENT, stamp)
    planted = tmp_path / "planted"
    shutil.copytree(cached, planted)
    link = checked_course / prepared.CACHE / "link"
    link.symlink_to(planted)
    try:
        assert not prepared.usable(link, course, ASSIGNMENT, stamp)  # a link to elsewhere
    finally:
        link.unlink()
    mode = cached.stat().st_mode
    for writable in (stat.S_IWGRP, stat.S_IWOTH):
        cached.chmod(mode | writable)
        try:
            assert not prepared.usable(cached, course, ASSIGNMENT, stamp)
        finally:
            cached.chmod(mode)
    assert prepared.usable(cached, course, ASSIGNMENT, stamp)


def test_a_grading_run_builds_its_bundle_once_per_version_and_only_trusts_its_own(
        checked_course, monkeypatch):
    copy = checked_course.parent / "copy-bundles"
    shutil.copytree(checked_course, copy, symlinks=True)
    built = []
    real_prepare = prepared.prepare
    monkeypatch.setattr(prepared, "prepare",
                        lambda *a, **k: built.append(1) or real_prepare(*a, **k))
    course = Course.load(copy)
    first = prepared.prepared_bundle(course, [ASSIGNMENT])
    assert prepared.prepared_bundle(course, [ASSIGNMENT]) == first and len(built) == 1  # cached
    (folder,) = (copy / prepared.CACHE).glob("bundle-*")
    archive = folder / "course.tar.gz"
    data = archive.read_bytes()
    archive.write_bytes(data[:-1] + bytes([data[-1] ^ 1]))  # not the archive it stamped
    again = prepared.prepared_bundle(course, [ASSIGNMENT])
    assert again[1] == first[1] and again[0] != data[:-1] + bytes([data[-1] ^ 1])
    assert len(built) == 2
    (folder,) = (copy / prepared.CACHE).glob("bundle-*")
    folder.chmod(folder.stat().st_mode | stat.S_IWOTH)  # anyone could have written it
    assert prepared.prepared_bundle(course, [ASSIGNMENT])[1] == first[1] and len(built) == 3
    moved = checked_course.parent / "copy-bundles-moved"
    shutil.copytree(copy, moved, symlinks=True)  # a copied course builds its own
    prepared.prepared_bundle(Course.load(moved), [ASSIGNMENT])
    assert len(built) == 4
    source = copy / "source" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    nb = nbformat.read(source, as_version=4)
    nb.cells.append(nbformat.v4.new_markdown_cell("A new version of the assignment."))
    nbformat.write(nb, source)
    prepared.prepared_bundle(course, [ASSIGNMENT])  # a new version replaces the old one
    assert len(built) == 5 and len(list((copy / prepared.CACHE).glob("bundle-*"))) == 1
    assert not list((copy / prepared.CACHE).glob(".building-*"))


def test_a_cached_course_that_nbgrader_cannot_use_is_rebuilt_and_the_check_tried_again(
        checked_course, monkeypatch):
    copy = checked_course.parent / "copy-trusted"
    shutil.copytree(checked_course, copy, symlinks=True)
    _empty_gradebook(copy)
    built = []
    real_build = prepared._build
    monkeypatch.setattr(prepared, "usable", lambda *args: True)  # it passes every check
    monkeypatch.setattr(prepared, "_build",
                        lambda *args: built.append(args[0]) or real_build(*args))
    (rec,) = selfcheck.check(copy, copy / "release" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", "ada")
    assert len(built) == 1 and rec.student == "ada" and rec.max_score == FULL
    assert {q["diagnosis"] for q in rec.questions} == {"blank"}


def test_a_notebook_nbgrader_cannot_grade_gets_its_reason_not_see_the_traceback():
    log = ("[INFO] Creating/updating student with ID 'ada': {}\n"
           "[ERROR] No assignment with ID '01_gradients' exists in the database\n"
           "[ERROR] There was an error processing assignment: /tmp/x/submitted/ada/01_gradients\n"
           "[ERROR] Traceback (most recent call last):\n"
           "    nbgrader.api.MissingEntry: No such assignment: 01_gradients\n"
           "[ERROR] Please see the the above traceback for details on the specific errors on "
           "the above failures.\n")
    error = ("Traceback (most recent call last):\n  ...\nnbgrader.converters.base."
             "NbGraderException: Please see the the above traceback for details on the "
             "specific errors on the above failures.\n")
    assert selfcheck.nbgrader_failure({"log": log, "error": error}) == (
        "No assignment with ID '01_gradients' exists in the database")
    assert selfcheck.nbgrader_failure({"error": "ValueError: bad\n"}) == "ValueError: bad"
    assert "no message" in selfcheck.nbgrader_failure({})


def test_validate_says_one_line_per_failing_question(root, tmp_path):
    q2_wrong = next(w for w in WRONG_ANSWERS[(ASSIGNMENT, "q2_leaf_and_grad_fn")]
                    if w.diagnosis == ("leaf",) and not w.hidden_only)
    reference = _reference(root)
    answers = {"q1_partials": reference["q1_partials"], "q2_leaf_and_grad_fn": q2_wrong.code}
    nbformat.write(_notebook(root, answers), tmp_path / f"{ASSIGNMENT}.ipynb")
    result = run("--course", str(root), "validate", f"{ASSIGNMENT}.ipynb", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    lines = result.stdout.splitlines()
    assert lines[0] == f"{ASSIGNMENT}.ipynb"
    assert lines[1].startswith("  FAIL q2_leaf_and_grad_fn_test: CheckError: "), lines
    assert lines[2].startswith("  FAIL q3_retain_grad_test: NotAnswered: "
                               "leaf_and_intermediate_grads(...) is not answered yet"), lines
    assert lines[3].startswith("  FAIL q4_predict_grads_test: NotAnswered: `predicted` is not "
                               "defined yet"), lines
    assert lines[4:] == ["  3 test cell(s) fail their visible tests"], lines
    for noise in ("Traceback", "The following cell failed", "run_answer(", "kernel/checks"):
        assert noise not in result.stdout, noise
    nbformat.write(_notebook(root, reference), tmp_path / f"{ASSIGNMENT}.ipynb")
    passed = run("--course", str(root), "validate", f"{ASSIGNMENT}.ipynb", cwd=tmp_path)
    assert passed.stdout.splitlines()[1].startswith("  every visible test passes"), passed.stdout


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


@pytest.fixture(scope="module")
def every_unit(tmp_path_factory, root):
    """Every assignment's reference answers and blank stub, and a liar's answers where the
    points once rested on facts the kernel reports, graded by autograd-course grade."""
    base = course.make_course(tmp_path_factory.mktemp("units") / "course", root, list(UNITS))
    for unit in UNITS:
        release = base / "release" / unit / f"{unit}.ipynb"
        answers = course.reference_answers(base / "source" / unit / f"{unit}.ipynb")
        course.submit(base, "reference", unit, unit, course.fill(release, answers))
        course.submit(base, "stub", unit, unit, course.fill(release, {}))
        if unit in liar.ANSWERS:
            path = course.submit(base, "liar", unit, unit,
                                 course.fill(release, liar.ANSWERS[unit]))
            (path.parent / "liar.py").write_text(liar.LIAR)
    result = run("grade", "--jobs", "2", cwd=base)
    assert result.returncode == 0, result.stderr[-2000:]
    return base


@pytest.mark.class_grading
@pytest.mark.parametrize("unit", UNITS)
def test_references_get_every_point_and_stubs_none(every_unit, unit):
    scores = course.gradebook_scores(every_unit, unit)
    rec = course.grade_record(every_unit, "reference", unit)
    scores.pop("liar", None)
    assert scores == {"reference": rec.max_score, "stub": 0.0}, [
        q["message"] for q in rec.questions if not q["passed"]]
    stub = course.grade_record(every_unit, "stub", unit)
    assert {q["diagnosis"] for q in stub.questions} == {"blank"}
    assert rec.flags == [] and stub.flags == [] and rec.sandboxed


@pytest.mark.class_grading
@pytest.mark.parametrize("unit", sorted(liar.ANSWERS))
def test_a_kernel_that_lies_about_its_tensors_gains_nothing(every_unit, unit):
    rec = course.grade_record(every_unit, "liar", unit)
    lied = {f"{qid}_test" for qid in liar.ANSWERS[unit]}
    assert {q["question"]: q["score"] for q in rec.questions if q["question"] in lied} == (
        dict.fromkeys(lied, 0)), rec.questions
    assert rec.score == 0 and rec.sandboxed


def test_find_submissions_filters_students(tmp_path):
    for student in ("a", "b"):
        (tmp_path / "submitted" / student / ASSIGNMENT).mkdir(parents=True)
    shutil.copy2(Path(__file__).parent.parent / "nbgrader_config.py", tmp_path)
    (tmp_path / "source").mkdir()
    found = Course.load(tmp_path).submissions([ASSIGNMENT], ["b"])
    assert found == [Submission("b", ASSIGNMENT)]


@pytest.mark.class_grading
def test_grade_registers_a_new_assignment_and_refuses_a_changed_source(tmp_path, root):
    shutil.copy2(root / "nbgrader_config.py", tmp_path)
    shutil.copytree(root / "source" / ASSIGNMENT, tmp_path / "source" / ASSIGNMENT)
    blank = course.fill(root / "release" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", {})
    course.submit(tmp_path, "ada", ASSIGNMENT, ASSIGNMENT, blank)
    first = run("grade", ASSIGNMENT, cwd=tmp_path)  # never released: grading registers it
    assert first.returncode == 0, first.stderr[-2000:]
    assert course.gradebook_scores(tmp_path, ASSIGNMENT) == {"ada": 0.0}
    # the instructor gives a question one more point after the release
    source = tmp_path / "source" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    nb = nbformat.read(source, as_version=4)
    cell = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("points"))
    cell.metadata.nbgrader.points += 1
    nbformat.write(nb, source)
    refused = run("grade", ASSIGNMENT, "--force", cwd=tmp_path)
    assert refused.returncode == 2
    assert "run `autograd-course release 01_gradients --force`" in refused.stderr, refused.stderr
    assert run("release", ASSIGNMENT, "--force", cwd=tmp_path).returncode == 0
    again = run("grade", ASSIGNMENT, "--force", cwd=tmp_path)
    assert again.returncode == 0, again.stderr[-2000:]
    with Course.load(tmp_path).gradebook() as gb:
        assert gb.find_assignment(ASSIGNMENT).max_score == FULL + 1


@pytest.mark.class_grading
def test_demo_grades_a_synthetic_class_end_to_end(tmp_path, root):
    out = tmp_path / "demo"
    result = run("demo", "--out", str(out), cwd=root)
    assert result.returncode == 0, result.stderr[-2000:]
    students = {p.name for p in (out / "submitted").iterdir()}
    assert "gauss" in students and len(students) >= 4
    assert f"{len(students)} submissions graded: 0 could not be graded" in result.stdout
    assert course.gradebook_scores(out, ASSIGNMENT)["gauss"] == 0  # not a notebook
    problem = next(line for line in result.stdout.splitlines() if "PROBLEM gauss/" in line)
    assert "is not a valid notebook" in problem
    assert (out / "reports" / ASSIGNMENT / "report.html").is_file()


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
