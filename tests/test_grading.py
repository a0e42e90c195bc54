"""End to end: a hostile class graded by real nbgrader with the course's nbgrader_config.py.

One synthetic class (tests/fixtures/hostile_class.py) on a toy assignment: honest, wrong and
blank work, tampering attempts, endless loops, crashes, runaway memory and output, deleted
and edited cells, duplicated ids, a file that is not JSON. The class is graded once with
`nbgrader autograde` and `nbgrader generate_feedback`, as an instructor would.
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat
import pytest

from autograd_course.grading import course, record, scan
from autograd_course.grading.preprocessors import strip_hidden_tests

sys.path.insert(0, str(Path(__file__).parent / "fixtures"))
import hostile_class  # noqa: E402
import make_toy  # noqa: E402

# Short limits keep the suite fast; the course's own values are in nbgrader_config.py.
TEST_LIMITS = "\nc.Execute.timeout = 8\nc.GuardedExecute.memory_limit_mb = 1500\n"


@pytest.fixture(scope="module")
def graded(tmp_path_factory, root):
    """The toy course, its class submitted, autograded and given feedback."""
    base = tmp_path_factory.mktemp("course")
    (base / "source" / "toy").mkdir(parents=True)
    nbformat.write(make_toy.toy_notebook(), base / "source" / "toy" / "toy.ipynb")
    config = (root / "nbgrader_config.py").read_text() + TEST_LIMITS
    course.make_course(base, base, ["toy"], config=config)
    release = base / "release" / "toy" / "toy.ipynb"

    def fill(answers):
        return course.fill(release, answers)

    for student in hostile_class.CASES:
        course.submit(base, student, "toy", "toy", hostile_class.build(student, fill))
    before = course.snapshot(base / "submitted")
    first = course.nbgrader(base, "autograde", "toy", "--force")
    scores = course.gradebook_scores(base, "toy")
    feedback = course.nbgrader(base, "generate_feedback", "toy", "--force")
    return dict(course=base, before=before, first=first, scores=scores, feedback=feedback)


def _record(graded, student) -> record.GradeRecord:
    return record.GradeRecord.read(
        graded["course"] / "autograded" / student / "toy" / f"toy{record.SUFFIX}"
    )


def test_one_broken_submission_never_stops_the_class(graded):
    assert graded["first"].returncode == 0, graded["first"].stderr[-3000:]
    assert set(graded["scores"]) == set(hostile_class.CASES)


@pytest.mark.parametrize("student", list(hostile_class.CASES))
def test_each_case_gets_its_exact_score_and_reason(graded, student):
    _, expected_score, expected_text = hostile_class.CASES[student]
    assert graded["scores"][student] == expected_score
    rec = _record(graded, student)
    assert rec.score == expected_score
    said = " | ".join(
        [q["message"] for q in rec.questions] + rec.flags + rec.notes + [rec.failure or ""]
    )
    assert expected_text in said, said


@pytest.mark.parametrize("student", [s for s in hostile_class.CASES if s.startswith("tamper")])
def test_tampering_is_flagged_with_what_was_detected(graded, student):
    rec = _record(graded, student)
    assert rec.flags, "tampering must be flagged in the grade record"
    assert rec.student == student and rec.assignment == "toy"
    assert all(q["score"] == 0 for q in rec.questions)
    assert all("TamperingDetected" in q["message"] for q in rec.questions)


def test_honest_work_is_never_flagged(graded):
    for student in ("right", "wrong", "blank", "endless_loop", "megabytes_output", "os_exit",
                    "crash_in_test", "runaway_memory", "deleted_cells", "not_json",
                    "honest_plotting", "odd_outputs"):
        assert _record(graded, student).flags == [], student


def test_diagnostic_messages_name_the_mistake(graded):
    messages = {q["question"]: q["message"] for q in _record(graded, "wrong").questions}
    assert "wrong sign" in messages["q1_test"]
    assert messages["q2_test"] == "AssertionError: triple is wrong"


def test_submitted_files_are_never_modified(graded):
    assert course.snapshot(graded["course"] / "submitted") == graded["before"]


def test_regrading_gives_the_same_grades(graded):
    again = ["right", "tamper_transformer", "os_exit", "not_json"]
    for student in again:
        result = course.nbgrader(graded["course"], "autograde", "toy", "--force",
                                 f"--student={student}")
        assert result.returncode == 0, result.stderr[-2000:]
    scores = course.gradebook_scores(graded["course"], "toy")
    assert {s: scores[s] for s in again} == {s: graded["scores"][s] for s in again}
    assert course.snapshot(graded["course"] / "submitted") == graded["before"]


def test_feedback_has_results_and_messages_but_no_hidden_tests(graded):
    assert graded["feedback"].returncode == 0, graded["feedback"].stderr[-2000:]
    pages = sorted((graded["course"] / "feedback").glob("*/toy/toy.html"))
    assert len(pages) == len(hostile_class.CASES)
    hidden_lines = [
        line.strip()
        for line in make_toy.toy_notebook().cells[3].source.splitlines()
        + make_toy.toy_notebook().cells[5].source.splitlines()
        if line.strip() and "HIDDEN TESTS" not in line
    ]
    for page in pages:
        html = page.read_text()
        assert "SECRET-HIDDEN-LINE" not in html, page
        assert "BEGIN HIDDEN TESTS" not in html and "BEGIN SOLUTION" not in html, page
        for line in hidden_lines:
            if "assert square_grad(torch.ones(2))" in line:
                continue  # the visible test is visible
            assert line not in html, (page, line)
    wrong = (graded["course"] / "feedback" / "wrong" / "toy" / "toy.html").read_text()
    assert "wrong sign" in wrong
    assert "triple is wrong" in wrong


def test_strip_hidden_tests_keeps_the_visible_part():
    source = "visible()\n### BEGIN HIDDEN TESTS\nsecret()\n### END HIDDEN TESTS\nafter()"
    stripped = strip_hidden_tests(source)
    assert "secret" not in stripped
    assert stripped.startswith("visible()") and stripped.endswith("after()")


PROTECTED = {"check_tensor": "autograd_course.checks.check_tensor"}


@pytest.mark.parametrize("honest", [
    "%matplotlib inline\nimport torch\nx = torch.ones(3, requires_grad=True)\nx.grad = None",
    "import numpy as np\nfrom autograd_course.checks import check_tensor\nnp.random.seed(0)",
    "def f(x):\n    with torch.no_grad():\n        x -= 0.1 * x.grad\n    return x",
    "this is not python",
    "%config InlineBackend.figure_format = 'retina'\n%load_ext autoreload\n%autoreload 2",
    "import torch\ntorch.backends.cudnn.deterministic = True",
])
def test_scan_leaves_honest_code_alone(honest):
    assert scan.scan_source(honest, "q1", PROTECTED) == []


@pytest.mark.parametrize(("tampering", "named"), [
    ("import torch\ntorch.allclose = lambda *a, **k: True", "torch.allclose"),
    ("import numpy\ndel numpy.isclose", "numpy.isclose"),
    ("check_tensor = print", "check_tensor"),
    ("def check_tensor(*a):\n    pass", "check_tensor"),
    ("get_ipython().events.register('pre_run_cell', f)", "IPython shell"),
    ("import builtins\nbuiltins.isinstance = f", "builtins"),
    ("exec('torch.equal = f')", "exec"),
    ("setattr(torch, 'equal', f)", "setattr on torch"),
    ("import sys\nsys.modules['torch'] = fake", "sys.modules"),
    ("%config InteractiveShell.ast_node_interactivity = 'none'", "run_line_magic"),
    ("%load_ext my_extension", "run_line_magic"),
    ("%%time\ntorch.allclose = f", "torch.allclose"),
])
def test_scan_names_each_tampering_attempt(tampering, named):
    findings = scan.scan_source(tampering, "q1", PROTECTED)
    assert findings and any(named in str(f) for f in findings), findings
