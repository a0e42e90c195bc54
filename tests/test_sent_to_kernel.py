"""Nothing a test sends into the student's kernel holds more than the student may know.

Every request a test cell sends (``Session``'s pickled ``call`` and ``bind``) is recorded while
the reference solution of every question of every unit is graded in-process (as grading runs
it, :func:`support.inprocess.run_judged`), for two students. What the kernel would unpickle is
walked, bounded: functions (code and its constants, defaults, keyword defaults, closures, the
globals their code names), classes and instances (their attributes), containers; objects a
kernel imports by reference (torch, this package's kernel/) are not entered, and
nothing else of this package may be sent by reference. A question fails if
anything walked

- holds a value drawn for the test (by ``fresh``, ``fresh_float``, ``fresh_int``: a number of
  more than a few digits, alone or in a tensor) or a whole expected value of its checks, or
- differs between the two students (a drawn choice, a number derived from a draw).

The arguments of a call themselves (tensors, numbers and containers of them: the question's
inputs) are the student's to see and are not walked; functions and classes among them are.
The same walk, on attacks of its own kind, shows what it finds.
"""

from __future__ import annotations

import functools
import io
import math
import pickle
import time
import types

import cloudpickle
import pytest
import torch
from support.exercises import ALL_QUESTIONS, load
from support.inprocess import run_judged
from support.units import UNITS

from autograd_course.grading.boundary import judge, links
from autograd_course.grading.boundary.judge import Session
from autograd_course.grading.boundary.links import InProcessLink
from autograd_course.kernel import agent, checks

MAX_NODES = 200_000  # objects walked in one request
MAX_DEPTH = 60
#: Attributes a class gets from Python or torch, not from the test: torch numbers each
#: Function class it makes (``_compiled_autograd_key``) and makes a backward class for it.
SKIPPED_ATTRIBUTES = {"__dict__", "__weakref__", "_abc_impl", "_backward_cls", "__module__",
                      "_compiled_autograd_key"}


# --- recording what the tests send ----------------------------------------------------------


class Recorder:
    """What one grading sent into the kernel, what it drew, what it expected."""

    def __init__(self):
        self.payloads: list[bytes] = []
        self.drawn: set[float] = set()
        self.expected: list[torch.Tensor | float] = []
        self.tokens: set[str] = set()

    def note_drawn(self, value):
        if isinstance(value, torch.Tensor):
            values = value.detach().double().flatten().tolist()
        else:
            values = [float(value)]
        self.drawn.update(s * v for v in values if _telling(v) for s in (1, -1))

    def note_expected(self, value):
        if isinstance(value, torch.Tensor) and value.numel() > 1:
            self.expected.append(value.detach().clone())
        elif isinstance(value, torch.Tensor) and value.numel() == 1:
            self.note_expected(float(value))
        elif isinstance(value, float) and _telling(value):
            self.expected.append(value)


def _telling(value: float) -> bool:
    """A number that says something when found: not integral, and of more than 8 characters
    (a literal such as 0.5 or 1.25 in a test's code is not a draw)."""
    return math.isfinite(value) and value != int(value) and len(repr(value)) > 8


# --- what the kernel gets, walked -----------------------------------------------------------


class KernelObject:
    """An object of the kernel's own, sent back by handle: the student's already."""


class _Loader(pickle.Unpickler):
    def persistent_load(self, pid):
        return KernelObject()


def kernel_view(payload: bytes) -> list:
    """What the kernel unpickles of a request and could read, without the call's data
    arguments (the question's inputs)."""
    with links.separate_classes():
        message = _Loader(io.BytesIO(payload)).load()
    if message["op"] == "bind":
        return [message["value"]]
    return [message["target"], *(a for a in (*message["args"], *message["kwargs"].values())
                                 if not _data(a))]


