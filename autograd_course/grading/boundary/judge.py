"""The judge: runs a notebook's test cells in the grader's process, reading the kernel as data.

A :class:`Session` runs the locked and test cells here, in a
:class:`~autograd_course.grading.boundary.namespace.Namespace` whose missing names are asked of
the student's kernel over a link (:mod:`.links`), and decides each test cell's :class:`Verdict`.
Rules: replies are data, never code (:mod:`.naming`); the judge's own objects travel only as
copies; no expected value enters the kernel, and what the student may not know goes as a proxy
(:mod:`.proxies`); whatever a test cell raises but ``KeyboardInterrupt`` is that test's failure.
Why: docs/security.md, "Test cells run in the judge".
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import hmac
import io
import re
import secrets
import sys
import threading
import time
import types
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import cloudpickle
import torch

from autograd_course.grading import record
from autograd_course.grading.boundary.links import (
    MAX_CALLBACK_BYTES,
    MAX_CALLBACKS,
    AnswerError,
    KernelDied,
    timed_out,
    too_structured,
)
from autograd_course.grading.boundary.namespace import Namespace
from autograd_course.grading.boundary.naming import _held_module, student_error
from autograd_course.grading.boundary.proxies import Proxy, _callback_arguments, _FunctionCalls
from autograd_course.grading.containment import describe
from autograd_course.kernel import checks
from autograd_course.kernel.agent import CALLBACK
from autograd_course.kernel.checks import CheckError, StudentError
from autograd_course.kernel.wire import Decoder, Handle, RemoteFunction, ReplyError

MESSAGE_LIMIT = 300  # characters of a student's exception message shown in feedback
#: The most characters a verdict's message, stdout or note keeps: a check's message may quote
#: what the student's code returned, which is as long as the kernel makes it.
VERDICT_LIMIT = 4000
MAX_NOTES = 20  # notes (facts worth no points) one verdict keeps


class AuthoringError(Exception):
    """A test that breaks the judge's rules (e.g. sends an expected value into the kernel)."""


@dataclass
class Verdict:
    """What the judge decided for one test cell."""

    passed: bool
    ename: str = ""
    message: str = ""
    stdout: str = ""
    diagnosis: str = ""  # a short code of the mistake: "sign", "blank", "crashed"...
    error: BaseException | None = field(default=None, repr=False, compare=False)
    notes: list[tuple[str, str]] = field(default_factory=list)  # (diagnosis, message): 0 points

    def __post_init__(self):
        """Every text of a verdict is bounded here, whatever made it (:data:`VERDICT_LIMIT`):
        the record, the gradebook's comment and the feedback page all take it from here."""
        self.message, self.stdout = _bounded(self.message), _bounded(self.stdout)
        self.notes = [(_bounded(d, MESSAGE_LIMIT), _bounded(m)) for d, m in self.notes[:MAX_NOTES]]

    @property
    def diagnostic(self) -> str:
        return f"{self.ename}: {self.message}" if self.ename else ""


