"""The judge: test code runs here, the student's names are read from the kernel as data.

These tests use an in-process 'kernel' (the same agent, encoding and decoding as a real
kernel, without the process boundary); test_grading.py grades through real kernels.
"""

from __future__ import annotations

import types

import pytest
import torch
from support.inprocess import run_judged

from autograd_course.grading.boundary import links, naming
from autograd_course.grading.boundary.judge import AuthoringError, Session
from autograd_course.grading.boundary.links import AnswerError, InProcessLink
from autograd_course.kernel import checks
from autograd_course.kernel.checks import StudentError
from autograd_course.kernel.wire import Handle, RemoteFunction, facts

IMPORTS = "import torch\nfrom autograd_course.kernel.checks import *\n"


def judge(student: str, locked: str = IMPORTS, seed_key: bytes | None = b"k" * 32):
    """A session whose kernel ran ``locked`` then ``student``; ``locked`` also ran here."""
    link = InProcessLink()
    session = Session(link, seed_key=seed_key)
    for source in (locked, student):
        error = link.run_cell(source)
        assert error is None, error
    session.run_locked(locked, "imports")
    return session


def test_builtins_then_locked_names_then_the_students():
    session = judge("len = lambda x: 99\ncheck_tensor = lambda *a, **k: None\nanswer = 3")
    verdict = session.run_test(
        "assert len([1, 2]) == 2\n"
        "assert check_tensor.__module__ == 'autograd_course.kernel.checks'\n"
        "assert answer == 3\n"
        "assert [answer for _ in range(2)] == [3, 3]\n"
        "def nested():\n    return answer\n"
        "assert nested() == 3", "t")
    assert verdict.passed, verdict.diagnostic


def test_names_the_test_assigns_stay_in_the_judge_and_reads_are_fresh():
    session = judge("x = 1\ndef bump():\n    global x\n    x += 1")
    assert session.run_test("bump()\nassert x == 2\ny = 5", "t").passed
    assert session.link.namespace.get("y") is None, "y stays in the judge"
    assert session.run_test("assert y == 5 and x == 2", "t2").passed


def test_a_name_nobody_defines_is_not_answered():
    verdict = judge("").run_test("check_prediction_format(prediction)", "q1")
    assert not verdict.passed and verdict.ename == "NotAnswered" and verdict.diagnosis == "blank"
    assert "`prediction` is not defined" in verdict.message


def test_functions_become_remote_calls_with_plain_results():
    session = judge("def double(x):\n    print('noise')\n    return 2 * x")
    double = session.namespace["double"]
    assert isinstance(double, RemoteFunction)
    result = double(torch.ones(2))
    assert type(result) is torch.Tensor and torch.equal(result, torch.full((2,), 2.0))


def test_the_test_sees_in_place_changes_of_its_arguments_without_its_own_changing():
    session = judge("def mark(t):\n    t.requires_grad_()\n    (t * t).sum().backward()\n"
                    "    with torch.no_grad():\n        t.fill_(7)")
    values = torch.tensor([1.0, 2.0])
    session.namespace["mark"](values)
    assert torch.equal(values, torch.tensor([1.0, 2.0])) and not values.requires_grad
    assert values.grad is None, "the judge's own tensor is never changed by the kernel"
    after = session.current(values)
    assert torch.equal(after, torch.full((2,), 7.0)) and facts(after).requires_grad
    assert torch.equal(facts(after).grad, torch.tensor([2.0, 4.0]))
    with pytest.raises(checks.CheckError, match="records a computation graph"):
        checks.check_no_graph(after, "values")


def test_a_lie_about_an_argument_cannot_change_the_truth():
    # grad_of(sin) returning zeros after moving the inputs to pi/2, where cos is 0: the
    # expected value is computed from the judge's own inputs, which the kernel cannot move
    session = judge("import math\ndef grad_of(f, values):\n    with torch.no_grad():\n"
                    "        values.fill_(math.pi / 2)\n    return torch.zeros_like(values)")
    verdict = session.run_test(
        "values = fresh(4)\ng = run_answer(grad_of, torch.sin, values)\n"
        "check_tensor(g, torch.cos(values), name='grad_of(sin)')", "t")
    assert not verdict.passed and "grad_of(sin)" in verdict.message