def _data(value, depth: int = 0) -> bool:
    if depth > 20:
        return False
    if value is None or isinstance(value, bool | int | float | complex | str | bytes
                                   | torch.Tensor | torch.dtype | KernelObject):
        return True
    if isinstance(value, list | tuple):
        return all(_data(v, depth + 1) for v in value)
    if isinstance(value, dict):
        return all(_data(k, depth + 1) and _data(v, depth + 1) for k, v in value.items())
    return False


class Walk:
    """A canonical picture of an object and everything it reaches (:meth:`of`), and the
    numbers and tensors found on the way (``leaves``)."""

    def __init__(self, tokens: set[str]):
        self.tokens = tokens
        self.leaves: list = []
        self.seen: dict[int, int] = {}
        self.alive: list = []  # what was seen, kept so that no id is reused during the walk

    def of(self, obj, depth: int = 0):  # noqa: C901, PLR0911, PLR0912 - one case per kind
        if depth > MAX_DEPTH or len(self.seen) > MAX_NODES:
            raise AssertionError("the walk went past its bounds: a test sends too much")
        if obj is None or isinstance(obj, bool | int | complex | bytes | KernelObject):
            return obj if not isinstance(obj, KernelObject) else ("kernel",)
        if isinstance(obj, float):
            self.leaves.append(obj)
            return obj
        if isinstance(obj, str):
            return "<token>" if obj in self.tokens else obj
        if id(obj) in self.seen:
            return ("seen", self.seen[id(obj)])
        self.seen[id(obj)] = len(self.seen)
        self.alive.append(obj)
        down = functools.partial(self.of, depth=depth + 1)
        if isinstance(obj, torch.Tensor):
            self.leaves.append(obj)
            return ("tensor", str(obj.dtype), tuple(obj.shape),
                    tuple(obj.detach().flatten()[:10_000].tolist()))
        if isinstance(obj, list | tuple | set | frozenset):
            items = sorted(obj, key=repr) if isinstance(obj, set | frozenset) else obj
            return (type(obj).__name__, tuple(down(item) for item in items))
        if isinstance(obj, dict):
            return ("dict", tuple((down(k), down(v)) for k, v in obj.items()))
        if isinstance(obj, types.ModuleType):
            return ("module", _importable(obj.__name__))
        if isinstance(obj, types.CodeType):
            return ("code", obj.co_code, obj.co_names, down(obj.co_consts))
        if isinstance(obj, types.CellType):
            try:
                return ("cell", down(obj.cell_contents))
            except ValueError:
                return ("cell",)
        if isinstance(obj, types.FunctionType | type) and _by_reference(obj):
            return ("ref", _importable(obj.__module__), obj.__qualname__)
        if isinstance(obj, types.FunctionType):
            names = set(_names_in(obj.__code__))
            used = {n: v for n, v in obj.__globals__.items() if n in names}
            return ("function", obj.__qualname__, down(obj.__code__), down(obj.__defaults__),
                    down(obj.__kwdefaults__), down(obj.__closure__), down(used),
                    down(dict(vars(obj))))
        if isinstance(obj, staticmethod | classmethod):
            return (type(obj).__name__, down(obj.__func__))
        if isinstance(obj, property):
            return ("property", down(obj.fget), down(obj.fset))
        if isinstance(obj, types.MethodType):
            return ("method", down(obj.__func__), down(obj.__self__))
        if isinstance(obj, functools.partial):
            return ("partial", down(obj.func), down(obj.args), down(obj.keywords))
        if isinstance(obj, type):
            return ("class", obj.__qualname__, down(obj.__bases__),
                    down({k: v for k, v in vars(obj).items() if k not in SKIPPED_ATTRIBUTES}))
        if isinstance(obj, types.BuiltinFunctionType | types.WrapperDescriptorType
                      | types.MethodWrapperType | types.MethodDescriptorType
                      | torch.dtype | torch.device):
            return ("builtin", repr(obj))
        attributes = dict(vars(obj)) if hasattr(obj, "__dict__") else {}
        for name in getattr(type(obj), "__slots__", ()):
            if hasattr(obj, name):
                attributes[name] = getattr(obj, name)
        return ("object", down(type(obj)), down(attributes))