@dataclass
class Session:
    """The judging of one notebook: its link to the kernel, its namespace and its seeds.

    ``seed_key`` makes the hidden inputs of every test cell a function of the grader's secret
    and the test's identity (student, assignment, notebook, cell): the same submission always
    gets the same inputs, different students get different ones. Without it, inputs are fresh.
    """

    link: object
    seed_key: bytes | None = None
    timeout: float = 60.0
    budget: float = float("inf")  # time.monotonic() when the notebook's time is spent
    namespace: Namespace = field(init=False)
    locked_errors: list[str] = field(default_factory=list)

    def __post_init__(self):
        self.namespace = Namespace(self)
        self._kept: dict[int, tuple[object, int, object]] = {}  # id -> (obj, handle, stamp)
        self._copies: dict[int, tuple[object, int]] = {}  # id of a judge's argument -> copy
        self._carried: list[object] = []  # what test functions sent into the kernel carried
        self._callbacks: dict[str, Callable] = {}  # proxy token -> the judge's own code
        self._answered = 0  # callbacks answered in the running test
        self._in_callback = False
        self._deadline = float("inf")
        self._generator: torch.Generator | None = None
        self._notes: list[tuple[str, str]] = []
        self.dead: str | None = None

    # -- running the notebook's cells --------------------------------------------------
    def run_locked(self, source: str, label: str) -> None:
        """Run a locked (trusted) cell in the judge's namespace too."""
        try:
            with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                exec(compile(source, f"<{label}>", "exec"), self.namespace)
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # noqa: BLE001 - the course's own cell failed here
            self.locked_errors.append(f"{label}: {type(exc).__name__}: {exc}")
        finally:
            self.link.release()

    def run_test(self, source: str, label: str, *, unanswered: bool = False,
                 answer_error: str = "") -> Verdict:
        """Run one test cell here; pass it only if it runs to its end without an error.

        ``unanswered`` says that the question's answer cell still raised
        NotImplementedError in the kernel (the blank stub), so a failure means "not answered";
        ``answer_error`` is the error an answer cell of the question raised, if any.
        """
        self._deadline = min(time.monotonic() + self.timeout, self.budget)
        self._generator = self._seeded(label)
        self._notes = []
        self._callbacks.clear()  # proxies of earlier tests are answered no more
        self._answered = 0
        out = io.StringIO()
        token = checks.JUDGE.set(self)
        try:
            if self.dead:
                raise KernelDied(self.dead)
            code = compile(source, f"<{label}>", "exec")
            with contextlib.redirect_stdout(out), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                exec(code, self.namespace)
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # noqa: BLE001 - every failure, SystemExit's too, is
            verdict = self._diagnose(exc, unanswered)  # this test's, as a diagnosis
            if verdict.diagnosis == "blank" and answer_error and not unanswered:
                verdict.message += f" (Its answer cell raised {_cut(answer_error, 120)}.)"
            return replace(verdict, stdout=out.getvalue(), error=exc, notes=self._notes)
        finally:
            checks.JUDGE.reset(token)
            self._callbacks.clear()
            self._deadline = float("inf")
            self.link.release()
        return Verdict(True, stdout=out.getvalue(), notes=self._notes)

    def note(self, diagnosis: str, message: str) -> None:
        """A diagnosis that costs no points (see :func:`autograd_course.kernel.checks._fact`): shown
        with the running test's result, once."""
        if (diagnosis, message) not in self._notes:
            self._notes.append((diagnosis, message))

    def kernel_memory(self) -> int:
        """The kernel's memory in bytes (:meth:`.links.JupyterLink.memory`), read from outside it,
        after the kernel gave back what it had freed (a kernel that does not only counts
        more)."""
        self._request({"op": "trim"})
        return self.link.memory()

    def forget_all(self) -> None:
        """Make the kernel let go of every object it sent or received so far (what they kept
        alive is freed there); their handles here are no longer valid."""
        self._request({"op": "forget"})
        self._kept.clear()
        self._copies.clear()

    def _diagnose(self, exc: BaseException, unanswered: bool) -> Verdict:
        if isinstance(exc, AuthoringError):
            raise exc  # a bug of the course, not of the student: stop loudly
        if not isinstance(exc, Exception):  # SystemExit, GeneratorExit...: the test stopped
            return Verdict(False, "TestStopped",
                           _cut(f"the test stopped on {describe(exc)} in the grader; it "
                                "counts as failed"), diagnosis="error")
        stub = isinstance(exc, StudentError) and exc.type_name == "NotImplementedError"
        if stub or (unanswered and not isinstance(exc, KernelDied)):
            return Verdict(False, "NotAnswered",
                           "the answer cell still raises NotImplementedError: replace "
                           "`raise NotImplementedError()` with your answer.", diagnosis="blank")
        if isinstance(exc, StudentError):
            return Verdict(False, exc.type_name, _cut(str(exc)), diagnosis="raised")
        if isinstance(exc, NameError):
            name = getattr(exc, "name", None) or "the answer"
            return Verdict(False, "NotAnswered",
                           f"`{name}` is not defined: run the answer cell (and check the "
                           "spelling of the name). A blank answer scores 0.", diagnosis="blank")
        if isinstance(exc, CheckError):
            return Verdict(False, "CheckError", str(exc), diagnosis=exc.diagnosis)
        if isinstance(exc, KernelDied):
            return Verdict(False, "KernelDied", str(exc), diagnosis="crashed")
        if isinstance(exc, AnswerError | ReplyError):
            return Verdict(False, "AnswerError", _cut(str(exc)), diagnosis="unreadable")
        return Verdict(False, type(exc).__name__, _cut(str(exc)), diagnosis="error")

    def _seeded(self, label: str) -> torch.Generator | None:
        if self.seed_key is None:
            return None
        digest = hmac.new(self.seed_key, label.encode(), hashlib.sha256).digest()
        return torch.Generator().manual_seed(int.from_bytes(digest[:8], "little"))

    def generator(self) -> torch.Generator:
        """The generator of the running test's hidden inputs (see :func:`checks.fresh`)."""
        if self._generator is None:
            self._generator = torch.Generator().manual_seed(secrets.randbits(63))
        return self._generator

    # -- talking to the kernel ---------------------------------------------------------
    # The link holds the kernel from an operation's first request (run_test, run_locked,
    # files) and releases it when the operation ends: nbclient's next cell then runs.
    def _request(self, message: dict) -> dict:
        if self.dead:
            raise KernelDied(self.dead)
        nonce = secrets.token_hex(8)
        left = self._deadline - time.monotonic()
        if left <= 0:
            if time.monotonic() >= self.budget:
                raise AnswerError("the notebook's time budget was spent")
            raise AnswerError(f"the test ran out of time ({self.timeout:.0f} s)")
        if self._in_callback:
            raise AuthoringError("a test's function answering a callback asked the kernel")
        timeout = min(left, self.timeout)
        # the kernel serves no request past its deadline, and sends no reply (agent.serve):
        # the link waits until the same deadline
        deadline = time.monotonic() + timeout
        payload = base64.b64encode(_dumps(dict(message, nonce=nonce, deadline=deadline),
                                          self)).decode("ascii")
        try:
            if (left := deadline - time.monotonic()) <= 0:
                raise timed_out(timeout)
            reply = self.link.request(payload, left, self._answer)
            if reply.get("late"):  # in process: the kernel's late reply comes back
                raise timed_out(timeout)
        except KernelDied as exc:
            self.dead = str(exc)
            raise
        except AnswerError:
            if time.monotonic() >= self.budget:  # the same words, however much was left
                raise AnswerError("no answer before the notebook's time budget was spent"
                                  ) from None
            raise
        if reply.get("nonce") != nonce:
            raise AnswerError("the kernel answered a different request")
        if "unreadable" in reply:
            raise AnswerError(f"the answer could not be read ({_cut(str(reply['unreadable']))})")
        return reply

    def fetch(self, name: str):
        """The value the kernel binds to ``name`` now (KeyError when it binds none)."""
        reply = self._request({"op": "get", "name": name})
        if "missing" in reply:
            raise KeyError(name)
        return self._decoder().decode(reply.get("value"))

    def delete(self, name: str) -> None:
        """Delete the student's ``name`` in the kernel (KeyError when it binds none)."""
        if "missing" in self._request({"op": "delete", "name": name}):
            raise KeyError(name)

    def bind(self, name: str, value) -> None:
        """Bind ``name`` in the kernel to a kernel object (one that came from there)."""
        self._request({"op": "bind", "name": name, "value": value})

    def files(self, limit: int, max_files: int) -> dict[str, bytes]:
        """The files the notebook wrote in its working folder, as the kernel sends them
        (relative paths checked to stay below it; at most ``limit`` bytes, ``max_files``)."""
        try:
            reply = self._request({"op": "files", "limit": limit, "max_files": max_files})
        finally:
            self.link.release()
        found = reply.get("files")
        if not isinstance(found, dict) or len(found) > max_files:
            raise AnswerError("the kernel's list of files was not readable")
        files, total = {}, 0
        for name, data in found.items():
            parts = name.split("/")
            if not (isinstance(data, str) and all(_FILE_PART.match(p) for p in parts)):
                continue
            try:
                content = base64.b64decode(data, validate=True)
            except ValueError:
                continue
            total += len(content)
            if total > limit:
                break
            files[name] = content
        return files

    def call(self, target, args: tuple, kwargs: dict, *, label: str, no_grad: bool = False):
        """Call ``target`` in the kernel; return ``(result, warnings)``.

        ``target`` is a :class:`RemoteFunction` or a test's own function (sent by value). The
        judge's own arguments travel as copies and are never changed here, whatever the call
        does to the kernel's copies: read those with :meth:`current`.
        """
        if not isinstance(target, Handle):
            self._remember_carried(target)
        for value in (*args, *kwargs.values()):
            if callable(value) and not isinstance(value, Handle | type):
                self._remember_carried(value)
        reply = self._request({"op": "call", "target": target, "args": list(args),
                               "kwargs": dict(kwargs), "no_grad": bool(no_grad)})
        decoder = self._decoder()
        states = reply.get("args")
        if not isinstance(states, list) or len(states) != len(args):
            raise AnswerError("the kernel's answer did not describe the arguments")
        for local, sent in zip(args, states, strict=True):
            decoder.decode(sent)  # the kernel's copy after the call: a later reply may refer to it
            if isinstance(sent, dict) and isinstance(sent.get("h"), int) and (
                    self.handle_of(local) is None):
                self._copies[id(local)] = (local, sent["h"])
        said = reply.get("warnings", [])
        caught = [w[:500] for w in (said if isinstance(said, list) else [])[:20]
                  if isinstance(w, str)]
        if "raised" in reply:
            raised = reply["raised"]
            if not isinstance(raised, dict):
                raise AnswerError("the kernel's answer was not readable")
            raise student_error(label, raised)
        return decoder.decode(reply.get("value")), caught

    def current(self, value):
        """``value`` as the kernel holds it now: a value that came from the kernel, read again,
        or the kernel's copy of a judge's argument after the last call it was passed to (the
        test sees what the student's code did to it). Anything else is returned as it is."""
        handle = self.handle_of(value)
        copy = self._copies.get(id(value))
        if handle is None and copy is not None and copy[0] is value:
            handle = copy[1]
        if handle is None:
            return value
        reply = self._request({"op": "read", "handle": handle})
        return self._decoder().decode(reply.get("value"))

    # -- proxies: what the kernel calls, kept here ------------------------------------
    def proxy(self, target):
        """The kernel's stand-in for ``target``, a test's function or ``torch.autograd.Function``
        class: a :class:`Proxy` whose calls come back here (:meth:`_answer`) for this test only.
        ``target``, its code and what it carries stay in the judge."""
        token = secrets.token_hex(16)
        if isinstance(target, type) and issubclass(target, torch.autograd.Function):
            self._callbacks[token] = _FunctionCalls(target)
            return Proxy(token, "function", target.__name__)
        if not callable(target):
            raise AuthoringError("only a function or an autograd Function can be a proxy")
        self._callbacks[token] = {"call": target}
        return Proxy(token, "callable", getattr(target, "__name__", "function"))

    def _answer(self, prompt: str) -> str:
        """Answer a proxy's callback: ``prompt`` is data (:data:`CALLBACK`, then JSON of the
        token, the method and the arguments as records), decoded like any reply; only a token
        this test made is answered, with plain values as arguments, within the test's time and
        :data:`MAX_CALLBACKS`. The answer is JSON: the result pickled, or an error's reason."""
        import json

        try:
            if len(prompt) > MAX_CALLBACK_BYTES:
                raise AnswerError("the call is too large")
            self._answered += 1
            if self._answered > MAX_CALLBACKS:
                raise AnswerError(f"more than {MAX_CALLBACKS} calls of the test's functions")
            if time.monotonic() > self._deadline:
                raise AnswerError("the test's time is spent")
            if too_structured(prompt):
                raise AnswerError("the call holds too much structure")
            request = json.loads(prompt[len(CALLBACK):])
            methods = self._callbacks.get(request.get("token")) if isinstance(
                request, dict) and isinstance(request.get("token"), str) else None
            method = methods.get(request.get("method")) if methods is not None and isinstance(
                request.get("method"), str) else None
            records = request.get("args") if methods is not None else None
            if method is None or not isinstance(records, list):
                raise AnswerError("not a function of this test")
            args = _callback_arguments(records, self._callback_decoder())
            self._in_callback = True
            try:
                with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
                    warnings.simplefilter("ignore")
                    result = method(*args)
            finally:
                self._in_callback = False
            data = _dumps(result, self)
            if len(data) > MAX_CALLBACK_BYTES:
                raise AnswerError("the test's function gave too large a result")
            return json.dumps({"value": base64.b64encode(data).decode("ascii")})
        except Exception as exc:  # noqa: BLE001 - the kernel is told why, the test goes on
            return json.dumps({"error": _cut(f"{type(exc).__name__}: {exc}", 200)})

    # -- values and handles ------------------------------------------------------------
    def _decoder(self) -> Decoder:
        def wrap(record: dict, handle: int) -> Handle:
            # the record's fields are strings and a bool (Decoder checked them): nothing here
            # imports, or looks a name up but in sys.modules (see _held_module)
            if record["type"] == "module":
                module = _held_module(record["name"])
                return Handle(self, handle, "module") if module is None else module
            if record["callable"]:
                name = (record["name"] or record["type"])[:100]
                return RemoteFunction(self, handle, record["type"], name)
            return Handle(self, handle, record["type"])

        return Decoder(wrap, self._keep, deadline=self._deadline)

    def _callback_decoder(self) -> Decoder:
        """The decoder of a callback's arguments: plain values only (a handle is refused), and
        nothing kept (they are the kernel's copies, never sent back as its objects)."""

        def refuse(record: dict, handle: int):
            raise AnswerError("the test's functions take tensors and numbers only")

        return Decoder(refuse, lambda value, handle: None, deadline=self._deadline)

    def _keep(self, value, handle: int) -> None:
        self._kept[id(value)] = (value, handle, _stamp(value))

    def handle_of(self, value) -> int | None:
        """The kernel's handle for ``value``, if it came from there and is unchanged here."""
        if isinstance(value, Handle):
            return value._handle if value._session is self else None
        kept = self._kept.get(id(value))
        if kept is None or kept[0] is not value or kept[2] != _stamp(value):
            return None
        return kept[1]

    def _remember_carried(self, fn) -> None:
        """Remember the objects a test function carries into the kernel (closure, defaults)."""
        if not isinstance(fn, types.FunctionType):
            return
        carried = list(fn.__defaults__ or ()) + list((fn.__kwdefaults__ or {}).values())
        carried += [cell.cell_contents for cell in fn.__closure__ or ()
                    if _cell_has_value(cell)]
        names = set(_names_in(fn.__code__))
        carried += [dict.__getitem__(fn.__globals__, n) for n in names
                    if dict.__contains__(fn.__globals__, n)]
        self._carried.extend(v for v in carried if isinstance(v, torch.Tensor | float | list))

    def check_not_sent(self, expected) -> None:
        """Refuse an expected value that a test function carried into the kernel."""
        for value in self._carried:
            same = value is expected
            if isinstance(value, torch.Tensor) and isinstance(expected, torch.Tensor):
                same = same or (value.numel() > 0 and expected.numel() > 0 and
                                value.untyped_storage().data_ptr()
                                == expected.untyped_storage().data_ptr())
            if same:
                raise AuthoringError("a test function sent into the kernel carries an expected "
                                     "value (in its closure or defaults): compute it apart")


