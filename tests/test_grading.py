"""End to end: a hostile class graded by real nbgrader with the course's nbgrader_config.py.

One synthetic class (tests/fixtures/hostile_class.py) on a toy assignment: honest work, broken
notebooks, and one submission per attack class a review found (plus variants), each computing
no right answer. The class is graded with plain `nbgrader autograde` (serial), and again with
`autograd-course grade --jobs 2`, and checked with `autograd-course check`; a class of the
honest students alone is graded for comparison. bubblewrap is required: the hostile students
really try to write into the package and the gradebook.
"""

from __future__ import annotations

import csv
import hashlib
import re
import shutil
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat
import pytest
from nbgrader.api import Gradebook

import autograd_course
from autograd_course import warmcheck
from autograd_course.grading import record, scan
from autograd_course.grading.boundary import sandbox
from autograd_course.grading.preprocessors import strip_hidden_tests
from autograd_course.grading.terminal import safe
from autograd_course.testkit import classes as course

sys.path.insert(0, str(Path(__file__).parent / "fixtures"))
import hostile_class  # noqa: E402
import make_toy  # noqa: E402
import payloads  # noqa: E402
from support.commands import run  # noqa: E402
from support.pages import formgrader_html, live_marks  # noqa: E402
from support.toy import BUDGET, make_class  # noqa: E402

HONEST = [s for s, c in hostile_class.CASES.items() if c.kind == "honest"]
INERT = {"text/plain", "image/png", "image/jpeg"}
PACKAGE = Path(autograd_course.__file__).parent


def digest(*paths: Path) -> dict[str, str]:
    """The hash of every file under ``paths``."""
    found = {}
    for path in paths:
        for file in sorted([path] if path.is_file() else path.rglob("*")):
            if file.is_file() and "__pycache__" not in file.parts:
                found[str(file)] = hashlib.sha256(file.read_bytes()).hexdigest()
    return found


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

    # JupyterLab's warm check for the course (autograd_course/warmcheck.py), in a runtime
    # folder of its own
    runtime = tmp_path_factory.mktemp("runtime")
    runtime.chmod(0o700)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("JUPYTER_RUNTIME_DIR", str(runtime))
        service = warmcheck.Service(base)
        assert service.start() and service.listening(60)
    # Five independent gradings at once (each waits on kernels much of the time): plain
    # nbgrader, autograd-course grade on a copy, the self-check of every notebook cold and
    # warm (they only read the course), and the honest students alone in a class of their own.
    try:
        with ThreadPoolExecutor(5) as pool:
            by_plain = pool.submit(plain_nbgrader)
            by_cli = pool.submit(run, "grade", "toy", "--jobs", "2", "--require-sandbox",
                                 cwd=parallel)
            checked = pool.submit(run, "--course", str(base), "check", "--cold", *notebooks,
                                  cwd=base)
            warm = pool.submit(run, "--course", str(base), "check", *notebooks, cwd=base,
                               env={"JUPYTER_RUNTIME_DIR": str(runtime)})
            alone = pool.submit(course.nbgrader, honest, "autograde", "toy", "--force")
            (plain, feedback), by_cli, checked, warm, alone = (
                by_plain.result(), by_cli.result(), checked.result(), warm.result(),
                alone.result())
    finally:
        service.stop()
    return dict(base=base, parallel=parallel, plain=plain, feedback=feedback, cli=by_cli,
                checked=checked, warm=warm, answered_warm=service.answered(), honest=honest,
                alone=alone, before=before, after=digest(*protected), protected=protected,
                submitted=submitted)


def _record(where: Path, student: str) -> record.GradeRecord:
    return course.grade_record(where, student, "toy")


def _said(rec: record.GradeRecord) -> str:
    return " | ".join([q["message"] for q in rec.questions] + rec.flags + rec.notes
                      + [rec.failure or ""])


@pytest.mark.class_grading
def test_every_grader_ran_to_the_end(graded):
    for key in ("plain", "feedback", "cli", "checked", "warm", "alone"):
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
    assert [p for p in PACKAGE.rglob("*.py") if "HOSTILE-EDIT" in p.read_text()] == []


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
        header = f"submitted/{student}/toy/toy.ipynb\n  student id: {student} "
        assert header in out, student
        block = out.split(header)[1].split("\nsubmitted/")[0]
        for q in rec.questions:
            line = (f"{'PASS' if q['passed'] else 'FAIL'} {q['question']}: "
                    f"{q['score'] or 0:g}/{q['points']:g}")
            said = f"  {safe(q['message'])}" if q["message"] else ""
            if hostile_class.CASES[student].racy:  # the score, not the wording of a race
                said = ""
            # the report breaks long entries at spaces: compare the words
            assert " ".join((line + said).split()) in " ".join(block.split()), (student, line)
        assert f"total: {rec.score:g}/{rec.max_score:g}" in block