def _importable(module: str) -> str:
    """``module``, which the kernel is to import: of this package, only ``kernel/`` is there
    (the sandbox mounts nothing else), so a test that sends the grader's own function by name
    would fail in every graded kernel."""
    assert module == "autograd_course" or not module.startswith("autograd_course.") \
        or module.startswith("autograd_course.kernel."), (
        f"a test sends {module} by name: a graded kernel cannot import it")
    return module


def _by_reference(obj) -> bool:
    """Whether cloudpickle sends ``obj`` by name, for the kernel to import (never by value)."""
    return cloudpickle.cloudpickle._should_pickle_by_reference(obj)


def _names_in(code: types.CodeType):
    yield from code.co_names
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _names_in(const)


def findings(rec: Recorder) -> tuple[set, list[str]]:
    """The pictures of what was sent, and what in it is drawn or expected."""
    pictures, found = set(), []
    for payload in rec.payloads:
        for obj in kernel_view(payload):
            walk = Walk(rec.tokens)
            picture = walk.of(obj)
            pictures.add(picture)
            name = getattr(obj, "__qualname__", type(obj).__name__)
            for leaf in walk.leaves:
                if isinstance(leaf, float) and leaf in rec.drawn:
                    found.append(f"{name} carries the drawn number {leaf!r}")
                elif isinstance(leaf, torch.Tensor) and leaf.is_floating_point():
                    values = set(leaf.detach().double().flatten()[:10_000].tolist())
                    if values & rec.drawn:
                        found.append(f"{name} carries a tensor of drawn numbers")
                for expected in rec.expected:
                    if _same(leaf, expected):
                        found.append(f"{name} carries an expected value")
    return pictures, found


def _same(leaf, expected) -> bool:
    if isinstance(expected, float):
        return isinstance(leaf, float) and leaf == expected
    return (isinstance(leaf, torch.Tensor) and leaf.shape == expected.shape
            and leaf.dtype.is_floating_point == expected.dtype.is_floating_point
            and bool(torch.equal(leaf.detach().double(), expected.double())))


def sent_by_tests(unit: str, qid: str, student: str, monkeypatch) -> tuple[set, list[str]]:
    rec = Recorder()
    verdict = _graded(unit, qid, student, rec, monkeypatch)
    assert verdict.passed, verdict.diagnostic
    return findings(rec)


def _graded(unit, qid, student, rec, monkeypatch):
    with monkeypatch.context() as patch:
        _install(rec, patch)
        return run_judged(load(unit), qid, seed_key=judge.seed_key(b"secret", student, unit))


def _install(rec: Recorder, patch) -> None:
    dumps = judge._dumps

    def recorded(message, session):
        data = dumps(message, session)
        if isinstance(message, dict) and message.get("op") in ("call", "bind"):
            rec.payloads.append(data)
        return data

    patch.setattr(judge, "_dumps", recorded)
    proxy = judge.Session.proxy

    def recorded_proxy(self, target):
        made = proxy(self, target)
        rec.tokens.add(made.token)
        return made

    patch.setattr(judge.Session, "proxy", recorded_proxy)
    for name in ("fresh", "fresh_float", "fresh_int"):
        _patch_checks(patch, name, _noting(getattr(checks, name), rec.note_drawn, "result"))
    for name in ("check_tensor", "check_number", "check_equal", "check_gradient_of"):
        _patch_checks(patch, name, _noting(getattr(checks, name), rec.note_expected, "expected"))


def _patch_checks(patch, name: str, value) -> None:
    """Replace ``name`` in the checks package and in each of its modules that binds it, so that
    the checks' own calls (accumulation_inputs's of fresh_float, check_accumulated_grad's of
    check_number) go through ``value`` too (answer_forms, which never did, excepted)."""
    modules = [module for module in vars(checks).values() if isinstance(module, types.ModuleType)
               and module.__name__.startswith(f"{checks.__name__}.")
               and module.__name__ != f"{checks.__name__}.answer_forms"]
    for module in (checks, *modules):
        if name in vars(module):
            patch.setattr(module, name, value)