def test_handles_give_the_kernel_its_own_object_back():
    session = judge(
        "def step(x, lr):\n    (x ** 2).backward()\n    with torch.no_grad():\n"
        "        x -= lr * x.grad\n    x.grad = None\n    return x")
    step = session.namespace["step"]
    x = torch.tensor(1.0, requires_grad=True)
    x = step(x, 0.25)
    assert facts(x).is_leaf and facts(x).handle is not None
    x = step(x, 0.25)
    assert torch.allclose(x, torch.tensor(0.25))  # (1 - 0.5) then (0.5 - 0.25)
    same = judge("kept = []\ndef same(t):\n    kept.append(t)\n    return len(kept) < 2 or "
                 "kept[-1] is kept[-2]")
    t = same.namespace["same"](torch.ones(1))
    t = same.namespace["same"](same.namespace["kept"][0])
    assert t is True  # a value from the kernel goes back as the kernel's own object
    value = same.namespace["kept"][0]
    value += 1  # changed here: the next call sends this value, not the kernel's stale object
    assert same.namespace["same"](value) is False
    start = torch.tensor(1.0, requires_grad=True)
    step(start, 0.25)
    assert start.item() == 1.0 and start.grad is None  # the test's own input is unchanged


def test_graphs_are_built_in_the_kernel_with_in_kernel():
    session = judge("def name_of(t):\n    return type(t.grad_fn).__name__")
    a = torch.ones(2, requires_grad=True)
    assert session.run_test("assert name_of(in_kernel(lambda: a * 2)) == 'MulBackward0'",
                            "t").passed is False  # `a` is not the judge's here
    session.namespace["a"] = a
    verdict = session.run_test(
        "assert name_of(in_kernel(lambda: a * 2)) == 'MulBackward0'", "t")
    assert verdict.passed, verdict.diagnostic
    with pytest.raises(AuthoringError, match="graph"):
        session.run_test("name_of(a * 2)", "t")


def test_an_expected_value_must_not_travel_in_a_test_function():
    session = judge("def apply(f, x):\n    return f(x)")
    with pytest.raises(AuthoringError, match="expected value"):
        session.run_test(
            "x = torch.ones(2)\nexpected = 3 * x\n"
            "check_tensor(run_answer(apply, lambda v: expected, x), expected)", "t")
    verdict = session.run_test(
        "x = torch.ones(2)\nA = torch.eye(2)\n"
        "check_tensor(run_answer(apply, lambda v: A @ v, x), A @ x)", "t")
    assert verdict.passed, verdict.diagnostic


def test_the_students_exception_is_a_short_diagnosis():
    session = judge("def f(x):\n    raise ValueError('no ' * 500)")
    verdict = session.run_test("run_answer(f, 1)", "t")
    assert verdict.ename == "ValueError" and verdict.message.startswith("f(...) raised ValueError")
    assert len(verdict.message) <= 300


def test_a_stub_is_not_answered():
    session = judge("def f(x):\n    raise NotImplementedError()")
    verdict = session.run_test("run_answer(f, 1)", "t")
    assert verdict.ename == "NotAnswered" and "NotImplementedError" in verdict.message


def test_answers_without_autograd_are_enforced():
    session = judge(
        "def by_autograd(w):\n    w = w.clone().requires_grad_()\n    (w * w).sum().backward()\n"
        "    return w.grad\n"
        "def by_hand(w):\n    return 2 * w")
    for name, passes in (("by_hand", True), ("by_autograd", False)):
        verdict = session.run_test(
            f"w = torch.ones(2)\ncheck_tensor(run_answer({name}, w, autograd=False), 2 * w)", "t")
        assert verdict.passed is passes
    assert "asks for the derivative by hand" in verdict.message


