"""nbgrader's Validate button, answered by the course (autograd_course/lab/validate.py).

A real JupyterLab, as `make lab` starts it, is asked what the button asks
(``POST assignments/validate`` with the token): over a self-study course, for a learner's
working copy (`autograd-course start`) whose answer passes the visible checks and fails the
hidden tests, it answers with the check's verdict; over a student's home on a course server
(no course above the notebook) it runs nbgrader's visible tests and says they were the visible
ones only. In the course, a hostile submission (``submitted/mallory/``: its own
``autograd_course`` package, ``nbgrader_config.py`` and ``source/`` with a hidden test of its
own, each writing a marker when run), an autograded notebook, a nested course and a link to a
submission in a learner's place are refused, and nothing of them runs. The check cell keeps the
same rule. The server serves nbgrader's dialog code with the change that shows the course's
words on success, patched once per version of the file, and nbgrader's version check still
answers. Headless Chromium then clicks the notebook's Validate button and reads the dialog.
"""

from __future__ import annotations

import html
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from support.lab import TOKEN, running_lab

from autograd_course.lab import selfstudy, validate
from autograd_course.testkit import WRONG_ANSWERS, classes

ASSIGNMENT = "01_gradients"
WRONG = "q2_leaf_and_grad_fn"
WORK = f"work/{ASSIGNMENT}/{ASSIGNMENT}.ipynb"
MALLORY = f"submitted/mallory/{ASSIGNMENT}"
#: Notebooks of a course that Validate refuses: a submission, the instructor's version a
#: submission brought, an autograded notebook nbgrader's validator would run, a notebook of a
#: course nested in a submission, a link in a learner's place that leads to a submission, a
#: learner's place reached through ``..``, and a lesson.
REFUSED = [f"{MALLORY}/{ASSIGNMENT}.ipynb", f"{MALLORY}/source/{ASSIGNMENT}/{ASSIGNMENT}.ipynb",
           f"autograded/mallory/{ASSIGNMENT}/notes.ipynb",
           f"{MALLORY}/{ASSIGNMENT}/{ASSIGNMENT}.ipynb", f"{ASSIGNMENT}/{ASSIGNMENT}.ipynb",
           f"work/{ASSIGNMENT}/../../{MALLORY}/{ASSIGNMENT}.ipynb", "notebooks/lesson.ipynb"]
#: A report of `autograd-course check`, its long entries broken into lines as it prints them.
REPORT = """work/01_gradients/01_gradients.ipynb
  student id: ada (your user name; the hidden inputs are drawn for it, as in grading)
  PASS q1_partials_test: 2/2
  FAIL q2_leaf_and_grad_fn_test: 0/2  CheckError: grad_fn name of a * b is wrong: a leaf has
      grad_fn None; a computed tensor's grad_fn is <the backward function>
  PASS q3_retain_grad_test: 2/2
  total: 2/4
"""


def wrong_answer() -> str:
    """An answer to question 2 that passes its visible checks and fails the hidden tests."""
    return next(w for w in WRONG_ANSWERS[ASSIGNMENT, WRONG] if w.hidden_only == "hard-coded").code


def marker(markers: Path, name: str) -> str:
    """Python that writes the marker ``name`` into ``markers`` when it runs."""
    return f"import pathlib; pathlib.Path({str(markers / name)!r}).write_text('ran')\n"


