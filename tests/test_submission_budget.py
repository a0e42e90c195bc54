"""One budget per submission, held from outside the work it bounds; pages made of bounded,
inert text; a student's files never served as pages (issue 28, items 3 and 7).

- a grading child that outruns its budget is killed with everything under it, that
  submission fails for time and the others are graded (:mod:`autograd_course.grading.bounded`,
  the runner's pool), under ``autograd-course grade`` and ``check`` with a grader step that
  sleeps (tests/support/slow_step.py, patched in the children only);
- MakeInert strips terminal escape codes and caps the outputs a page is made of;
- files beside the notebook or written by the kernel reach ``autograded/`` only under names
  Jupyter serves as text or a download (checked with Jupyter's own files handler), and
  ``feedback/`` not at all: the page lists them as text; under plain nbgrader too.
"""

from __future__ import annotations

import multiprocessing
import os
import shutil
import subprocess
import sys
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat
import psutil
import pytest
from traitlets.config import Config

from autograd_course.grading import bounded, runner, served, tasks
from autograd_course.grading.boundary import sandbox
from autograd_course.grading.course import Submission
from autograd_course.grading.preprocessors import FeedbackExporter, ListOtherFiles, MakeInert
from autograd_course.grading.preprocessors.inert import MAX_CELL, MAX_NOTEBOOK
from autograd_course.testkit import classes as course

sys.path.insert(0, str(Path(__file__).resolve().parent / "fixtures"))
import hostile_class  # noqa: E402
from support.lab import TOKEN, running_lab  # noqa: E402
from support.toy import make_class  # noqa: E402

SUPPORT = Path(__file__).resolve().parent / "support"


# -- the budget, held by the parent ------------------------------------------------------------
class OddError(Exception):
    """An exception that pickles but cannot be made again from its pickle."""

    def __init__(self, first, second):
        super().__init__(f"{first} {second}")


def _fake_grade(task, bundle):
    """Grading as the hostile cases make it go: sleep (with a process under it), spin, exit,
    die, or give a result at once."""
    who = task.submission.student
    if who == "sleeper":
        child = subprocess.Popen(["sleep", "600"])
        Path(bundle.settings["pids"], "sleeper").write_text(str(child.pid))
        time.sleep(600)
    elif who == "spinner":
        while True:
            pass
    elif who == "exits":
        raise SystemExit(0)
    elif who == "dies":
        os.kill(os.getpid(), 9)
    elif who == "odd":
        raise OddError("no", "pickle")
    return tasks.Outcome(task.submission, True, task.digest, records={"toy": who})


def _gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def test_a_grading_past_its_budget_fails_for_time_and_the_class_goes_on(monkeypatch, tmp_path):
    monkeypatch.setattr(tasks, "grade", _fake_grade)  # forked children inherit it
    monkeypatch.setattr(runner, "_context", lambda: multiprocessing.get_context("fork"))
    names = ["honest1", "sleeper", "spinner", "exits", "dies", "odd", "honest2"]
    todo = [tasks.Task(Submission(name, "toy"), {}, name) for name in names]
    bundle = tasks.Bundle(("toy",), b"", {"pids": str(tmp_path)})
    started = time.monotonic()
    outcomes = {o.submission.student: o
                for o in runner._on_this_machine(todo, bundle, 2, {"toy": 3})}
    assert time.monotonic() - started < 60  # not the hour the sleeper asked for
    assert sorted(outcomes) == sorted(names)
    for name in ("honest1", "honest2"):
        assert outcomes[name].ok and outcomes[name].records == {"toy": name}
    for name in ("sleeper", "spinner"):
        assert not outcomes[name].ok
        assert "time budget of 3 s" in outcomes[name].error.splitlines()[-1], name
    assert not outcomes["exits"].ok and "SystemExit" in outcomes["exits"].error
    assert not outcomes["dies"].ok and outcomes["dies"].error == tasks.KILLED
    assert not outcomes["odd"].ok and outcomes["odd"].error == "OddError: no pickle"
    # the process the sleeper started died with its grading child
    pid = int((tmp_path / "sleeper").read_text())
    for _ in range(50):
        if _gone(pid):
            break
        time.sleep(0.1)
    assert _gone(pid)