def test_hidden_inputs_depend_on_the_secret_and_the_test_only():
    code = "print(fresh(3).tolist(), fresh_int(0, 10**6))"
    first = judge("", seed_key=b"a" * 32).run_test(code, "q1_test").stdout
    assert judge("", seed_key=b"a" * 32).run_test(code, "q1_test").stdout == first
    assert judge("", seed_key=b"b" * 32).run_test(code, "q1_test").stdout != first
    assert judge("", seed_key=b"a" * 32).run_test(code, "q2_test").stdout != first
    assert judge("", seed_key=None).run_test(code, "q1_test").stdout != first


def test_the_visible_pass_line_is_the_students_not_the_judges():
    assert judge("").run_test("visible_checks_passed('q1')", "t").stdout == ""


def test_handles_that_are_not_values_are_named_in_messages():
    session = judge("class Value:\n    pass\nanswer = Value()")
    verdict = session.run_test("check_tensor(answer, torch.ones(1))", "t")
    assert "Value (an object kept in your kernel)" in verdict.message


def test_predicting_with_the_exception_class_itself():
    session = judge("prediction = RuntimeError")
    assert session.run_test(
        "check_prediction(prediction, lambda: torch.ones(2).backward())", "t").passed


def test_a_whole_question_runs_the_same_with_a_fixed_key(root):
    import nbformat

    nb = nbformat.read(root / "source" / "02_three_weights" / "02_three_weights.ipynb",
                       as_version=4)
    wrong = "def vjp(f, x, v):\n    return x * 0 + 1"
    first = run_judged(nb, "q4_vjp", wrong, seed_key=b"s" * 32)
    again = run_judged(nb, "q4_vjp", wrong, seed_key=b"s" * 32)
    assert not first.passed and first.message == again.message


# -- ordinary nbgrader tests behave in the judge as they do in nbgrader ----------------------


def test_a_students_exception_arrives_as_its_builtin_type():
    session = judge("def squares(n):\n    if n < 1:\n        raise ValueError('n < 1')\n"
                    "    return [i * i for i in range(1, n + 1)]\n"
                    "class Mine(KeyError):\n    pass\n"
                    "def lookup():\n    raise Mine('custom')")
    verdict = session.run_test(
        "try:\n    squares(0)\nexcept ValueError as e:\n    assert 'n < 1' in str(e)\n"
        "else:\n    raise AssertionError('did not raise')\n"
        "try:\n    lookup()\nexcept LookupError:\n    pass\n", "t")
    assert verdict.passed, verdict.diagnostic
    verdict = session.run_test("squares(0)", "t2")  # uncaught: still the course's diagnosis
    assert (verdict.ename, verdict.diagnosis) == ("ValueError", "raised")
    assert isinstance(verdict.error, checks.StudentError) and isinstance(verdict.error,
                                                                          ValueError)


def test_exceptions_that_steer_the_interpreter_do_not_arrive_as_themselves():
    session = judge("def stop():\n    raise StopIteration\ndef leave():\n    raise SystemExit(3)")
    for name in ("stop", "leave"):
        verdict = session.run_test(f"{name}()", name)
        assert type(verdict.error) is checks.StudentError, name


def test_a_test_that_deletes_a_students_name_and_restores_it_works_as_in_nbgrader():
    session = judge("def squares(n):\n    return [i * i for i in range(1, n + 1)]\n"
                    "def sum_of_squares(n):\n    return sum(squares(n))")
    verdict = session.run_test(
        "orig_squares = squares\ndel squares\n"
        "try:\n    sum_of_squares(1)\nexcept NameError:\n    pass\n"
        "else:\n    raise AssertionError('sum_of_squares does not use squares')\n"
        "finally:\n    squares = orig_squares\n", "uses_squares")
    assert verdict.passed, verdict.diagnostic
    assert "squares" in session.link.namespace  # restored in the kernel
    assert session.run_test("assert sum_of_squares(2) == 5", "after").passed


