"""One notebook's failure, of any kind, is that notebook's alone.

A ``BaseException`` that is not an ``Exception`` (``SystemExit``, ``GeneratorExit``, a class
of its own) passes every ``except Exception``: in the judge it becomes the test's failure, at
the edge of each of the course's steps that grade one notebook it becomes
:class:`~autograd_course.grading.containment.GradingStopped`, so that plain ``nbgrader
autograde`` records that submission's failure, grades the next and exits non-zero, and
``autograd-course check`` prints a failure line. ``KeyboardInterrupt`` always propagates.
"""

from __future__ import annotations

import re
import subprocess
import sys

import nbformat
import pytest
import torch  # noqa: F401 - the judge's tests below import it anyway; loaded once here

from autograd_course.grading.boundary.judge import Session
from autograd_course.grading.boundary.links import InProcessLink
from autograd_course.grading.containment import GradingStopped, contained, describe
from autograd_course.kernel.checks import StudentError

IMPORTS = "import torch\nfrom autograd_course.kernel.checks import *\n"


class Stop(BaseException):  # noqa: N818 - a BaseException of its own, as any code may define
    """Neither an Exception nor one of Python's own."""


STOPPING = [SystemExit(3), SystemExit("bye"), GeneratorExit(), Stop("mine"), BaseException("x")]


def judge(student: str = "") -> Session:
    link = InProcessLink()
    session = Session(link, seed_key=b"k" * 32)
    for source in (IMPORTS, student):
        assert link.run_cell(source) is None
    session.run_locked(IMPORTS, "imports")
    return session


# -- in the judge: a test's failure ----------------------------------------------------------


@pytest.mark.parametrize("exc", STOPPING, ids=describe)
def test_a_test_cell_that_stops_the_interpreter_fails_with_a_plain_reason(exc):
    session = judge()
    session.namespace["stop"] = exc
    verdict = session.run_test("raise stop", "q1_test")
    assert not verdict.passed and verdict.diagnosis == "error" and verdict.error is exc
    assert verdict.ename == "TestStopped" and type(exc).__name__ in verdict.message
    assert "counts as failed" in verdict.message and "\n" not in verdict.message
    assert session.run_test("assert 1 + 1 == 2", "q2_test").passed  # the next test runs


@pytest.mark.parametrize("exc", STOPPING, ids=describe)
def test_a_remote_call_that_stops_the_interpreter_fails_the_test(exc):
    """The link to the kernel (or the judge reading its reply) raising SystemExit and the
    like: that test fails; the notebook's other tests still run."""

    class Stopping(InProcessLink):
        stops = True

        def request(self, *args, **kwargs):
            if self.stops:
                raise exc
            return super().request(*args, **kwargs)

    link = Stopping()
    assert link.run_cell("answer = 41") is None
    session = Session(link, seed_key=b"k" * 32)
    verdict = session.run_test("assert answer + 1 == 42", "q1_test")
    assert not verdict.passed and verdict.ename == "TestStopped" and verdict.error is exc
    link.stops = False
    assert session.run_test("assert answer + 1 == 42", "q2_test").passed


@pytest.mark.parametrize("raised", ["raise SystemExit(2)", "raise GeneratorExit",
                                    "class Mine(BaseException):\n        pass\n    raise Mine()"])
def test_a_students_function_that_stops_the_interpreter_is_the_students_error(raised):
    session = judge(f"def f():\n    {raised}")
    verdict = session.run_test("f()", "q1_test")
    assert not verdict.passed and verdict.diagnosis == "raised"
    assert type(verdict.error) is StudentError  # never SystemExit & co. in the grader


def test_a_locked_cell_that_stops_the_interpreter_is_noted():
    session = judge()
    session.run_locked("raise SystemExit(4)", "setup")
    session.run_locked("raise GeneratorExit", "setup2")
    assert session.locked_errors == ["setup: SystemExit: 4", "setup2: GeneratorExit: "]
    with pytest.raises(KeyboardInterrupt):
        session.run_locked("raise KeyboardInterrupt", "setup3")


def test_keyboard_interrupt_still_stops_the_grader():
    session = judge()
    with pytest.raises(KeyboardInterrupt):
        session.run_test("raise KeyboardInterrupt", "q1_test")

    class Interrupted(InProcessLink):
        def request(self, *args, **kwargs):
            raise KeyboardInterrupt

    link = Interrupted()
    link.run_cell("answer = 1")
    with pytest.raises(KeyboardInterrupt):
        Session(link).run_test("answer", "q1_test")


# -- at the edge of the course's preprocessors and exporters ---------------------------------


@pytest.mark.parametrize("exc", STOPPING, ids=describe)
def test_contained_turns_what_stops_the_interpreter_into_a_plain_exception(exc):
    class Step:
        @contained
        def preprocess(self, raised):
            raise raised

    with pytest.raises(GradingStopped) as caught:
        Step().preprocess(exc)
    said = str(caught.value)
    assert said.startswith("grading this notebook stopped: Step raised " + type(exc).__name__)
    assert caught.value.__cause__ is exc
    for passes in (KeyboardInterrupt(), ValueError("v")):
        with pytest.raises(type(passes)):
            Step().preprocess(passes)


