"""autograd-course check and validate (grading/selfcheck.py): what a learner reads."""

from __future__ import annotations

import re
import shutil

import nbformat
from support.commands import ASSIGNMENT, FULL, filled_release, reference_of, run

from autograd_course import cli
from autograd_course.grading import selfcheck
from autograd_course.lab import selfstudy
from autograd_course.testkit import WRONG_ANSWERS


def entries(report: str) -> list[str]:
    """The lines of ``check``'s report with each wrapped entry joined again (its next lines
    are indented deeper: selfcheck.wrapped)."""
    joined: list[str] = []
    for line in report.splitlines():
        if joined and line.startswith("      "):
            joined[-1] += " " + line.strip()
        else:
            joined.append(line)
    return joined


def test_check_prints_points_and_messages(root, tmp_path):
    notebook = tmp_path / f"{ASSIGNMENT}.ipynb"
    shutil.copy2(root / "release" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", notebook)
    result = run("check", str(notebook), cwd=root)
    assert result.returncode == 0, result.stderr
    assert "FAIL q1_partials_test: 0/2  NotAnswered: the answer cell still raises" in (
        result.stdout)
    assert result.stderr == "", "nbgrader's own warnings stay out of a learner's way"
    assert f"total: 0/{FULL:g}" in result.stdout


def test_check_names_each_notebook_as_given_its_student_id_and_failing_cells(root, tmp_path):
    (tmp_path / "blank").mkdir()
    nbformat.write(filled_release(root, {}), tmp_path / "blank" / f"{ASSIGNMENT}.ipynb")
    answers = reference_of(root) | {"q1_partials": "1 / 0"}
    mine = filled_release(root, answers)
    index = next(i for i, c in enumerate(mine.cells)
                 if c.metadata.get("nbgrader", {}).get("grade_id") == "q2_leaf_and_grad_fn")
    mine.cells.insert(index + 1, nbformat.v4.new_code_cell("\nprint(undefined_name)"))
    (tmp_path / "mine").mkdir()
    nbformat.write(mine, tmp_path / "mine" / f"{ASSIGNMENT}.ipynb")
    result = run("--course", str(root), "check", f"blank/{ASSIGNMENT}.ipynb",
                 str(tmp_path / "mine" / f"{ASSIGNMENT}.ipynb"), cwd=tmp_path,
                 env={"JUPYTERHUB_USER": "", "LOGNAME": "learner"})
    assert result.returncode == 0, result.stderr
    assert max(map(len, result.stdout.splitlines())) <= selfcheck.WIDTH
    lines = entries(result.stdout)
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


def test_in_jupyterlab_check_says_where_the_student_id_came_from_without_an_option(
        root, tmp_path):
    # the notebook's check cell and the Validate button run `check` with CHECKED_FROM set: no
    # option can be given there, so none is named
    assert selfstudy.CHECKED_FROM == cli.CHECKED_FROM
    command, env = selfstudy.check_command(root, root / "release" / ASSIGNMENT / "x.ipynb",
                                           {selfstudy.SESSION: "x.ipynb", "PATH": "/bin"})
    assert env == {"PATH": "/bin", "PYTHONUNBUFFERED": "1", cli.CHECKED_FROM: "jupyterlab"}
    assert command[-3:] == ["check", "--", f"release/{ASSIGNMENT}/x.ipynb"]
    for origin in ("jupyterhub", "user"):
        assert "--student" not in cli.STUDENT_ORIGIN_IN_LAB[origin], origin
    notebook = tmp_path / f"{ASSIGNMENT}.ipynb"
    shutil.copy2(root / "release" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", notebook)
    said = run("--course", str(root), "check", str(notebook), cwd=tmp_path,
               env={"JUPYTERHUB_USER": "", "LOGNAME": "learner", cli.CHECKED_FROM: "jupyterlab"})
    assert said.returncode == 0, said.stderr
    assert entries(said.stdout)[1] == (
        f"  student id: learner ({cli.STUDENT_ORIGIN_IN_LAB['user']})"), said.stdout


def test_a_long_entry_of_the_report_is_broken_at_spaces_its_words_kept():
    message = ("CheckError: x.grad is twice the right gradient: it was accumulated over two "
               "backward() calls; clear it (x.grad = None) between them, or call backward once")
    lines = selfcheck.wrapped(f"  FAIL q1_partials_test: 0/2  {message}")
    assert len(lines) > 1 and all(len(line) <= selfcheck.WIDTH for line in lines)
    assert lines[1].startswith("      ") and not lines[1].startswith("       ")
    assert " ".join(" ".join(lines).split()) == f"FAIL q1_partials_test: 0/2 {message}"
    assert entries("\n".join(lines)) == [f"  FAIL q1_partials_test: 0/2  {message}"]
    assert selfcheck.wrapped("  total: 7/7") == ["  total: 7/7"]


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
    reference = reference_of(root)
    answers = {"q1_partials": reference["q1_partials"], "q2_leaf_and_grad_fn": q2_wrong.code}
    nbformat.write(filled_release(root, answers), tmp_path / f"{ASSIGNMENT}.ipynb")
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
    nbformat.write(filled_release(root, reference), tmp_path / f"{ASSIGNMENT}.ipynb")
    passed = run("--course", str(root), "validate", f"{ASSIGNMENT}.ipynb", cwd=tmp_path)
    assert passed.stdout.splitlines()[1].startswith("  every visible test passes"), passed.stdout