def test_a_module_of_the_students_kernel_is_the_judges_own_only_if_the_judge_holds_it():
    """A module the judge has imported is its own (an nbgrader test may use the student's
    ``np``); any other stays in the kernel as an inert handle: the judge never imports."""
    import sys

    absent = next(n for n in ("tabnanny", "telnetlib", "sndhdr", "mailcap", "nntplib", "cgitb")
                  if n not in sys.modules)
    session = judge(f"import os, json, types\nimport torch.nn as nn\nos_name = os.name\n"
                    f"extra = types.ModuleType({absent!r})  # a module this process never "
                    "imported")
    verdict = session.run_test("assert os.getenv('HOME') is not None\n"
                               "assert json.dumps([1]) == '[1]'\nassert nn.Linear", "t")
    assert verdict.passed, verdict.diagnostic
    before = set(sys.modules)
    extra = session.namespace["extra"]
    assert type(extra) is Handle and extra.type_name == "module"
    assert set(sys.modules) == before and absent not in sys.modules
    verdict = session.run_test("extra.check", "t2")
    assert not verdict.passed and verdict.diagnosis == "error"


class LyingLink(InProcessLink):
    """An in-process kernel whose every reply is changed by ``lie(reply)`` before the judge
    reads it: a kernel that sends whatever records it likes."""

    def __init__(self, lie):
        super().__init__()
        self.lie = lie

    def request(self, *args, **kwargs):
        reply = super().request(*args, **kwargs)
        self.lie(reply)
        return reply


def _absent_modules() -> list[str]:
    """Installed modules this process has not imported (some run code on import)."""
    import sys

    return [n for n in ("antigravity", "this", "venv", "tabnanny", "turtle", "smtpd", "imaplib",
                        "idlelib.idle", "pydoc_data.topics", "lib2to3.__main__", "json.tool")
            if n not in sys.modules]


HOSTILE_MODULES = ["venv.__main__", "unittest.__main__", "IPython.__main__", "pip.__main__",
                   "nbgrader.__main__", "pygments.__main__", "__main__", "_pytest", "os..path",
                   "..os", "os.", ".os", "os/path", "os path", "a" * 100_000, "x." * 5000 + "y",
                   "os.path", "é", "os\x00", "json\n", "builtins.__import__"]
HOSTILE_TYPES = ["SystemExit", "KeyboardInterrupt", "GeneratorExit", "BaseException",
                 "StopIteration", "__class__", "os.system", "ValueError.__class__", "type",
                 "module", "", "a" * 100_000]