# --- helpers -------------------------------------------------------------------------------

_FILE_PART = re.compile(r"^[A-Za-z0-9_+@=,-][A-Za-z0-9 ._+@=,-]{0,127}$")


def _stamp(value):
    """What must be unchanged for a kept value to be sent back as the kernel's object."""
    if isinstance(value, torch.Tensor):
        return value._version
    if isinstance(value, list | tuple):
        return tuple(id(item) for item in value)
    if isinstance(value, dict):
        return tuple((id(k), id(v)) for k, v in value.items())
    return None


def _cell_has_value(cell) -> bool:
    try:
        cell.cell_contents  # noqa: B018 - an empty cell raises ValueError
    except ValueError:
        return False
    return True


def _names_in(code: types.CodeType):
    yield from code.co_names
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _names_in(const)


def _remembered(find):
    """cloudpickle's ``_find_imported_submodules`` (private), remembered.

    For each function it pickles by value, cloudpickle lists the loaded submodules the code
    can reach through a package it names (``torch.nn`` through ``torch``): it goes through all
    of ``sys.modules`` (3,000 names with torch, 2-3 ms), and the judge sends the same test
    functions for every call of every submission. The list depends only on the code's names,
    the packages and ``sys.modules``: it is kept per names and packages while ``sys.modules``
    keeps its length (a new import starts over) and still holds each module listed (else a
    module gone from it would be pickled by value)."""
    known: dict[tuple, list] = {}
    loaded = [0]
    lock = threading.Lock()

    def submodules(code, top_level_dependencies):
        packages = [x for x in top_level_dependencies if isinstance(x, types.ModuleType)]
        key = (frozenset(code.co_names),
               tuple((x.__name__, bool(getattr(x, "__package__", None))) for x in packages))
        with lock:
            if loaded[0] != len(sys.modules) or len(known) > 4096:
                known.clear()
                loaded[0] = len(sys.modules)
            found = known.get(key)
            if found is None or any(sys.modules.get(m.__name__) is not m for m in found):
                found = known[key] = find(code, packages)
            return list(found)

    submodules.find = find
    return submodules