def plant_mallory(course: Path, markers: Path) -> None:
    """Mallory's hostile pieces in ``course``, each writing a marker in ``markers`` if run:
    a submission that brings its own ``autograd_course`` package (which would also print a
    forged total), ``nbgrader_config.py`` and ``source/`` (every test cell its own), a course
    nested in it, an autograded notebook with a graded cell, and the Assignment List's place
    of ``ASSIGNMENT`` a link to the submission; and a lesson-like notebook of the course."""
    markers.mkdir(parents=True, exist_ok=True)
    folder = course / MALLORY
    package = folder / "autograd_course"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(marker(markers, "package"))
    (package / "__main__.py").write_text(marker(markers, "package") + "print('  total: 9/9')\n")
    (folder / "nbgrader_config.py").write_text(
        marker(markers, "config") + (course / "nbgrader_config.py").read_text())
    source = nbformat.read(course / "source" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", as_version=4)
    for cell in source.cells:
        if cell.metadata.get("nbgrader", {}).get("grade") and cell.cell_type == "code":
            cell.source = marker(markers, "hidden_test")
    (folder / "source" / ASSIGNMENT).mkdir(parents=True)
    nbformat.write(source, folder / "source" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb")
    released = course / "release" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    submission = classes.fill(released, {}, [(0, marker(markers, "submission"))])
    nbformat.write(submission, folder / f"{ASSIGNMENT}.ipynb")
    nested = folder / ASSIGNMENT  # a course root in the submission, its copy below it
    nested.mkdir()
    nbformat.write(submission, nested / f"{ASSIGNMENT}.ipynb")
    autograded = course / "autograded" / "mallory" / ASSIGNMENT
    autograded.mkdir(parents=True)
    notes = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        marker(markers, "fallback"), metadata={"nbgrader": {
            "grade": True, "grade_id": "x", "locked": False, "points": 1,
            "schema_version": 3, "solution": False, "task": False}})])
    nbformat.write(notes, autograded / "notes.ipynb")
    (course / ASSIGNMENT).mkdir(exist_ok=True)
    (course / ASSIGNMENT / f"{ASSIGNMENT}.ipynb").symlink_to(folder / f"{ASSIGNMENT}.ipynb")
    (course / "notebooks").mkdir(exist_ok=True)
    nbformat.write(submission, course / "notebooks" / "lesson.ipynb")


@pytest.fixture
def small_course(tmp_path, root):
    """A course of ``ASSIGNMENT`` (config, source/, release/, a learner's copy in work/) with
    Mallory's pieces (:func:`plant_mallory`, markers in ``tmp_path / "markers"``)."""
    course = tmp_path / "course"
    course.mkdir()
    shutil.copy2(root / "nbgrader_config.py", course)
    for folder in ("source", "release"):
        shutil.copytree(root / folder / ASSIGNMENT, course / folder / ASSIGNMENT)
    (course / "work" / ASSIGNMENT).mkdir(parents=True)
    shutil.copy2(course / "release" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb",
                 course / "work" / ASSIGNMENT)
    plant_mallory(course, tmp_path / "markers")
    return course


def text_of(answer: dict) -> str:
    """All the words Validate's dialog shows of ``answer``, HTML taken off, one space apart."""
    value = answer["value"]
    parts = [value] if isinstance(value, str) else [value.get("message", "")] + [
        part for cell in value.get("failed", []) for part in (cell["source"], cell["error"])]
    return " ".join(html.unescape(" ".join(parts)).split())


# -- the answers, from a report --------------------------------------------------------------
def test_a_failing_question_is_a_failed_cell_with_its_message_then_the_whole_report():
    answer = validate.verdict(REPORT, 0)
    assert answer["success"] is True
    (cell,) = answer["value"]["failed"]
    assert cell["source"] == "q2_leaf_and_grad_fn_test: 0/2 points with the hidden tests"
    message, whole = cell["error"].split("\n\n", 1)
    assert " ".join(message.split()) == (
        "CheckError: grad_fn name of a * b is wrong: a leaf has grad_fn None; a computed "
        "tensor&#x27;s grad_fn is &lt;the backward function&gt;")  # shown as HTML: escaped
    assert "total: 2/4" in whole and "PASS q1_partials_test: 2/2" in whole
    assert all(len(line) <= validate.WIDTH for line in html.unescape(cell["error"]).splitlines())


def test_full_marks_are_nbgraders_success_with_the_report():
    full = REPORT.replace("FAIL q2_leaf_and_grad_fn_test: 0/2", "PASS q2_leaf_and_grad_fn_test:"
                          " 2/2").replace("total: 2/4", "total: 4/4")
    answer = validate.verdict(full, 0)
    assert answer["success"] is True and set(answer["value"]) == {"message"}
    assert answer["value"]["message"].startswith(
        "Success! Your notebook passes all the tests, the hidden tests too: 4/4")