def _noting(real, note, what: str):
    """``real``, which tells ``note`` of its result, or of its argument ``expected``."""

    @functools.wraps(real)
    def noting(*args, **kwargs):
        if what == "expected":
            note(args[1] if len(args) > 1 else kwargs.get("expected"))
        value = real(*args, **kwargs)
        if what == "result":
            note(value)
        return value

    return noting


# --- every question of every unit -------------------------------------------------------------


#: Questions known to send the kernel something drawn, each with why: strict xfail (fixed, the
#: question passes here, and its entry must go). None now: the five this test found in units
#: 01, 02, 05 and 08 pass drawn inputs as arguments and send functions that are the same for
#: every student.
KNOWN: dict[tuple[str, str], str] = {}


@pytest.mark.parametrize(("unit", "qid"), [
    pytest.param(u, q, marks=pytest.mark.xfail(reason=KNOWN[u, q], strict=True))
    if (u, q) in KNOWN else (u, q) for u, q in ALL_QUESTIONS],
    ids=[f"{u}-{q}" for u, q in ALL_QUESTIONS])
def test_nothing_a_test_sends_into_the_kernel_carries_a_draw_or_an_answer(unit, qid,
                                                                         monkeypatch):
    first, found = sent_by_tests(unit, qid, "ada", monkeypatch)
    assert not found, found[:5]
    second, found = sent_by_tests(unit, qid, "blaise", monkeypatch)
    assert not found, found[:5]
    differ = first ^ second
    assert not differ, ("what the kernel gets differs between two students: "
                        f"{sorted(str(p)[:300] for p in differ)[:3]}")


def test_grading_in_process_leaves_the_graders_classes_as_they_are(monkeypatch):
    """The in-process 'kernel' unpickles what 09 Q1 sends by value (StandInContext) as a new
    class, as a real kernel does, not into the grader's own (cloudpickle's class tracker)."""
    from autograd_course.kernel.checks import functions

    methods = dict(vars(functions.StandInContext))
    sent_by_tests("09_extending", "q1_sinc", "ada", monkeypatch)
    assert dict(vars(functions.StandInContext)) == methods
    assert functions.StandInContext.save_for_backward.__globals__ is vars(functions)


def test_every_unit_is_walked():
    assert {unit for unit, _ in ALL_QUESTIONS} == set(UNITS)


# --- the walk finds what it must ---------------------------------------------------------------


def _sent_in_one_test(source: str, monkeypatch) -> tuple[set, list[str]]:
    """Run a test cell of our own in the judge, against an in-process kernel whose
    ``answer`` calls what it is given; what it sent, walked."""
    rec = Recorder()
    session = Session(InProcessLink(), seed_key=b"k")
    session.link.run_cell("def answer(f, *args):\n    return f(*args)\n")
    with monkeypatch.context() as patch:
        _install(rec, patch)
        session.run_locked("from autograd_course.kernel.checks import fresh, fresh_float, "
                           "check_tensor, run_answer, proxy\nimport torch", "imports")
        verdict = session.run_test(source, "attack_test")
    assert verdict.passed, verdict.diagnostic
    return findings(rec)


@pytest.mark.parametrize("source", [
    # a drawn number as a default, in a closure, as a global the code names
    "c = fresh_float(0.5, 2.0)\ndef f(x, c=c):\n    return c * x\n"
    "check_tensor(run_answer(answer, f, torch.ones(2)), c * torch.ones(2))",
    "def make(c):\n    return lambda x: c * x\nc = fresh_float(0.5, 2.0)\n"
    "check_tensor(run_answer(answer, make(c), torch.ones(2)), c * torch.ones(2))",
    "c = fresh_float(0.5, 2.0)\ndef f(x):\n    return c * x\n"
    "check_tensor(run_answer(answer, f, torch.ones(2)), c * torch.ones(2))",
    # a drawn tensor as a class attribute; an expected value as an instance's attribute
    "class Scale:\n    by = fresh(3)\n    def __call__(self, x):\n        return self.by * x\n"
    "run_answer(answer, Scale(), torch.ones(3))",
    "class Keep:\n    def __init__(self, v):\n        self.v = v\n    def __call__(self):\n"
    "        return 0\nright = torch.tensor([0.123456789, 2.5])\n"
    "run_answer(answer, Keep(right))\ncheck_tensor(right, right)",
])
def test_the_walk_finds_a_draw_or_an_answer_wherever_it_is_carried(source, monkeypatch):
    _, found = _sent_in_one_test(source, monkeypatch)
    assert found