def _time_left_said(report: str) -> str:
    """``report``'s words, with the seconds a cell stopped by the budget had left said as N
    (a number of another width may break the report's lines elsewhere)."""
    return re.sub(r"ran longer than \d+(?:\.\d+)? s", "ran longer than N s",
                  " ".join(report.split()))


def _blocks(report: str) -> dict[str, str]:
    """``check``'s report of each student's notebook (submitted/STUDENT/toy/toy.ipynb)."""
    blocks = report.split("submitted/")[1:]
    return {block.split("/", 1)[0]: block for block in blocks}


@pytest.mark.class_grading
def test_the_warm_check_gives_the_cold_checks_report_for_every_case(graded):
    assert graded["answered_warm"] == len(hostile_class.CASES), "every check was answered warm"
    cold, warm = _blocks(graded["checked"].stdout), _blocks(graded["warm"].stdout)
    assert set(cold) == set(warm) == set(hostile_class.CASES)
    for student, case in hostile_class.CASES.items():
        if case.racy:  # the scores, not the wording of a race
            scores = [(line.split()[:3]) for line in cold[student].splitlines()
                      if line.strip().startswith(("PASS", "FAIL", "total:"))]
            assert scores == [(line.split()[:3]) for line in warm[student].splitlines()
                              if line.strip().startswith(("PASS", "FAIL", "total:"))], student
            continue
        # a cell stopped at the end of the notebook's budget says how long it had: the time
        # left, which a warm kernel's faster start makes longer
        assert _time_left_said(warm[student]) == _time_left_said(cold[student]), student
    said = [[line for line in graded[key].stderr.splitlines()
             if line.startswith("autograd-course check:")] for key in ("warm", "checked")]
    assert said[0] == said[1]  # (a library's warnings go to the service's log)


@pytest.mark.class_grading
def test_two_gradings_give_the_same_grades_and_messages(graded):
    # plain nbgrader and autograd-course grade graded the same submissions independently
    for student in hostile_class.CASES:
        first, second = _record(graded["base"], student), _record(graded["parallel"], student)
        if hostile_class.CASES[student].racy:  # the scores, not the wording of a race
            assert [(q["question"], q["passed"], q["score"]) for q in first.questions] == [
                (q["question"], q["passed"], q["score"]) for q in second.questions], student
            assert first.score == second.score == hostile_class.CASES[student].score, student
            continue
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
                      for p in (where / record.STORE).glob("toy/*/*.json")})
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


PROTECTED = {"check_tensor": "autograd_course.kernel.checks.check_tensor"}


@pytest.mark.parametrize("honest", [
    "%matplotlib inline\nimport torch\nx = torch.ones(3, requires_grad=True)\nx.grad = None",
    "import numpy as np\nfrom autograd_course.kernel.checks import check_tensor\nnp.random.seed(0)",
    "def f(x):\n    with torch.no_grad():\n        x -= 0.1 * x.grad\n    return x",
    "this is not python",
    "%config InlineBackend.figure_format = 'retina'\n%load_ext autoreload\n%autoreload 2",
    "import torch\ntorch.backends.cudnn.deterministic = True",
    "from IPython.display import display\ndisplay(1)",
    "%pip install torch\n!ls\nimport gc, inspect\ngc.collect()\ninspect.signature(len)",
    "rows = torch.stack([a, b])\nwith open('data.csv') as f:\n    pass",
    "for module in model.modules():\n    print(module)",
    "import os as o\nlayer = model.fc\nlayer.weight = w\nt = torch.zeros(3)\nt.grad = None",
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
    ("import inspect\nlabels = inspect.getclosurevars(function.backward)", "getclosurevars"),
    ("cell = getattr(function.backward, name)[0]\nbug = cell.cell_contents", "cell_contents"),
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
    ("import importlib\nagent = importlib.import_module('autograd_course.kernel.agent')",
     "import_module"),
    ("import sys\ncost = sys.modules['autograd_course.lab.cost']", "sys.modules"),
    # through a name the cell binds to a library or a part of one
    ("import torch.func as t\nt.jvp = lambda *a, **k: None", "t.jvp"),
    ("F = torch.autograd.Function\nF.apply = staticmethod(f)", "F.apply"),
    ("from autograd_course import kernel\nkernel.agent.Agent._call = f", "Agent._call"),
    ("import autograd_course as ac\nac.kernel.agent.Agent._call = f", "Agent._call"),
    ("from torch import autograd as ag\nag.Function.apply = f", "ag.Function.apply"),
])
def test_scan_flags_what_reaches_past_the_answer(tampering, named):
    findings = scan.scan_source(tampering, "q1", PROTECTED)
    assert findings and any(named in str(f) for f in findings), findings


