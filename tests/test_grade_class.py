"""autograd-course grade on a class: equal to serial nbgrader, its outputs, regrades, the
self-check's agreement, new assignments, the demo."""

from __future__ import annotations

import csv
import shutil
import zipfile

import nbformat
import pytest
from support.commands import ASSIGNMENT, CLASS, FULL, run

from autograd_course import cli
from autograd_course.grading import record
from autograd_course.grading.course import Course
from autograd_course.testkit import classes as course


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


def test_each_assignments_report_is_asked_for_once_its_last_submission_is_merged(
        tmp_path, root, monkeypatch):
    from autograd_course.grading import runner, tasks

    units = [ASSIGNMENT, "02_three_weights"]
    path = course.make_course(tmp_path / "course", root, units)
    course.submit_class(path, ASSIGNMENT, CLASS[:2], seed=1)
    course.submit_class(path, units[1], CLASS[:1], seed=2)
    graded = Course.load(path)
    merged, asked = [], []

    def in_this_order(todo, bundle, jobs, budgets):  # 01, 02, then 01's last
        for task in (todo[0], todo[2], todo[1]):
            yield tasks.failed(task, "not graded in this test")

    monkeypatch.setattr(runner, "_on_this_machine", in_this_order)
    runner.grade_class(graded, graded.submissions(units, []),
                       on_done=lambda outcome, *_: merged.append(outcome.submission),
                       on_assignment=lambda name: asked.append((name, len(merged))))
    assert asked == [(units[1], 2), (ASSIGNMENT, 3)]