def test_the_walk_tells_a_drawn_choice_between_two_students(monkeypatch):
    source = ("options = (lambda x: x + 1, lambda x: x * 3)\n"
              "run_answer(answer, options[int(fresh_float(0, 2))], torch.ones(2))")
    pictures = set()
    for key in range(40):
        rec = Recorder()
        session = Session(InProcessLink(), seed_key=bytes([key]))
        session.link.run_cell("def answer(f, *args):\n    return f(*args)\n")
        with monkeypatch.context() as patch:
            _install(rec, patch)
            session.run_locked("from autograd_course.kernel.checks import fresh_float, run_answer\n"
                               "import torch", "imports")
            assert session.run_test(source, "choice_test").passed
        pictures.add(frozenset(findings(rec)[0]))
    assert len(pictures) == 2, "the two choices give two different pictures"


def test_a_proxy_carries_no_draw_and_still_computes(monkeypatch):
    source = ("c = fresh_float(0.5, 2.0)\ndef f(x):\n    return c * x\n"
              "check_tensor(run_answer(answer, proxy(f), torch.ones(2)), c * torch.ones(2))")
    _, found = _sent_in_one_test(source, monkeypatch)
    assert not found


# --- proxies and their callbacks ----------------------------------------------------------------

_FUNCTION = """
import torch
from autograd_course.kernel.checks import fresh_float, proxy, run_answer

factor = fresh_float(1.5, 3.0)


class Broken(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return factor * 2 * x * grad
"""


def _session(student_code: str) -> Session:
    session = Session(InProcessLink(), seed_key=b"key")
    assert session.link.run_cell(student_code) is None
    session.run_locked(_FUNCTION, "setup")
    return session


def test_a_proxy_function_computes_in_the_judge_and_shows_nothing_of_its_bug():
    session = _session('''
import torch

def probe(function):
    x = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    function.apply(x).sum().backward()
    found = []
    for name in ("forward", "backward"):
        method = vars(function)[name].__func__
        found += [cell.cell_contents for cell in method.__closure__ or ()]
        found += list(method.__defaults__ or ())
    return x.grad, found, sorted(vars(function))
''')
    verdict = session.run_test(
        "grad, found, names = run_answer(probe, proxy(Broken))\n"
        "assert torch.allclose(grad, factor * 2 * torch.tensor([1.0, 2.0], "
        "dtype=torch.float64))\n"
        "assert all(isinstance(item, str) and len(item) == 32 for item in found), found\n"
        "assert not any('factor' in name for name in names), names\n", "probe_test")
    assert verdict.passed, verdict.diagnostic


def test_a_callback_is_answered_only_while_its_test_runs():
    session = _session('''
kept = []

def keep(function):
    kept.append(function)
    return 0

def use_later(x):
    return kept[0].apply(x)
''')
    assert session.run_test("run_answer(keep, proxy(Broken))", "first_test").passed
    verdict = session.run_test(
        "run_answer(use_later, torch.ones(2, dtype=torch.float64))", "second_test")
    assert not verdict.passed
    assert "not a function of this test" in verdict.message