AUTOGRAD = ("autograd",)


@pytest.mark.parametrize(("uses", "named"), [
    ("with torch.enable_grad():\n    y = f(x)", "torch.enable_grad"),
    ("torch.set_grad_enabled(True)", "torch.set_grad_enabled"),
    ("torch._C._set_grad_enabled(True)", "_set_grad_enabled"),
    ("loss = f(x)\nloss.backward()", "loss.backward"),
    ("(g,) = torch.autograd.grad(y, [x])", "torch.autograd.grad"),
    ("J = torch.autograd.functional.jacobian(f, x)", "torch.autograd.functional.jacobian"),
    ("x = x.detach().requires_grad_()", "requires_grad_"),
    ("w = torch.zeros(3, requires_grad=True)", "requires_grad=True"),
    ("x.requires_grad = True", "x.requires_grad = True"),
    ("p = torch.nn.Parameter(w)", "torch.nn.Parameter"),
    ("class Act(torch.autograd.Function):\n    pass", "class Act(torch.autograd.Function)"),
    ("from torch.autograd import Function\nclass Act(Function):\n    pass", "class Act"),
    ("from torch.func import grad\ndf = grad(f)", "from torch.func import grad"),
    ("df = torch.func.grad(f)(x)", "torch.func.grad"),
    ("import functorch", "import functorch"),
    ("from torch import enable_grad\nwith enable_grad():\n    pass", "enable_grad"),
    ("from torch import autograd\nautograd.grad(y, x)", "autograd"),
    ("%%time\nloss.backward()", "loss.backward"),
    ("T = torch\ndf = T.func.grad(f)", "T.func.grad"),
    ("import torch.func as tf\ndf = tf.grad(f)", "tf.grad"),
])
def test_scan_flags_autograd_where_the_question_forbids_it(uses, named):
    findings = scan.scan_source(uses, "q1_by_hand", PROTECTED, AUTOGRAD)
    assert any(named in str(f) and "forbids" in str(f) for f in findings), findings
    # the same code where the question does not forbid autograd: nothing to flag
    assert scan.scan_source(uses, "q1", PROTECTED) == []


def test_scan_leaves_a_backward_by_hand_alone():
    by_hand = ("def backward(x, w, grad_out):\n"
               "    with torch.no_grad():\n"
               "        d = grad_out @ w\n"
               "    g = x.T @ grad_out\n"
               "    return d, g.sum(dim=0, keepdim=True), torch.zeros_like(w).requires_grad\n")
    assert scan.scan_source(by_hand, "q1", PROTECTED, AUTOGRAD) == []


def test_scan_reads_what_a_question_forbids_from_the_course_only():
    cells = [nbformat.v4.new_code_cell("", metadata={
        "nbgrader": {"grade_id": gid, "solution": True},
        "autograd_course": {"forbids": forbids}}) for gid, forbids in (
            ("q1_a", ["autograd"]), ("q2_b", []), ("q3_c", ["autograd", "unknown"]),
            ("q4_d", "autograd"))]
    course = nbformat.v4.new_notebook(cells=cells)
    assert scan.forbidden(course) == {"q1_a": AUTOGRAD, "q3_c": AUTOGRAD}


# -- what surrounds the kernel: pages people see, records, the grader's time -----------------


@pytest.mark.class_grading
def test_autograded_notebooks_hold_only_inert_content(graded):
    for where in (graded["base"], graded["parallel"]):
        for student in hostile_class.CASES:
            nb = nbformat.read(where / "autograded" / student / "toy" / "toy.ipynb", 4)
            assert set(nb.metadata) <= {"kernelspec", "language_info"}, student
            for cell in nb.cells:
                assert set(cell.metadata) <= {"nbgrader"} and "attachments" not in cell, student
                for output in cell.get("outputs", []):
                    assert set(output.get("data", {})) <= INERT, (student, output)