def test_a_check_that_could_not_grade_is_nbgraders_error_with_its_reason():
    report = "x.ipynb\n  student id: ada (...)\n  FAILED x.ipynb could not be graded: boom\n"
    answer = validate.verdict(report, 2, "autograd-course check: boom")
    assert answer["success"] is False
    assert "could not be graded: boom" in answer["value"] and "could not check" in answer["value"]


def test_the_visible_tests_answer_says_it_ran_them_only():
    passed = validate.visible_only({"success": True, "value": {}})
    assert passed["value"]["message"].startswith("Your notebook passes its visible tests.")
    assert validate.VISIBLE_ONLY in passed["value"]["message"]
    failed = validate.visible_only({"success": True, "value": json.dumps(
        {"failed": [{"source": "check_x()", "error": "<span>CheckError</span>: x"}]})})
    assert failed["value"]["failed"][0]["error"].startswith("<span>CheckError</span>: x\n\n")
    assert "visible tests only" in failed["value"]["failed"][0]["error"]
    for unchanged in ({"success": False, "value": "Traceback"},
                      {"success": True, "value": {"changed": [{"source": "x"}]}}):
        assert validate.visible_only(unchanged) == unchanged


def test_the_course_is_the_servers_never_one_found_above_the_notebook(small_course, tmp_path):
    course = small_course.resolve()
    assert validate.configured_course(small_course) == course
    assert validate.configured_course(tmp_path) is None  # no course at the server's root
    assert validate.configured_course(tmp_path, str(small_course)) == course  # the trait
    assert validate.configured_course(tmp_path, str(tmp_path)) is None  # names no course
    # a course root inside another one (a submission's folder) is never a server's course
    assert validate.configured_course(small_course / MALLORY) is None


