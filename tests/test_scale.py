"""Class scale: the configured gradebook (PostgreSQL for real), a Dask cluster, resuming.

One synthetic class of 01_gradients (profiles right, mistakes, blank, mixed, tamper) is graded
serially by plain `nbgrader autograde` into SQLite: the reference scores. Then the same class is
graded by `autograd-course grade`:
- into a real PostgreSQL server, by two runs started at once (one waits for the other);
- on a real Dask LocalCluster of worker processes, once plainly, once with a worker killed
  while it grades;
- into SQLite, killed with SIGKILL in the middle of the class and run again.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import dask
import nbformat
import psutil
import pytest
from distributed import Client, LocalCluster

from autograd_course.grading import gradebook, record
from autograd_course.grading.course import Course
from autograd_course.testkit import classes, synthetic
from autograd_course.testkit.postgres import Postgres

pytestmark = pytest.mark.services

ASSIGNMENT = "01_gradients"
FULL = classes.full_marks(Path(__file__).parent.parent / "source" / ASSIGNMENT
                          / f"{ASSIGNMENT}.ipynb")
CLASS = synthetic.cycle_profiles(5)  # right, mistakes, blank, mixed, tamper


def grade(course: Path, *args: str, **popen) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "autograd_course", "grade", *args], cwd=course,
                          capture_output=True, text=True, **popen)


def class_course(dest: Path, root: Path, config_extra: str = "", students=CLASS) -> Path:
    config = (root / "nbgrader_config.py").read_text() + config_extra
    classes.make_course(dest, root, [ASSIGNMENT], config=config)
    classes.submit_class(dest, ASSIGNMENT, students, seed=3)
    return dest


def db_url_line(url: str) -> str:
    return f'\nc.CourseDirectory.db_url = "{url}"\n'


def markers(course: Path) -> dict[str, str]:
    return gradebook.graded(Course.load(course), ASSIGNMENT)


@pytest.fixture(scope="module")
def reference(tmp_path_factory, root):
    """The class graded serially by plain nbgrader, into SQLite: the scores to match."""
    course = class_course(tmp_path_factory.mktemp("serial") / "course", root)
    done = classes.nbgrader(course, "autograde", ASSIGNMENT, "--force")
    assert done.returncode == 0, done.stderr[-2000:]
    return course, classes.gradebook_scores(course, ASSIGNMENT)


@pytest.fixture(scope="module")
def postgres():
    with Postgres() as server:
        yield server


# -- PostgreSQL ------------------------------------------------------------------------------


def test_two_runs_into_one_postgresql_gradebook_lose_nothing_and_double_nothing(
        reference, postgres, tmp_path):
    serial, scores = reference
    url = postgres.create_database("two_runs")
    course = classes.copy_course(serial, tmp_path / "course", db_url_line(url))
    runs = [subprocess.Popen([sys.executable, "-m", "autograd_course", "grade", "--jobs", "2"],
                             cwd=course, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True) for _ in range(2)]
    outputs = [run.communicate(timeout=900) for run in runs]
    assert [run.returncode for run in runs] == [0, 0], [err[-2000:] for _, err in outputs]
    # the rule: one waits. The run that waited found everything graded and kept it.
    waited = [out for out, _ in outputs if "waiting for it to finish" in out]
    assert len(waited) == 1, [out for out, _ in outputs]
    assert f"{len(CLASS)} submissions were graded before and have not changed" in waited[0]
    assert classes.gradebook_scores(course, ASSIGNMENT) == scores  # = SQLite, serial nbgrader
    assert set(markers(course)) == {student for student, _ in CLASS}
    with Course.load(course).gradebook() as gb:
        submissions = gb.find_assignment(ASSIGNMENT).submissions
        assert sorted(s.student.id for s in submissions) == sorted(s for s, _ in CLASS)
        assert all(len(n.grades) == 4 for s in submissions for n in s.notebooks)


def test_plain_nbgrader_grades_into_postgresql_with_the_course_config(
        reference, postgres, tmp_path):
    serial, scores = reference
    url = postgres.create_database("plain")
    course = classes.copy_course(serial, tmp_path / "course", db_url_line(url))
    released = classes.nbgrader(course, "generate_assignment", ASSIGNMENT, "--force")
    assert released.returncode == 0, released.stderr[-2000:]
    for student in ("student001", "student002"):
        done = classes.nbgrader(course, "autograde", ASSIGNMENT, "--force", f"--student={student}")
        assert done.returncode == 0, done.stderr[-2000:]
    graded = classes.gradebook_scores(course, ASSIGNMENT)
    assert graded == {s: scores[s] for s in ("student001", "student002")}


# -- a Dask cluster --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def cluster():
    # a task whose worker dies is tried again once; the second death is a KilledWorker
    with dask.config.set({"distributed.scheduler.allowed-failures": 1}), LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
            memory_limit=0) as local:
        yield local


def test_grading_on_a_dask_cluster_gives_the_serial_scores_progress_and_report(
        reference, cluster, tmp_path, root):
    serial, scores = reference
    local = classes.copy_course(serial, tmp_path / "local")
    by_processes = grade(local, "--jobs", "2")
    course = classes.copy_course(serial, tmp_path / "dask")
    on_cluster = grade(course, "--scheduler", cluster.scheduler_address)
    assert on_cluster.returncode == 0, on_cluster.stderr[-2000:]
    assert f"on the Dask cluster {cluster.scheduler_address}" in on_cluster.stdout
    assert classes.gradebook_scores(course, ASSIGNMENT) == scores
    n = len(CLASS)
    for run in (by_processes, on_cluster):  # the same progress bar and summary
        assert "grading: 100%" in run.stderr and f"{n}/{n} [" in run.stderr
        assert f"{n} submissions graded: 0 could not be graded" in run.stdout
    report = "reports/01_gradients/report.csv"
    assert (course / report).read_text() == (local / report).read_text()


def test_a_worker_killed_mid_class_has_its_submission_graded_elsewhere_once(
        reference, cluster, tmp_path):
    serial, scores = reference
    course = classes.copy_course(serial, tmp_path / "course")
    # one submission takes a while, so that its worker can be killed while it grades it
    slow = classes.fill(course / "release" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", {})
    slow.cells.insert(2, nbformat.v4.new_code_cell("import time\ntime.sleep(8)"))
    classes.submit(course, "slowpoke", ASSIGNMENT, ASSIGNMENT, slow)
    killed = []

    def kill_the_worker_grading_slowpoke():
        with Client(cluster.scheduler_address) as client:
            for _ in range(600):
                busy = {worker: keys for worker, keys in client.processing().items()
                        if any("slowpoke" in str(k) for k in keys)}
                if busy:
                    time.sleep(2)  # let it start the notebook
                    pids = client.run(os.getpid, workers=list(busy))
                    for pid in pids.values():
                        os.kill(pid, signal.SIGKILL)
                    killed.extend(pids)
                    return
                time.sleep(0.1)

    killer = threading.Thread(target=kill_the_worker_grading_slowpoke)
    killer.start()
    result = grade(course, "--scheduler", cluster.scheduler_address)
    killer.join()
    assert killed, "the test never saw slowpoke being graded"
    assert result.returncode == 0, result.stderr[-2000:]
    graded = classes.gradebook_scores(course, ASSIGNMENT)
    assert graded.pop("slowpoke") == 0  # graded elsewhere: a blank submission
    assert graded == scores
    assert set(markers(course)) == {s for s, _ in CLASS} | {"slowpoke"}
    n = len(CLASS) + 1  # each merged exactly once
    assert f"{n}/{n} [" in result.stderr and f"{n} submissions graded" in result.stdout
    assert "FAILED" not in result.stdout


def _left_behind(matches, seconds: float = 10) -> list[str]:
    """The command lines of processes that ``matches(info)`` still finds after ``seconds``
    (an empty list as soon as none is left)."""
    for _ in range(int(seconds * 10)):
        left = [p.info for p in psutil.process_iter(["cmdline", "ppid", "create_time"])
                if matches(p.info)]
        if not left:
            return []
        time.sleep(0.1)
    return [" ".join(info["cmdline"] or [])[:200] for info in left]


def _orphaned_kernel(since: float):
    """A grading kernel started after ``since`` whose grader is gone (adopted by init)."""
    return lambda info: (info["ppid"] == 1 and info["create_time"] >= since
                         and "ipykernel_launcher" in (info["cmdline"] or []))


def test_a_submission_that_keeps_killing_workers_gets_zero_and_a_reason(cluster, tmp_path, root):
    # Outside the sandbox (where a kernel may signal its parent, the worker), a submission
    # kills every worker that grades it; so would one that brings the OOM killer.
    course = class_course(tmp_path / "course", root, "\nc.JudgedExecute.sandbox = False\n",
                          students=[("ada", "right")])
    killer = classes.fill(course / "release" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", {})
    killer.cells.insert(2, nbformat.v4.new_code_cell("import os, signal\n"
                                             "os.kill(os.getppid(), signal.SIGKILL)"))
    classes.submit(course, "mallory", ASSIGNMENT, ASSIGNMENT, killer)
    started = time.time()
    result = grade(course, "--scheduler", cluster.scheduler_address)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "FAILED  mallory/01_gradients: KilledWorker" in result.stdout
    # her kernels, which outlived the workers they killed, died with them
    assert _left_behind(_orphaned_kernel(since=started)) == []
    assert classes.gradebook_scores(course, ASSIGNMENT) == {"ada": FULL, "mallory": 0.0}
    assert "KilledWorker" in classes.grade_record(course, "mallory", ASSIGNMENT).failure


# -- resuming --------------------------------------------------------------------------------


def test_a_killed_run_resumes_without_regrading_and_manual_grades_survive(reference, tmp_path):
    serial, scores = reference
    course = classes.copy_course(serial, tmp_path / "course")
    run = subprocess.Popen([sys.executable, "-m", "autograd_course", "grade", "--jobs", "1"],
                           cwd=course, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(1200):
        if len(markers(course)) >= 2:
            break
        time.sleep(0.2)
    os.kill(run.pid, signal.SIGKILL)  # the main process, mid-class
    run.wait()
    first = markers(course)
    # its worker processes (and their forkserver, which names the course in its command line)
    # notice and exit: none is left blocked, writing a result that no one will read
    assert _left_behind(lambda info: str(course) in " ".join(info["cmdline"] or [])) == []
    assert 2 <= len(first) < len(CLASS), first
    kept = {s: record.store(course).path(ASSIGNMENT, s, ASSIGNMENT).stat().st_mtime_ns
            for s in first}

    again = grade(course, "--jobs", "2")
    assert again.returncode == 0, again.stderr[-2000:]
    assert f"{len(first)} submissions were graded before and have not changed" in again.stdout
    assert f"{len(CLASS) - len(first)} submissions graded" in again.stdout
    assert classes.gradebook_scores(course, ASSIGNMENT) == scores  # each exactly once
    assert markers(course).keys() == {s for s, _ in CLASS}
    for student, mtime in kept.items():  # not regraded
        path = record.store(course).path(ASSIGNMENT, student, ASSIGNMENT)
        assert path.stat().st_mtime_ns == mtime

    # a teacher grades by hand in formgrader, then a student's submission changes
    with Course.load(course).gradebook() as gb:
        grade_row = gb.find_grade("q1_partials_test", ASSIGNMENT, ASSIGNMENT, "student001")
        grade_row.manual_score, grade_row.extra_credit = 1.5, 0.5
        gb.find_comment("q1_partials", ASSIGNMENT, ASSIGNMENT,
                        "student001").manual_comment = "see me"
        gb.db.commit()
    changed = course / "submitted" / "student003" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    nb = classes.fill(course / "release" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb",
                      classes.reference_answers(course / "source" / ASSIGNMENT
                                                / f"{ASSIGNMENT}.ipynb"))
    nbformat.write(nb, changed)
    third = grade(course, "--jobs", "2")
    assert f"{len(CLASS) - 1} submissions were graded before" in third.stdout
    assert "1 submissions graded" in third.stdout
    assert classes.gradebook_scores(course, ASSIGNMENT)["student003"] == FULL

    forced = grade(course, "--force", "--student", "student001")  # unchanged: graded again
    assert "1 submissions graded" in forced.stdout
    with Course.load(course).gradebook() as gb:
        grade_row = gb.find_grade("q1_partials_test", ASSIGNMENT, ASSIGNMENT, "student001")
        assert (grade_row.manual_score, grade_row.extra_credit) == (1.5, 0.5)
        assert grade_row.auto_score == 2.0 and grade_row.needs_manual_grade
        assert gb.find_comment("q1_partials", ASSIGNMENT, ASSIGNMENT,
                               "student001").manual_comment == "see me"