def test_no_record_a_kernel_sends_makes_the_judge_import_or_escape(tmp_path, monkeypatch):
    """Every kind of record, with hostile names: the judge imports nothing (``sys.modules``
    keeps its keys), calls nothing the kernel names, and every failure is the judge's own
    (ReplyError, AnswerError, a StudentError, or a verdict), never SystemExit and the like."""
    import base64
    import sys

    from autograd_course.grading.boundary.links import AnswerError
    from autograd_course.kernel.checks import StudentError
    from autograd_course.kernel.wire import RemoteException, ReplyError

    monkeypatch.chdir(tmp_path)  # were a module run, what it writes would land here
    monkeypatch.setattr(sys, "argv", ["grader"])
    names = HOSTILE_MODULES + _absent_modules()
    data = base64.b64encode(b"\0" * 8).decode()
    values = [{"t": "handle", "h": 5, "type": "module", "callable": False, "name": n}
              for n in names]
    values += [{"t": "handle", "h": 6, "type": n, "callable": c, "name": n}
               for n in HOSTILE_TYPES for c in (True, False)]
    values += [{"t": "exception", "type": n, "message": n} for n in HOSTILE_TYPES]
    values += [{"t": kind, "h": 7, "dtype": n, "shape": [1], "data": data, "requires_grad": False,
                "is_leaf": True, "grad_fn": n[:200], "retains_grad": False,
                "is_inference": False, "storage": 0}
               for kind in ("tensor", "ndarray", "npscalar")
               for n in ["__class__", "object", "O", "torch.float32", *HOSTILE_TYPES]]
    values += [{"t": n, "h": 8, "name": "os"} for n in ["module", "import", "pickle", "__class__",
                                                         *HOSTILE_TYPES]]
    values += [{"t": "list", "h": 9, "items": [values[0], {"t": "ref", "h": 5}]},
               {"t": "dict", "h": 10, "items": [[{"t": "str", "v": "m"}, values[1]]]}]
    raised = [{"type": n, "builtins": [n, "BaseException"], "message": n} for n in HOSTILE_TYPES]
    raised += [{"type": "ValueError", "builtins": bad, "message": ["x"] * 3}
               for bad in ([["ValueError"]], [{"a": 1}], [None], "ValueError", None)]

    sent: dict = {}

    def lie(reply):
        if "value" in reply and "value" in sent:
            reply["value"] = sent["value"]
        if "raised" in sent:
            reply["raised"] = sent["raised"]
        reply["warnings"] = sent.get("warnings", [])

    session = Session(LyingLink(lie), seed_key=b"k" * 32)
    assert session.link.run_cell("answer = 1\ndef f():\n    return 1") is None
    before = set(sys.modules)
    for value in values:
        sent.clear()
        sent["value"] = value
        try:
            got = session.fetch("answer")
        except (ReplyError, AnswerError):
            got = None
        if value["t"] == "handle" and value["type"] == "module":
            held = sys.modules.get(value["name"])
            if value["name"] in ("__main__", "_pytest") or value["name"] not in before:
                assert type(got) is Handle and got.type_name == "module", value["name"][:40]
            elif isinstance(got, types.ModuleType):
                assert got is held and held.__name__ == value["name"]
        elif value["t"] == "exception":
            assert type(got) is RemoteException
        verdict = session.run_test("answer", "t")  # the same, read by a test cell
        assert isinstance(verdict.error, Exception | type(None)), verdict.error
    sent.clear()
    f = session.namespace["f"]
    assert isinstance(f, RemoteFunction)
    for record in raised:
        sent.clear()
        sent.update(raised=record, warnings=[{"t": "str"}, ["deep"] * 3, "plain", 7])
        with pytest.raises(StudentError) as caught:
            f()
        assert not isinstance(caught.value, SystemExit | GeneratorExit | KeyboardInterrupt)
        verdict = session.run_test("f()", "t")
        assert not verdict.passed and verdict.diagnosis == "raised" and isinstance(
            verdict.error, StudentError)
    assert set(sys.modules) == before


def test_loading_the_grading_pipeline_leaves_torch_to_the_judges_thread():
    # torch takes seconds to import: the judge's thread imports it while the first kernel
    # starts (judge.start), so the pipeline's own modules must not import it on load
    import subprocess
    import sys

    code = ("import sys, autograd_course.grading.preprocessors, autograd_course.cli\n"
            "print(sorted(m for m in ('torch', 'autograd_course.kernel.checks')"
            " if m in sys.modules))")
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=True).stdout.strip()
    assert loaded == "[]", loaded