def _marked_grade(task, bundle):
    """Grading that leaves a file named for the submission when it starts."""
    Path(bundle.settings["marks"], task.submission.student).touch()
    return tasks.Outcome(task.submission, True, task.digest)


def test_a_child_grades_its_next_submission_while_the_last_is_merged(monkeypatch, tmp_path):
    monkeypatch.setattr(tasks, "grade", _marked_grade)  # forked children inherit it
    monkeypatch.setattr(runner, "_context", lambda: multiprocessing.get_context("fork"))
    todo = [tasks.Task(Submission(name, "toy"), {}, name) for name in ("first", "second")]
    bundle = tasks.Bundle(("toy",), b"", {"marks": str(tmp_path)})
    results = runner._on_this_machine(todo, bundle, 1, {"toy": 60})
    try:
        assert next(results).submission.student == "first"
        # the caller merges "first" now: the one child already grades "second"
        for _ in range(300):
            if (tmp_path / "second").exists():
                break
            time.sleep(0.1)
        assert (tmp_path / "second").exists()
        assert next(results).submission.student == "second"
    finally:
        results.close()


def _collector() -> tuple[int, int]:
    import gc

    return gc.get_freeze_count(), gc.get_threshold()[0]


def test_a_grading_child_never_collects_what_it_inherited():
    bundle = tasks.Bundle(("toy",), b"", {})  # nothing to unpack: grading it would fail
    child = bounded.Child(multiprocessing.get_context("fork"), tasks.serve, (bundle,))
    try:
        frozen, young = child.call(_collector, seconds=60)
    finally:
        child.close()
    assert frozen > 10_000 and young == tasks.YOUNG_OBJECTS


def _ends_after(scratch: str, folder: str, me: str, partner: str | None) -> None:
    """A child that, as it ends, says so in ``folder`` once ``partner`` has said so."""
    import multiprocessing.util

    def ending() -> None:
        for _ in range(600):
            if partner is None or (Path(folder) / partner).exists():
                break
            time.sleep(0.05)
        (Path(folder) / me).touch()

    multiprocessing.util.Finalize(None, ending, exitpriority=10)


def test_children_closed_together_end_together(tmp_path):
    fork = multiprocessing.get_context("fork")
    first = bounded.Child(fork, _ends_after, (str(tmp_path), "first", "second"))
    second = bounded.Child(fork, _ends_after, (str(tmp_path), "second", None))
    bounded.close_all([first, second])  # the first ends only once the second is ending
    assert first.process.exitcode == 0 and second.process.exitcode == 0


def test_kill_tree_kills_what_a_child_started():
    process = subprocess.Popen(["sh", "-c", "sleep 600 & sleep 600 & wait"])
    for _ in range(50):
        under = bounded.descendants(process.pid)
        if len(under) == 2:
            break
        time.sleep(0.05)
    assert len(under) == 2
    bounded.kill_tree(process.pid)
    process.wait(10)
    for _ in range(50):
        if all(_gone(pid) for pid in under):
            break
        time.sleep(0.1)
    assert all(_gone(pid) for pid in under)


def _die() -> None:
    os.kill(os.getpid(), 9)


def test_a_child_that_died_is_never_looked_for_by_its_old_pid(monkeypatch):
    """Once a child is reaped its pid may be another process's (found in the suite: a
    JupyterHub service started meanwhile was killed): kill() signals no reaped pid."""
    child = bounded.Child(bounded.context([]))
    with pytest.raises(bounded.Died):
        child.call(_die, seconds=60)
    signalled = []
    monkeypatch.setattr(bounded, "kill_tree", signalled.append)
    child.kill()
    child.close()
    assert child.process.exitcode is not None and signalled == []


# -- pages made of bounded, inert text -----------------------------------------------------
ANSI_LINE = "".join(f"\x1b[{31 + i % 7}m#" for i in range(170_000))  # about 1 MB


def _noisy_notebook() -> nbformat.NotebookNode:
    cells = []
    for _ in range(6):
        cell = nbformat.v4.new_code_cell("print(line)")
        cell.outputs = [
            nbformat.v4.new_output("stream", name="stdout", text=(ANSI_LINE + "\n") * 4),
            nbformat.v4.new_output("error", ename="\x1b[31mValueError\x1b[0m",
                                   evalue="\x1b]8;;http://x\x07no\x1b]8;;\x07",
                                   traceback=["\x1b[0;31mTraceback\x1b[0m", ANSI_LINE]),
            nbformat.v4.new_output("execute_result", data={"text/plain": ANSI_LINE},
                                   execution_count=1),
        ]
        cells.append(cell)
    return nbformat.v4.new_notebook(cells=cells)