@pytest.mark.class_grading
def test_no_page_a_person_sees_runs_the_students_script(graded):
    base = graded["base"]
    mine = base / "autograded" / "attack_scripts" / "toy" / "toy.ipynb"
    pages = {"formgrader": formgrader_html(mine),
             "feedback": (base / "feedback" / "attack_scripts" / "toy" / "toy.html").read_text(),
             "report": (graded["parallel"] / "reports" / "toy" / "report.html").read_text()}
    for name, page in pages.items():
        assert live_marks(page, payloads.MARK) == [], name
    # what the student wrote is still there, as text: their markdown and their messages
    assert payloads.MARK in pages["formgrader"] and payloads.MARK in pages["feedback"]
    # the check finds the payloads where nothing made them inert: the submission itself
    submitted = base / "submitted" / "attack_scripts" / "toy" / "toy.ipynb"
    assert len(live_marks(formgrader_html(submitted), payloads.MARK)) >= 5


@pytest.mark.class_grading
def test_honest_pictures_still_show(graded):
    for where in (graded["base"], graded["parallel"]):
        nb = nbformat.read(where / "autograded" / "honest_pictures" / "toy" / "toy.ipynb", 4)
        pngs = [o for c in nb.cells for o in c.get("outputs", [])
                if "image/png" in o.get("data", {})]
        assert len(pngs) == 2  # matplotlib's plot and the computation graph
    feedback = (graded["base"] / "feedback" / "honest_pictures" / "toy" / "toy.html").read_text()
    assert feedback.count('src="data:image/png;base64,') == 2


@pytest.mark.class_grading
def test_records_come_from_the_grader_only(graded):
    for where in (graded["base"], graded["parallel"]):
        # the files the student brought reach autograded/ as files, and nothing reads them
        assert (where / "autograded" / "attack_records" / "toy" / "forged.grading.json").exists()
        records, skipped = record.store(where).read("toy", "right")
        assert skipped == [] and [r.notebook for r in records] == ["toy"]
        assert records[0].flags == [] and records[0].score == 4
        mine = course.grade_record(where, "attack_records", "toy")
        assert not any("a note the student wrote" in note for note in mine.notes)
    rows = list(csv.DictReader(open(graded["parallel"] / "reports" / "toy" / "report.csv")))
    assert {int(row["students"]) for row in rows} == {len(hostile_class.CASES)}
    report = (graded["parallel"] / "reports" / "toy" / "report.html").read_text()
    assert "forged flag" not in report


@pytest.mark.class_grading
def test_the_terminal_shows_no_escape_codes(graded):
    # the summary, check's report and nbgrader's own log lines (which quote file names)
    for key in ("cli", "checked", "plain", "feedback"):
        out = graded[key].stdout + graded[key].stderr
        assert "\x1b" not in out and "\u202e" not in out, key
    assert "FLAGGED nobody" not in graded["cli"].stdout.replace("raised ValueError", "")
    assert "FLAGGED right/" not in graded["cli"].stdout
    # a flag under 12,000 notes still reaches the instructor: the record stays small
    assert "FLAGGED attack_flag_under_notes/toy/toy" in graded["cli"].stdout
    rec = _record(graded["base"], "attack_flag_under_notes")
    assert len(rec.notes) <= 30 and any("torch.allclose" in flag for flag in rec.flags)


@pytest.mark.class_grading
def test_one_notebook_costs_the_grader_at_most_its_budget(graded):
    budget = BUDGET  # the watchdog stops a kernel 10 s after it
    for where in (graded["base"], graded["parallel"]):
        for student in hostile_class.CASES:
            rec = _record(where, student)
            assert rec.seconds is not None and rec.seconds <= budget + 12, (student, rec.seconds)
        sleeper = _record(where, "attack_sleeping")
        assert "time budget" in (sleeper.failure or "")
        for flood in ("attack_output_flood", "attack_display_updates"):
            notebook = where / "autograded" / flood / "toy" / "toy.ipynb"
            assert notebook.stat().st_size < 10 * 2**20, flood  # 200 MiB printed, 8 MiB kept


@pytest.mark.class_grading
def test_a_submission_runs_none_of_its_code_before_the_kernel_is_locked(graded):
    # its IPython startup file and Jupyter config were not run: they would have made a
    # folder in the kernel's socket folder, and defined the name its answer uses
    rec = _record(graded["base"], "attack_startup_files")
    assert "STARTUP_GRAD" in rec.questions[0]["message"] and rec.score == 0