def test_a_kernel_that_forks_hides_none_of_its_memory_from_the_judge():
    """The judge measures a kernel's processes from outside (memory.tree_memory_bytes): a
    fork, which makes every page shared and so no longer private to either process, hides
    nothing of what the two hold together."""
    import subprocess
    import sys
    import time

    import psutil

    from autograd_course.kernel import memory

    holder = subprocess.Popen([sys.executable, "-c", (
        "import os, sys, time\n"
        "kept = bytearray(os.urandom(2**20)) * 200  # 200 MiB of the kernel's own\n"
        "if os.fork() == 0:\n"
        "    time.sleep(60)\n"
        "print('forked', flush=True)\n"
        "time.sleep(60)\n")], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "forked"
        deadline = time.monotonic() + 10
        while not psutil.Process(holder.pid).children() and time.monotonic() < deadline:
            time.sleep(0.05)
        private = memory.private_bytes(holder.pid) + sum(
            memory.private_bytes(c.pid) for c in psutil.Process(holder.pid).children())
        assert private < 100 * 2**20  # what private memory would say: shared, so not counted
        assert memory.tree_memory_bytes(holder.pid) > 190 * 2**20
    finally:
        for process in psutil.Process(holder.pid).children():
            process.kill()
        holder.kill()
        holder.wait()


def test_a_kernel_that_floods_or_never_reads_its_input_requests_fails_its_test():
    """Found by a hostile review: a kernel that sends input requests and reads no answer
    would block the judge's send for ever; every request is counted, and a send that cannot
    go through in 2 s is the test's failure."""
    import zmq

    from autograd_course.grading.boundary.links import JupyterLink

    class NeverRead:
        def input(self, value):
            raise zmq.Again()

    link = object.__new__(JupyterLink)
    link.client, link.inputs = NeverRead(), 0
    request = {"msg_type": "input_request", "content": {"prompt": "name? "}}
    with pytest.raises(AnswerError, match="does not read the answers"):
        link._answer_input(request, None)
    link.inputs = links.MAX_CALLBACKS
    with pytest.raises(AnswerError, match="asked for input more than"):
        link._answer_input(request, None)


@pytest.mark.parametrize("name", ["UnicodeDecodeError", "UnicodeEncodeError", "ExceptionGroup"])
def test_a_builtin_error_with_other_arguments_still_arrives_as_the_students(name):
    error = naming.student_error("q1", {"type": name, "message": "bad byte",
                                      "builtins": [name, "ValueError", "Exception"]})
    assert isinstance(error, StudentError) and error.type_name == name


def test_the_course_own_modules_are_never_handed_to_a_test_by_a_reply():
    import autograd_course.grading.boundary.judge  # noqa: F401 - held by the judge, not handed out

    assert naming._held_module("autograd_course.grading.boundary.judge") is None
    assert naming._held_module("torch") is torch


def test_every_text_of_a_verdict_is_bounded_whatever_the_student_returns():
    """A check's message may quote what the answer returned (its shape, its keys): 20 MB of
    it keep only the verdict's bound in the record, the gradebook and the feedback."""
    from autograd_course.grading.boundary.judge import MAX_NOTES, VERDICT_LIMIT, Verdict

    session = judge("shape = 'x' * 20_000_000\nprint('y' * 20_000_000)")
    verdict = session.run_test("print(shape)\n"
                               "raise CheckError(f'shape {shape!r} is not a tuple', 'shape')",
                               "q1")
    assert not verdict.passed and verdict.diagnosis == "shape"
    assert verdict.message.startswith("shape 'xxx") and verdict.message.endswith("cut)")
    assert len(verdict.message) < VERDICT_LIMIT + 50 and len(verdict.stdout) < VERDICT_LIMIT + 50
    noted = Verdict(False, notes=[("d" * 10**6, "m" * 10**6)] * 1000)
    assert len(noted.notes) == MAX_NOTES
    assert all(len(d) < 400 and len(m) < VERDICT_LIMIT + 50 for d, m in noted.notes)


def test_cloudpickle_lists_the_same_submodules_from_memory_and_sees_new_imports(monkeypatch):
    import concurrent.futures  # noqa: F401 - a loaded submodule the function names
    import math
    import sys

    import cloudpickle.cloudpickle as cloudpickle_module
    import torch.nn.functional  # noqa: F401

    remembered = cloudpickle_module._find_imported_submodules  # the judge's
    find = remembered.find  # cloudpickle's own, which scans sys.modules every time

    def uses():
        return torch.nn.functional.relu, concurrent.futures.wait, math.pi, torch.nn.later

    packages = [torch, concurrent, math, 3]
    found = remembered(uses.__code__, iter(packages))
    assert found == find(uses.__code__, packages) and torch.nn.functional in found
    assert remembered(uses.__code__, iter(packages)) == found
    later = types.ModuleType("torch.nn.later")
    monkeypatch.setitem(sys.modules, "torch.nn.later", later)  # imported after the first list
    again = remembered(uses.__code__, iter(packages))
    assert later in again and again == find(uses.__code__, packages)
    replaced = types.ModuleType("torch.nn.later")  # sys.modules keeps its length
    monkeypatch.setitem(sys.modules, "torch.nn.later", replaced)
    now = remembered(uses.__code__, iter(packages))
    assert replaced in now and later not in now and now == find(uses.__code__, packages)
