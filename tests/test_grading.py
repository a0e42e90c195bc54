"""End to end: a hostile class graded by real nbgrader with the course's nbgrader_config.py.

One synthetic class (tests/fixtures/hostile_class.py) on a toy assignment: honest work, broken
notebooks, and one submission per attack class a review found (plus variants), each computing
no right answer. The class is graded with plain `nbgrader autograde` (serial), and again with
`autograd-course grade --jobs 2`, and checked with `autograd-course check`; a class of the
honest students alone is graded for comparison. bubblewrap is required: the hostile students
really try to write into the package and the gradebook.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat
import pytest
from nbgrader.api import Gradebook

import autograd_course
from autograd_course.grading import record, sandbox, scan
from autograd_course.grading.preprocessors import strip_hidden_tests
from autograd_course.testkit import classes as course

sys.path.insert(0, str(Path(__file__).parent / "fixtures"))
import hostile_class  # noqa: E402
import make_toy  # noqa: E402

# Short limits keep the suite fast; the course's own values are in nbgrader_config.py.
TEST_LIMITS = "\nc.Execute.timeout = 8\nc.JudgedExecute.memory_limit_mb = 1500\n"
HONEST = [s for s, c in hostile_class.CASES.items() if c.kind == "honest"]
PACKAGE = Path(autograd_course.__file__).parent


def digest(*paths: Path) -> dict[str, str]:
    """The hash of every file under ``paths``."""
    found = {}
    for path in paths:
        for file in sorted([path] if path.is_file() else path.rglob("*")):
            if file.is_file() and "__pycache__" not in file.parts:
                found[str(file)] = hashlib.sha256(file.read_bytes()).hexdigest()
    return found


def make_class(base: Path, root: Path, students: list[str]) -> Path:
    (base / "source" / "toy").mkdir(parents=True)
    nbformat.write(make_toy.toy_notebook(), base / "source" / "toy" / "toy.ipynb")
    course.make_course(base, base, ["toy"], config=(root / "nbgrader_config.py").read_text()
                       + TEST_LIMITS)
    release = base / "release" / "toy" / "toy.ipynb"
    for student in students:
        course.submit(base, student, "toy", "toy",
                      hostile_class.build(student, lambda a: course.fill(release, a)))
    return base


def gradebook_rows(where: Path, students: list[str]) -> dict:
    """Every grade and comment of ``students``, as the gradebook holds them."""
    rows = {}
    with Gradebook(f"sqlite:///{where / 'gradebook.db'}") as gb:
        for student in students:
            submission = gb.find_submission("toy", student)
            for nb in submission.notebooks:
                for grade in nb.grades:
                    rows[(student, grade.name)] = (grade.auto_score, grade.manual_score,
                                                   grade.extra_credit, grade.needs_manual_grade)
                for comment in nb.comments:
                    rows[(student, comment.name, "comment")] = comment.auto_comment
    return rows


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "autograd_course", *args], cwd=cwd,
                          capture_output=True, text=True)


@pytest.fixture(scope="module")
def graded(tmp_path_factory, root):
    """The class graded three ways, and the honest students graded alone."""
    assert sandbox.bubblewrap(), ("bubblewrap (bwrap) is required to grade a hostile class: "
                                  "`make test` installs Debian's bubblewrap when run as root")
    base = make_class(tmp_path_factory.mktemp("hostile"), root, list(hostile_class.CASES))
    parallel = tmp_path_factory.mktemp("hostile-cli") / "course"
    shutil.copytree(base, parallel)
    protected = [PACKAGE, base / "source", base / "release", base / "nbgrader_config.py"]
    before = digest(*protected)
    submitted = course.snapshot(base / "submitted")
    honest = make_class(tmp_path_factory.mktemp("honest"), root, HONEST)
    notebooks = [str(base / "submitted" / s / "toy" / "toy.ipynb") for s in hostile_class.CASES]

    def plain_nbgrader():
        return (course.nbgrader(base, "autograde", "toy", "--force"),
                course.nbgrader(base, "generate_feedback", "toy", "--force"))

    # Four independent gradings at once (each waits on kernels much of the time): plain
    # nbgrader, autograd-course grade on a copy, the self-check of every notebook (it only
    # reads the course), and the honest students alone in a class of their own.
    with ThreadPoolExecutor(4) as pool:
        by_plain = pool.submit(plain_nbgrader)
        by_cli = pool.submit(cli, "grade", "toy", "--jobs", "2", "--require-sandbox",
                             cwd=parallel)
        checked = pool.submit(cli, "--course", str(base), "check", *notebooks, cwd=base)
        alone = pool.submit(course.nbgrader, honest, "autograde", "toy", "--force")
        (plain, feedback), by_cli, checked, alone = (
            by_plain.result(), by_cli.result(), checked.result(), alone.result())
    return dict(base=base, parallel=parallel, plain=plain, feedback=feedback, cli=by_cli,
                checked=checked, honest=honest, alone=alone, before=before,
                after=digest(*protected), protected=protected, submitted=submitted)


def _record(where: Path, student: str) -> record.GradeRecord:
    return record.GradeRecord.read(where / "autograded" / student / "toy" / f"toy{record.SUFFIX}")


def _said(rec: record.GradeRecord) -> str:
    return " | ".join([q["message"] for q in rec.questions] + rec.flags + rec.notes
                      + [rec.failure or ""])


@pytest.mark.class_grading
def test_every_grader_ran_to_the_end(graded):
    for key in ("plain", "feedback", "cli", "checked", "alone"):
        assert graded[key].returncode == 0, (key, graded[key].stderr[-3000:])


@pytest.mark.class_grading
@pytest.mark.parametrize("student", list(hostile_class.CASES))
def test_each_case_gets_its_score_and_reason_from_both_graders(graded, student):
    case = hostile_class.CASES[student]
    for where in (graded["base"], graded["parallel"]):
        scores = course.gradebook_scores(where, "toy")
        assert scores[student] == case.score, (where.name, _said(_record(where, student)))
        rec = _record(where, student)
        assert rec.score == case.score and rec.sandboxed
        assert case.says in _said(rec), _said(rec)


@pytest.mark.class_grading
def test_attacks_earn_nothing_they_did_not_compute(graded):
    attacks = [s for s, c in hostile_class.CASES.items() if c.kind == "attack"]
    scores = course.gradebook_scores(graded["base"], "toy")
    assert {s: scores[s] for s in attacks} == dict.fromkeys(attacks, 0.0)


@pytest.mark.class_grading
def test_honest_work_is_never_flagged_and_keeps_its_points(graded):
    for student, case in hostile_class.CASES.items():
        if case.kind != "attack":
            assert _record(graded["base"], student).flags == [], student
    scores = course.gradebook_scores(graded["base"], "toy")
    full = _record(graded["base"], "right").max_score
    for student in HONEST:  # the honest_* cases are right answers written in other ways
        if student.startswith("honest_"):
            assert scores[student] == scores["right"] == full, student


@pytest.mark.class_grading
def test_flags_ask_a_person_to_look_and_cost_nothing(graded):
    rec = _record(graded["base"], "attack_code_object")
    assert any("__code__" in flag for flag in rec.flags)
    rows = gradebook_rows(graded["base"], ["attack_code_object"])
    assert rows[("attack_code_object", "q1_test")][3] is True  # needs a manual grade
    assert course.gradebook_scores(graded["base"], "toy")["attack_code_object"] == 0


@pytest.mark.class_grading
def test_nothing_outside_the_kernel_changed(graded):
    assert graded["after"] == graded["before"], "the package, source/, release/ or config changed"
    assert course.snapshot(graded["base"] / "submitted") == graded["submitted"]
    assert "HOSTILE-EDIT" not in (PACKAGE / "checks.py").read_text()


@pytest.mark.class_grading
def test_other_students_rows_equal_a_class_without_the_hostile_students(graded):
    alone = gradebook_rows(graded["honest"], HONEST)
    for where in (graded["base"], graded["parallel"]):
        assert gradebook_rows(where, HONEST) == alone


@pytest.mark.class_grading
def test_check_gives_the_verdict_of_grade_for_every_case(graded):
    out = graded["checked"].stdout
    for student in hostile_class.CASES:
        rec = _record(graded["base"], student)
        header = f"toy/toy.ipynb (checked as {student})"
        assert header in out, student
        block = out.split(header)[1].split("(checked as")[0]
        for q in rec.questions:
            line = (f"{'PASS' if q['passed'] else 'FAIL'} {q['question']}: "
                    f"{q['score'] or 0:g}/{q['points']:g}")
            assert line + (f"  {q['message']}" if q["message"] else "") in block, (student, line)
        assert f"total: {rec.score:g}/{rec.max_score:g}" in block


@pytest.mark.class_grading
def test_two_gradings_give_the_same_grades_and_messages(graded):
    # plain nbgrader and autograd-course grade graded the same submissions independently
    for student in hostile_class.CASES:
        first, second = _record(graded["base"], student), _record(graded["parallel"], student)
        assert first.questions == second.questions, student
        assert (first.flags, first.failure) == (second.flags, second.failure), student


@pytest.mark.class_grading
def test_no_hidden_test_line_reaches_a_student(graded):
    hidden = [line for line in make_toy.hidden_lines()
              if line not in strip_hidden_tests(make_toy.Q1_TEST)]
    pages = sorted((graded["base"] / "feedback").glob("*/toy/toy.html"))
    assert len(pages) == len(hostile_class.CASES)
    texts = {str(p): p.read_text() for p in pages}
    for where in (graded["base"], graded["parallel"]):
        texts.update({str(p): p.read_text()
                      for p in (where / "autograded").glob(f"*/toy/*{record.SUFFIX}")})
    texts["check output"] = graded["checked"].stdout + graded["checked"].stderr
    for name, text in texts.items():
        assert "SECRET-HIDDEN-LINE" not in text and "BEGIN HIDDEN TESTS" not in text, name
        for line in hidden:
            assert line not in text, (name, line)


@pytest.mark.class_grading
def test_feedback_shows_results_and_diagnoses(graded):
    wrong = (graded["base"] / "feedback" / "wrong" / "toy" / "toy.html").read_text()
    assert "wrong sign" in wrong and "different exception" in wrong
    right = (graded["base"] / "feedback" / "right" / "toy" / "toy.html").read_text()
    assert "All tests passed." in right


@pytest.mark.class_grading
def test_the_summary_lists_what_needs_a_person(graded):
    out = graded["cli"].stdout
    assert "FLAGGED attack_code_object/toy" in out and "NOT SANDBOXED" not in out
    assert f"{len(hostile_class.CASES)} submissions graded:" in out


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
    "from IPython.display import display\ndisplay(1)",
    "%pip install torch\n!ls\nimport gc, inspect\ngc.collect()\ninspect.signature(len)",
    "rows = torch.stack([a, b])\nwith open('data.csv') as f:\n    pass",
    "for module in model.modules():\n    print(module)",
])
def test_scan_leaves_honest_code_alone(honest):
    assert scan.scan_source(honest, "q1", PROTECTED) == []


@pytest.mark.parametrize(("tampering", "named"), [
    ("import torch\ntorch.allclose = lambda *a, **k: True", "torch.allclose"),
    ("import numpy\ndel numpy.isclose", "numpy.isclose"),
    ("check_tensor = print", "check_tensor"),
    ("def check_tensor(*a):\n    pass", "check_tensor"),
    ("setattr(c, '_fail', f)", "setattr"),
    ("f.__code__ = g.__code__", "__code__"),
    ("import sys\nframe = sys._getframe(1)", "_getframe"),
    ("import gc\ngc.get_referrers(x)", "get_referrers"),
    ("print(In[-1])", "In"),
    ("import sys\nsys.displayhook(2)", "displayhook"),
    ("class T(torch.Tensor):\n    def __torch_function__(cls, *a):\n        pass",
     "__torch_function__"),
    ("from torch.overrides import TorchFunctionMode", "torch.overrides"),
    ("get_ipython().events.register('pre_run_cell', f)", "events"),
    ("import os\nos.kill(os.getppid(), 9)", "os.kill"),
    ("open('../../../gradebook.db', 'w')", "outside the working folder"),
    ("exec('torch.equal = f')", "exec"),
    ("%%time\ntorch.allclose = f", "torch.allclose"),
    ("import importlib\nagent = importlib.import_module('autograd_course.agent')",
     "import_module"),
    ("import sys\ncost = sys.modules['autograd_course.cost']", "sys.modules"),
])
def test_scan_flags_what_reaches_past_the_answer(tampering, named):
    findings = scan.scan_source(tampering, "q1", PROTECTED)
    assert findings and any(named in str(f) for f in findings), findings