def test_pages_hold_no_escape_codes_and_a_capped_share_of_the_outputs():
    nb, _ = MakeInert(config=Config()).preprocess(_noisy_notebook(), {"nbgrader": {}})
    kept = nbformat.writes(nb)
    assert "\\u001b" not in kept and "\x1b" not in kept and "\\u009b" not in kept
    sizes = [len(nbformat.writes(nbformat.v4.new_notebook(cells=[c]))) for c in nb.cells]
    assert all(size < MAX_CELL + 64 * 1024 for size in sizes), sizes
    assert len(kept) < MAX_NOTEBOOK + 64 * 1024
    assert "the grader cut this cell's outputs here" in kept
    assert "[the grader cut" in nb.cells[-1].outputs[-1].text  # past the notebook's share
    page, _ = FeedbackExporter(config=Config()).from_notebook_node(nb)
    assert len(page) < MAX_NOTEBOOK + 2 * 2**20 and "<span class=\"ansi-" not in page


# -- a student's files -------------------------------------------------------------------------
LIVE = hostile_class.LIVE_PAGE


def test_unsafe_names_get_text_names_and_links_go(tmp_path):
    (tmp_path / "sub").mkdir()
    for name in ("evil.html", "evil.svg", "sub/evil.xhtml", "data.csv", "evil.html.txt",
                 "toy.ipynb", "README", "x.JS"):
        (tmp_path / name).write_bytes(LIVE)
    (tmp_path / "link.csv").symlink_to("/etc/passwd")
    renamed = served.make_safe(tmp_path, {"toy.ipynb"})
    assert renamed == {"evil.html": "evil.html.1.txt", "evil.svg": "evil.svg.txt",
                       "sub/evil.xhtml": "sub/evil.xhtml.txt", "README": "README.txt",
                       "x.JS": "x.JS.txt"}
    left = {str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_file()}
    assert left == {"data.csv", "evil.html.txt", "evil.html.1.txt", "evil.svg.txt",
                    "sub/evil.xhtml.txt", "README.txt", "x.JS.txt", "toy.ipynb"}
    assert not (tmp_path / "link.csv").is_symlink()


def test_the_students_files_are_made_safe_whatever_becomes_of_the_notebook(tmp_path):
    """nbgrader copies the student's files into autograded/ before it reads the notebook:
    they get safe names even when reading or grading it fails (found by a hostile review)."""
    from autograd_course.grading.preprocessors import TolerantNotebookExporter

    graded = tmp_path / "autograded" / "ada" / "toy"
    graded.mkdir(parents=True)
    (graded / "evil.html").write_bytes(LIVE)
    config = Config()
    config.CourseDirectory.root = str(tmp_path)
    resources = {"nbgrader": {"student": "ada", "assignment": "toy", "notebook": "toy"}}
    with pytest.raises(FileNotFoundError):  # the notebook itself is gone
        TolerantNotebookExporter(config=config).from_filename(str(graded / "toy.ipynb"),
                                                               resources=resources)
    assert sorted(p.name for p in graded.iterdir()) == ["evil.html.txt"]


def test_feedback_keeps_no_file_of_the_student_and_lists_them_as_text(tmp_path):
    graded = tmp_path / "autograded" / "ada" / "toy"
    feedback = tmp_path / "feedback" / "ada" / "toy"
    for folder in (graded, feedback):
        (folder / "sub").mkdir(parents=True)
        for name in ("evil.html", "evil.html.txt", "sub/evil.svg", "timestamp.txt"):
            (folder / name).write_bytes(LIVE)
    (feedback / "submission_secret.txt").write_text("0123")  # the exchange's: release reads it
    (graded / "toy.ipynb").write_text("{}")
    (feedback / "toy.html").write_text("the page of an earlier run")
    config = Config()
    config.CourseDirectory.root = str(tmp_path)
    resources = {"nbgrader": {"student": "ada", "assignment": "toy", "notebook": "toy"},
                 "metadata": {"path": str(graded)}}
    nb, _ = ListOtherFiles(config=config).preprocess(nbformat.v4.new_notebook(), resources)
    assert sorted(p.name for p in feedback.rglob("*")) == ["submission_secret.txt",
                                                           "timestamp.txt", "toy.html"]
    listing = nb.cells[-1].source
    assert "```text\n" in listing and f"evil.html ({len(LIVE)} bytes)" in listing
    assert f"sub/evil.svg ({len(LIVE)} bytes)" in listing and "timestamp" not in listing