cloudpickle.cloudpickle._find_imported_submodules = _remembered(
    cloudpickle.cloudpickle._find_imported_submodules)


class _Pickler(cloudpickle.Pickler):
    """Pickles a request: a kernel object (by handle) goes back as itself."""

    def __init__(self, file, session: Session):
        super().__init__(file)
        self.session = session

    def persistent_id(self, obj):
        handle = self.session.handle_of(obj)
        if handle is not None:
            return ("h", handle)
        if isinstance(obj, Handle):
            raise AuthoringError("a handle from another notebook's kernel")
        if isinstance(obj, torch.Tensor) and obj.requires_grad and not obj.is_leaf:
            raise AuthoringError(
                "a tensor with a graph cannot be sent into the kernel: build it there, "
                "with in_kernel(a function that makes it)")
        return None

    def reducer_override(self, obj):
        """A tensor that views part of a larger storage travels as a copy of its own elements
        (pickling a view sends its whole storage: values the test never gave the student)."""
        if type(obj) is torch.Tensor and obj.layout == torch.strided and (
                obj.untyped_storage().nbytes() > obj.numel() * obj.element_size()):
            copy = obj.detach().clone().requires_grad_(obj.requires_grad)
            return copy.__reduce_ex__(self.proto)
        return super().reducer_override(obj)


def _dumps(message: dict, session: Session) -> bytes:
    buffer = io.BytesIO()
    _Pickler(buffer, session).dump(message)
    return buffer.getvalue()


def _bounded(text: str, limit: int = VERDICT_LIMIT) -> str:
    """``text`` as it is, lines kept, or its first ``limit`` characters and how many were cut."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text) - limit:,} more characters cut)"


def _cut(text: str, limit: int = MESSAGE_LIMIT) -> str:
    return record.shorten(text, limit)


def seed_key(secret: bytes, *parts: str) -> bytes:
    """The key of a notebook's hidden inputs: the grader's secret and who and what is graded."""
    return hmac.new(secret, "\0".join(parts).encode(), hashlib.sha256).digest()


__all__ = ["AnswerError", "AuthoringError", "Handle", "KernelDied", "RemoteFunction", "Session",
           "Verdict", "seed_key"]