@pytest.mark.parametrize(("prompt", "reason"), [
    (agent.CALLBACK + "not json", "JSONDecodeError"),
    (agent.CALLBACK + '{"token": "0123", "method": "forward", "args": []}',
     "not a function of this test"),
    (agent.CALLBACK + '{"token": 5, "method": "forward", "args": []}',
     "not a function of this test"),
    (agent.CALLBACK + "x" * (links.MAX_CALLBACK_BYTES + 1), "too large"),
])
def test_a_callback_that_is_not_this_tests_is_refused(prompt, reason):
    session = _session("")
    assert reason in session._answer(prompt)


def test_a_callback_takes_plain_values_only():
    """A kernel object as an argument (a handle) is refused: the judge's function never gets
    something it could call back into the kernel."""
    session = _session('''
def sneak(function):
    return function.apply(lambda: 0)
''')
    verdict = session.run_test("run_answer(sneak, proxy(Broken))", "sneak_test")
    assert not verdict.passed
    assert "tensors and numbers only" in verdict.message


def test_a_callback_costs_the_judge_no_more_than_its_arguments_size():
    """Found by a hostile review: a shared structure (a list of 40 references to a list of 40
    ..., eight deep: 40**8 paths in a 2 kB reply), inputs that broadcast to n**2 or n**3
    elements, and a container of tensors are refused at once, before the test's function
    runs; arguments are not kept by the judge."""
    session = _session('''
import torch

class Context:
    saved_tensors = ()

def shared(function):
    d = 0.0
    for _ in range(8):
        d = [d] * 40
    return function.backward(Context(), d)

def broadcast(function):
    n = 4000
    return function.apply(torch.ones(n, 1, dtype=torch.float64),
                          torch.ones(1, n, dtype=torch.float64))

def many(function):
    for _ in range(30):
        function.apply(torch.ones(2**16, dtype=torch.float64))
    return 0
''')
    session.run_locked("""
class Two(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, y):
        return x * y

    @staticmethod
    def backward(ctx, grad):
        return grad, grad
""", "setup2")
    started = time.monotonic()
    for answer, function, says in (("shared", "Broken", "tensors and numbers only"),
                                   ("broadcast", "Two", "the test's own sizes")):
        verdict = session.run_test(f"run_answer({answer}, proxy({function}))", f"{answer}_test")
        assert not verdict.passed and says in verdict.message, verdict.message
    assert time.monotonic() - started < 10
    kept = len(session._kept)
    assert session.run_test("run_answer(many, proxy(Broken))", "many_test").passed
    assert len(session._kept) - kept < 5  # the 30 arguments of 512 kB are not held


def test_a_view_sent_into_the_kernel_carries_only_its_own_elements():
    """Pickling a view sends its whole storage: a test's slice of a larger tensor would carry
    the rest of it into the kernel."""
    base = torch.arange(1000.0, dtype=torch.float64)
    found = pickle.loads(judge._dumps({"x": base[10:13]}, _session("")))["x"]
    assert torch.equal(found, base[10:13])
    assert found.untyped_storage().nbytes() == 3 * 8


def test_a_proxy_outside_a_call_does_nothing():
    with pytest.raises(RuntimeError, match="only while the test calls your code"):
        agent.proxy_callable("0" * 32, "f")(1)


def test_proxies_call_back_through_real_kernels_cold_and_warm(root, tmp_path):
    """09 Q2's stand-in Functions in sandboxed kernels, the first notebook's started cold, the
    second's forked from the warm zygote: gradcheck's calls of forward and backward go through
    each kernel's stdin channel to the judge, and the answer scores."""
    import subprocess
    import sys

    notebooks = []
    for name in ("cold", "warm"):
        (tmp_path / name).mkdir()
        notebooks.append(tmp_path / name / "09_extending.ipynb")
        notebooks[-1].write_text(
            (root / "source" / "09_extending" / "09_extending.ipynb").read_text())
    result = subprocess.run([sys.executable, "-m", "autograd_course", "check",
                             *map(str, notebooks)], cwd=root, capture_output=True, text=True,
                            timeout=600)
    assert result.stdout.count("PASS q2_wrong_inputs_test: 2/2") == 2, result.stdout[-3000:]