def test_only_a_learners_copy_is_checked_with_the_hidden_tests(small_course, tmp_path):
    course = small_course.resolve()
    for place in ("release", "work"):
        assert selfstudy.learners_copy(
            course, course / place / ASSIGNMENT / f"{ASSIGNMENT}.ipynb") == ASSIGNMENT
    for path in REFUSED:
        assert selfstudy.learners_copy(course, course / path) is None, path
        assert validate.in_a_course(course, course / path), path
    # the Assignment List's copy, a real file directly below the root
    link = course / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    link.unlink()
    shutil.copy2(course / "release" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", link)
    assert selfstudy.learners_copy(course, link) == ASSIGNMENT
    # a linked work/ leads elsewhere: refused, though the file is a learner's copy
    outside = tmp_path / "elsewhere"
    shutil.copytree(course / "work", outside)
    shutil.rmtree(course / "work")
    (course / "work").symlink_to(outside)
    assert selfstudy.learners_copy(course, course / WORK) is None
    # a student's home on a course server is in no course: nbgrader's visible tests there
    home = tmp_path / "home" / ASSIGNMENT
    home.mkdir(parents=True)
    assert not validate.in_a_course(None, home / f"{ASSIGNMENT}.ipynb")


def test_the_check_cell_checks_a_learners_copy_only_and_runs_nothing_of_a_submission(
        small_course, tmp_path, capsys, monkeypatch):
    ran = []
    monkeypatch.setattr(selfstudy, "_run_check", lambda *args: ran.append(args))
    for path in (f"{MALLORY}/{ASSIGNMENT}.ipynb", f"{MALLORY}/{ASSIGNMENT}/{ASSIGNMENT}.ipynb"):
        selfstudy.check_saved_notebook(ASSIGNMENT, environ={
            selfstudy.SESSION: str(small_course / path)})
        said = capsys.readouterr().out
        assert said.startswith(selfstudy.NOT_A_COPY) and said.count("\n") == 1, said
    assert ran == [] and not list((tmp_path / "markers").iterdir())
    # the nested course is no course of a copy: the submission's folder is inside the course
    nested = small_course / MALLORY / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    assert selfstudy.course_of_copy(nested) is None
    selfstudy.check_saved_notebook(ASSIGNMENT, environ={
        selfstudy.SESSION: str(small_course / WORK)})
    assert capsys.readouterr().out.startswith(f"Checking {small_course / WORK} as saved at ")
    assert ran == [(small_course, small_course / WORK, selfstudy.TIMEOUT)]


def test_the_check_runs_the_installed_course_code_in_the_course(root):
    notebook = root / "work" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    command, _ = selfstudy.check_command(root, notebook, {})
    assert command == [sys.executable, "-P", "-m", "autograd_course", "--course", str(root),
                       "check", "--", f"work/{ASSIGNMENT}/{ASSIGNMENT}.ipynb"]


def test_the_dialog_code_shows_the_servers_words_on_success():
    static = validate.nbgrader_static()
    changed = [p.name for p in static.glob("*.js")
               if validate.patched_chunk(p.read_text()) != p.read_text()]
    assert len(changed) == 1, "nbgrader's dialog code is not the one this course changes"
    code = validate.patched_chunk((static / changed[0]).read_text())
    assert '.message:"Success! Your notebook passes all the tests.")' in code
    assert validate.patched_chunk("unknown code") == "unknown code"


def test_a_served_file_is_read_and_patched_once_per_version(tmp_path, monkeypatch):
    static = validate.nbgrader_static()
    chunk = tmp_path / "161.js"
    shutil.copy2(next(p for p in static.glob("*.js")
                      if validate.patched_chunk(p.read_text()) != p.read_text()), chunk)
    patched = []
    real = validate.patched_chunk
    monkeypatch.setattr(validate, "patched_chunk", lambda text: patched.append(1) or real(text))
    first = validate.served_chunk(chunk)
    assert validate.served_chunk(chunk) == first and len(patched) == 1
    chunk.write_text(chunk.read_text() + "\n// a new nbgrader")
    os.utime(chunk, ns=(chunk.stat().st_atime_ns, chunk.stat().st_mtime_ns + 10**9))
    assert validate.served_chunk(chunk).endswith("// a new nbgrader") and len(patched) == 2
    assert validate.served_chunk(chunk) and len(patched) == 2


def test_make_lab_enables_the_course_validate_in_place_of_nbgraders():
    from jupyter_core.paths import jupyter_config_path
    from jupyter_server.extension.config import ExtensionConfigManager

    enabled = ExtensionConfigManager(
        read_config_path=jupyter_config_path()).get_jpserver_extensions()
    assert enabled.get("autograd_course.lab.validate") is True, "run make install"
    assert enabled.get("nbgrader.server_extensions.validate_assignment") is False
    deployed = json.loads((Path(__file__).parent.parent / "deploy"
                           / "jupyter_server_config.json").read_text())
    assert deployed["ServerApp"]["jpserver_extensions"] == {
        "autograd_course.lab.validate": True,
        "nbgrader.server_extensions.validate_assignment": False}


# -- a real JupyterLab -----------------------------------------------------------------------
@pytest.fixture(scope="module")
def course(tmp_path_factory, root):
    """A self-study course with its secret, a learner's working copy of 01_gradients with an
    answer the hidden tests catch, Mallory's hostile pieces (:func:`plant_mallory`), and a
    student's home on a course server: the same assignment, answered right, without the
    course."""
    base = tmp_path_factory.mktemp("validate")
    course = classes.make_course(base / "course", root, [ASSIGNMENT])
    started = subprocess.run([sys.executable, "-m", "autograd_course", "start", ASSIGNMENT],
                             cwd=course, capture_output=True, text=True, timeout=120)
    assert started.returncode == 0, started.stderr
    right = classes.reference_answers(course / "source" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb")
    nbformat.write(classes.fill(course / WORK, right | {WRONG: wrong_answer()}), course / WORK)
    home = base / "home" / ASSIGNMENT
    home.mkdir(parents=True)
    nbformat.write(classes.fill(course / "release" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", right),
                   home / f"{ASSIGNMENT}.ipynb")
    plant_mallory(course, base / "markers")
    return course


@pytest.mark.services
def test_validate_in_self_study_gives_the_hidden_tests_verdict(course):
    cli = subprocess.run([sys.executable, "-m", "autograd_course", "check", WORK], cwd=course,
                         capture_output=True, text=True, timeout=600)
    assert cli.returncode == 0, cli.stderr
    with running_lab(course, course.parent / "lab-course.log") as lab:
        answer = lab.ask("assignments/validate", "POST", {"path": WORK})
        # the notebook toolbar's button gives the path as an argument
        again = lab.ask(f"assignments/validate?path={WORK}", "POST", {})
        version = lab.get("nbgrader_version?version=0.9.6")
        static = validate.nbgrader_static()
        names = [p.name for p in static.glob("*.js")
                 if validate.patched_chunk(p.read_text()) != p.read_text()]
        served = lab.text(f"{validate.NBGRADER_STATIC}/{names[0]}")
    assert version == {"success": True}
    assert answer == again
    (cell,) = answer["value"]["failed"]
    assert cell["source"] == f"{WRONG}_test: 0/2 points with the hidden tests"
    said = text_of(answer)
    assert "total: 5/7" in said
    # every question's result, as `autograd-course check` prints it
    results = [" ".join(line.split()) for line in cli.stdout.splitlines()
               if line.strip().startswith(("PASS", "FAIL", "total"))]
    assert len(results) == 5 and all(result.split(":")[0] in said for result in results)
    assert "--student" not in said  # the learner gives no option here
    assert '.message:"Success! Your notebook passes all the tests.")' in served


@pytest.mark.services
def test_validate_refuses_every_other_notebook_of_the_course_and_runs_nothing_of_it(course):
    with running_lab(course, course.parent / "lab-refused.log") as lab:
        answers = {path: lab.ask("assignments/validate", "POST", {"path": path})
                   for path in REFUSED}
    for path, answer in answers.items():
        assert answer["success"] is False, (path, answer)
        assert answer["value"].startswith(validate.REFUSED), (path, answer)
        assert "work/NN/NN.ipynb" in answer["value"] and "9/9" not in answer["value"]
    assert not list((course.parent / "markers").iterdir()), "a submission's code ran"


@pytest.mark.services
def test_validate_on_a_course_server_runs_the_visible_tests_and_says_so(course):
    with running_lab(course.parent / "home", course.parent / "lab-home.log") as lab:
        answer = lab.ask("assignments/validate", "POST",
                         {"path": f"{ASSIGNMENT}/{ASSIGNMENT}.ipynb"})
    assert answer["success"] is True, answer
    assert answer["value"]["message"].startswith("Your notebook passes its visible tests.")
    assert "hidden tests" in answer["value"]["message"]


@pytest.mark.lab_check
@pytest.mark.services
def test_the_validate_button_shows_the_courses_words(course):
    from support.browser import chromium

    notebook = f"{ASSIGNMENT}/{ASSIGNMENT}.ipynb"
    with running_lab(course.parent / "home", course.parent / "lab-browser.log") as lab, \
            chromium() as browser:
        browser.visit(f"{lab.base}/api/status?token={TOKEN}", settle_ms=0)  # the login
        page = browser.context.new_page()
        page.set_viewport_size({"width": 1400, "height": 1000})
        page.goto(f"{lab.base}/lab/workspaces/validate/tree/{notebook}?reset")
        button = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .validate-button")
        button.wait_for(timeout=90_000)
        button.click()
        dialog = page.locator("#validation-message")
        dialog.wait_for(timeout=300_000)
        said = dialog.inner_text()
        page.screenshot(path=str(course.parent / "validate-dialog.png"))
    assert "Your notebook passes its visible tests." in said, said
    assert "Success! Your notebook passes all the tests." not in said, said