def test_judged_execute_stops_as_an_exception(monkeypatch):
    from autograd_course.grading.preprocessors import JudgedExecute, execute

    class Judge:
        def __init__(self, exc):
            self.exc = exc

        def start(self):
            raise self.exc

    for exc, raised in ((SystemExit(3), GradingStopped), (GeneratorExit(), GradingStopped),
                        (KeyboardInterrupt(), KeyboardInterrupt)):
        monkeypatch.setattr(execute, "judge", Judge(exc))
        with pytest.raises(raised):
            JudgedExecute().preprocess(nbformat.v4.new_notebook(), {})


def test_the_courses_exporters_stop_as_an_exception(tmp_path):
    from nbconvert.preprocessors import Preprocessor

    from autograd_course.grading.preprocessors import FeedbackExporter, TolerantNotebookExporter

    class Stopping(Preprocessor):
        def preprocess(self, nb, resources):
            raise SystemExit(5)

    path = tmp_path / "nb.ipynb"
    nbformat.write(nbformat.v4.new_notebook(), path)
    for exporter in (TolerantNotebookExporter(), FeedbackExporter()):
        exporter.register_preprocessor(Stopping(), enabled=True)
        with pytest.raises(GradingStopped, match="SystemExit"):
            exporter.from_filename(str(path))


# -- a class under plain nbgrader, and the self-check ----------------------------------------

#: Appended to the toy course's nbgrader_config.py: grading "a_first" makes the judge raise
#: SystemExit (its seed of hidden inputs, made at the notebook's first locked cell, while the
#: kernel runs), without any hole of the judge's.
STOPS_FOR_A_FIRST = '''
import autograd_course.grading.boundary.judge as _judge  # tests/test_containment.py
if not getattr(_judge, "_stops_for_a_test", False):
    _seed_key = _judge.seed_key

    def _stopping_seed_key(secret, student, *parts):
        if student == "a_first":
            raise SystemExit(3)
        return _seed_key(secret, student, *parts)

    _judge.seed_key, _judge._stops_for_a_test = _stopping_seed_key, True
'''


@pytest.fixture(scope="module")
def stopped_class(tmp_path_factory, root):
    """A class of three whose first student makes the judge raise SystemExit, graded by plain
    nbgrader, and two of its notebooks (that one first) checked with autograd-course check."""
    from concurrent.futures import ThreadPoolExecutor

    from support.toy import hostile_class, make_class

    from autograd_course.testkit import classes

    base = make_class(tmp_path_factory.mktemp("stopped"), root, ["right", "wrong"])
    release = base / "release" / "toy" / "toy.ipynb"
    hostile_class.write(base / "submitted" / "a_first" / "toy", "right",
                        lambda answers: classes.fill(release, answers))
    config = base / "nbgrader_config.py"
    config.write_text(config.read_text() + STOPS_FOR_A_FIRST)
    notebooks = [str(base / "submitted" / s / "toy" / "toy.ipynb") for s in ("a_first", "right")]
    with ThreadPoolExecutor(2) as pool:
        plain = pool.submit(classes.nbgrader, base, "autograde", "toy", "--force")
        checked = pool.submit(subprocess.run, [sys.executable, "-m", "autograd_course",
                                               "--course", str(base), "check", *notebooks],
                              cwd=base, capture_output=True, text=True)
        return dict(base=base, plain=plain.result(), checked=checked.result())


@pytest.mark.class_grading
def test_plain_nbgrader_grades_the_rest_of_the_class_and_reports_the_failure(stopped_class):
    from autograd_course.testkit import classes

    base, plain = stopped_class["base"], stopped_class["plain"]
    said = plain.stdout + plain.stderr
    assert plain.returncode != 0, said[-3000:]
    assert "There was an error processing assignment 'toy' for student 'a_first'" in said
    assert ("GradingStopped: grading this notebook stopped: JudgedExecute raised SystemExit (3)"
            in said), said[-3000:]
    assert "Canceled" not in said
    scores = classes.gradebook_scores(base, "toy")
    assert scores["right"] == 4 and scores["wrong"] == 0, scores
    assert classes.grade_record(base, "right", "toy").score == 4
    wrong = classes.grade_record(base, "wrong", "toy")
    assert wrong.score == 0 and "wrong sign" in " ".join(q["message"] for q in wrong.questions)
    assert not (base / "autograded" / "a_first" / "toy" / "toy.ipynb").exists()


@pytest.mark.class_grading
def test_check_says_in_one_line_that_a_notebook_stopped_and_checks_the_next(stopped_class):
    checked = stopped_class["checked"]
    out = checked.stdout
    assert checked.returncode == 2, (out + checked.stderr)[-3000:]
    # one entry: its first line, and the lines the report's width broke it into (deeper)
    entries = re.findall(r"^  FAILED .*(?:\n      .*)*", out, flags=re.MULTILINE)
    assert len(entries) == 1 and "a_first" in entries[0], out
    said = " ".join(entries[0].split())
    assert "grading this notebook stopped: JudgedExecute raised SystemExit (3)" in said
    assert "Traceback" not in out + checked.stderr
    assert out.index("FAILED") < out.index("total: 4/4"), out  # the next notebook was checked