@pytest.mark.services
def test_jupyter_serves_every_kept_name_as_text_an_image_or_a_download(tmp_path):
    names = [f"kept{suffix}" for suffix in served.SAFE_SUFFIXES] + [
        served.safe_name("evil.html"), served.safe_name("evil.svg"), served.safe_name("a.js"),
        served.safe_name("a.xhtml"), served.safe_name("a.xml"), served.safe_name("plain")]
    for name in names:
        assert served.is_safe(name), name
        (tmp_path / name).write_bytes(LIVE)
    shown = {"text/plain", "text/csv", "text/tab-separated-values", "text/x-python",
             "application/json", "application/octet-stream", "image/png", "image/jpeg"}
    with running_lab(tmp_path, tmp_path.parent / "lab.log") as lab:
        for name in names:
            request = urllib.request.Request(f"{lab.base}/files/{name}",
                                             headers={"Authorization": f"token {TOKEN}"})
            with urllib.request.urlopen(request, timeout=30) as answer:
                kind = answer.headers["Content-Type"].split(";")[0].strip()
                assert kind in shown, (name, kind)
                assert answer.headers["X-Content-Type-Options"] == "nosniff", name


# -- whole gradings: autograd-course grade, check and plain nbgrader ---------------------------
STUDENTS = ["right", "attack_ansi_output", "attack_live_pages"]
SECONDS = 75  # the submission's budget in these courses: an honest toy notebook takes ~10 s


def _with_slow_step(command: str, preload: str) -> list[str]:
    """``python -m autograd_course COMMAND...`` whose grading children preload slow_step
    (found on PYTHONPATH: a forkserver does not take its parent's sys.path)."""
    return [sys.executable, "-c",
            f"import sys; from autograd_course.grading import {preload}; "
            f"{preload}.PRELOAD.append('slow_step'); "
            f"from autograd_course.cli import main; sys.exit(main({command.split()!r}))"]


@pytest.fixture(scope="module")
def graded(tmp_path_factory, root):
    assert sandbox.bubblewrap(), "bubblewrap (bwrap) is required"
    base = make_class(tmp_path_factory.mktemp("budget"), root, STUDENTS)
    release = base / "release" / "toy" / "toy.ipynb"
    for slow in ("slow_feedback", "slow_check"):  # honest work, with a grader step that sleeps
        hostile_class.write(base / "submitted" / slow / "toy", "right",
                            lambda a: course.fill(release, a))
    with open(base / "nbgrader_config.py", "a") as config:
        config.write(f"\nc.JudgedExecute.submission_seconds = {SECONDS}\n")
    plain = tmp_path_factory.mktemp("budget-plain") / "course"
    shutil.copytree(base, plain)
    checked = [str(base / "submitted" / s / "toy" / "toy.ipynb") for s in ("slow_check", "right")]
    started = time.time()

    path = os.pathsep.join(p for p in (str(SUPPORT), os.environ.get("PYTHONPATH")) if p)

    def run(argv, cwd):
        return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=900,
                              env=dict(os.environ, PYTHONPATH=path))

    with ThreadPoolExecutor(3) as pool:
        by_cli = pool.submit(run, _with_slow_step("grade toy --jobs 2", "tasks"), base)
        check = pool.submit(run, _with_slow_step("check " + " ".join(checked), "selfcheck"),
                            base)
        by_plain = pool.submit(lambda: (course.nbgrader(plain, "autograde", "toy", "--force"),
                                        course.nbgrader(plain, "generate_feedback", "toy",
                                                        "--force")))
        return dict(base=base, plain=plain, cli=by_cli.result(), check=check.result(),
                    nbgrader=by_plain.result(), started=started)


@pytest.mark.class_grading
def test_a_grader_step_past_the_budget_fails_that_submission_alone(graded):
    result = graded["cli"]
    assert result.returncode == 0, result.stderr[-3000:]
    slow = course.grade_record(graded["base"], "slow_feedback", "toy")
    assert f"time budget of {SECONDS} s" in slow.failure and slow.score == 0
    assert course.grade_record(graded["base"], "right", "toy").score == 4
    for student in ("attack_ansi_output", "attack_live_pages"):
        rec = course.grade_record(graded["base"], student, "toy")
        assert rec.failure is None and rec.score == 0, (student, rec.failure)
    assert (graded["base"] / "feedback" / "right" / "toy" / "toy.html").is_file()


@pytest.mark.class_grading
def test_check_past_the_budget_fails_that_notebook_and_checks_the_next(graded):
    out = graded["check"].stdout
    assert graded["check"].returncode != 0
    first, second = out.split("submitted/right/", 1)
    assert "FAILED" in first and f"time budget of {SECONDS} s" in first
    assert "PASS" in second and "FAIL" not in second
    # the process the slow step started died with the grading child
    left = [p.info for p in psutil.process_iter(["cmdline", "create_time"])
            if p.info["cmdline"] == ["sleep", "3601"] and p.info["create_time"] >= graded[
                "started"] and p.status() != psutil.STATUS_ZOMBIE]
    assert left == []


@pytest.mark.class_grading
@pytest.mark.parametrize("grader", ["base", "plain"])
def test_escape_codes_never_reach_a_page_and_pages_stay_small(graded, grader):
    if grader == "plain":
        for step in graded["nbgrader"]:
            assert step.returncode == 0, step.stderr[-3000:]
    where = graded[grader]
    page = where / "feedback" / "attack_ansi_output" / "toy" / "toy.html"
    text = page.read_text()
    assert "\x1b" not in text and "<span class=\"ansi-" not in text and "#####" in text
    assert page.stat().st_size < MAX_NOTEBOOK + 2 * 2**20
    notebook = nbformat.read(where / "autograded" / "attack_ansi_output" / "toy" / "toy.ipynb",
                             as_version=4)
    assert "the grader cut this cell's outputs here" in nbformat.writes(notebook)


@pytest.mark.class_grading
@pytest.mark.parametrize("grader", ["base", "plain"])
def test_student_files_are_never_served_as_pages(graded, grader):
    where = graded[grader]
    graded_folder = where / "autograded" / "attack_live_pages" / "toy"
    kept = {str(p.relative_to(graded_folder)) for p in graded_folder.rglob("*") if p.is_file()}
    assert {"evil.html.txt", "evil.svg.txt", "pages/evil.xhtml.txt", "written.html.txt",
            "written.svg.txt", "written.js.txt"} <= kept
    assert all(served.is_safe(name) or name == "toy.ipynb" for name in kept), kept
    assert (graded_folder / "evil.html.txt").read_bytes() == LIVE
    for student in STUDENTS:
        feedback = where / "feedback" / student / "toy"
        kept = {p.name for p in feedback.rglob("*")}  # timestamp.txt where one was submitted
        assert "toy.html" in kept and kept <= {"timestamp.txt", "submission_secret.txt",
                                               "toy.html"}, kept
    page = (where / "feedback" / "attack_live_pages" / "toy" / "toy.html").read_text()
    assert f"evil.html.txt ({len(LIVE)} bytes)" in page
    assert "<script>document.title" not in page


def test_a_forkserver_started_early_and_never_used_is_stopped_at_once():
    from multiprocessing import forkserver

    ctx = bounded.context(["json"])
    forkserver._forkserver._stop()  # noqa: SLF001 - start from no forkserver
    bounded.start_early(ctx)
    pid = forkserver._forkserver._forkserver_pid  # noqa: SLF001
    assert pid is not None and psutil.pid_exists(pid)
    bounded.stop_early()  # a run that graded nothing
    assert forkserver._forkserver._forkserver_pid is None and not psutil.pid_exists(pid)  # noqa: SLF001


def test_a_forkserver_a_child_was_started_from_is_left_running():
    from multiprocessing import forkserver

    ctx = bounded.context(["json"])
    bounded.start_early(ctx)
    child = bounded.Child(ctx)
    try:
        bounded.stop_early()
        pid = forkserver._forkserver._forkserver_pid  # noqa: SLF001
        assert pid is not None and psutil.pid_exists(pid)
        assert child.call(os.getpid, seconds=60) == child.process.pid
    finally:
        child.close()
