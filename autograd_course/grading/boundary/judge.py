"""The judge: run test cells in the grader's own process, reading the student's kernel as data.

A notebook is graded by two processes. The student's kernel (sandboxed, see :mod:`.sandbox`)
runs the student's cells. The judge, here, runs the test cells: in a fresh namespace per
notebook that holds what the locked cells define (run here as well as in the kernel), with
the grader's own torch and check helpers. A name the test reads and the judge does not
define is asked of the kernel at that point of the notebook (:class:`Namespace`):

- a value comes back as plain data (:mod:`autograd_course.kernel.wire`), decoded into objects the
  judge makes itself, so nothing the kernel sends can run code here or lie to a comparison;
- a function becomes a :class:`RemoteFunction`: calling it sends the arguments into the
  kernel (pickled; the test's own functions travel by value), and the result comes back as
  data, with the state of every argument after the call (an in-place change is seen);
- anything else stays in the kernel as a :class:`Handle`, which a later call can take.

Every value that comes back remembers the kernel's object: passing it into a later call
hands the kernel its original (with graph, ``.grad`` and aliasing). The judge's own objects
(a test's inputs, its ground truths) only ever travel as copies, and nothing the kernel does
or says changes them, so an expected value computed from them after a call is still the
truth; what a call did to the kernel's copy of an argument is read with :meth:`Session.current`.
Expected values and grader secrets never enter the kernel; a test function sent there must not
carry an expected value (:meth:`Session.check_not_sent` enforces it), and one that holds what the
student may not know (a drawn bug, drawn parameters) goes as a proxy (:meth:`Session.proxy`):
the kernel gets a token and a name, and its calls come back here, answered for this test only.

:meth:`Session.run_test` turns one test cell into a :class:`Verdict`. The judge, not the
kernel, decides the points. Whatever a test cell raises, ``SystemExit`` and other
``BaseException`` included, is that test's failure; only ``KeyboardInterrupt`` passes.

Decoding a reply never imports and never looks up a name the kernel chose but in the judge's
fixed tables (:mod:`autograd_course.kernel.wire`; :data:`BUILTIN_ERRORS` for a student's exception):
a module the kernel names is the judge's own only when the judge already holds it
(:func:`_held_module`), else an inert :class:`Handle`.
"""

from __future__ import annotations

import base64
import builtins
import contextlib
import functools
import hashlib
import hmac
import io
import math
import queue
import re
import secrets
import time
import types
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import cloudpickle
import torch

from autograd_course.grading import record
from autograd_course.grading.containment import describe
from autograd_course.kernel import checks
from autograd_course.kernel.agent import CALLBACK, MIME, Agent
from autograd_course.kernel.checks import CheckError, StudentError
from autograd_course.kernel.wire import Decoder, Handle, RemoteFunction, ReplyError

_BUILTINS = frozenset(vars(builtins))
MESSAGE_LIMIT = 300  # characters of a student's exception message shown in feedback


#: Exceptions of the student's code that do not arrive as their own type: those that steer the
#: interpreter rather than report an error.
NOT_AS_THEMSELVES = frozenset({"BaseException", "Exception", "SystemExit", "KeyboardInterrupt",
                               "GeneratorExit", "StopIteration", "StopAsyncIteration"})


#: The builtin exception types a student's exception may arrive as, by name: a fixed table of
#: the judge's own builtins, the only place a type name the kernel sends is looked up.
BUILTIN_ERRORS: dict[str, type[Exception]] = {
    name: value for name, value in vars(builtins).items()
    if isinstance(value, type) and issubclass(value, Exception) and name not in NOT_AS_THEMSELVES
}


@functools.cache
def _error_class_of(name: str) -> type[StudentError]:
    try:
        return type(name, (StudentError, BUILTIN_ERRORS[name]), {"__module__": __name__})
    except TypeError:  # a layout the two cannot share (OSError's, UnicodeError's)
        return StudentError


def _error_class(name: str) -> type[StudentError]:
    """The judge's class for a student's exception of the builtin type ``name``: it is that
    type and a :class:`StudentError` (made here from :data:`BUILTIN_ERRORS`, never from
    anything the kernel sends), or :class:`StudentError` alone for any other name."""
    return _error_class_of(name) if name in BUILTIN_ERRORS else StudentError


def _text(value, default: str, limit: int) -> str:
    """A string field of a reply, cut to ``limit``; ``default`` for anything but a string."""
    return value[:limit] if isinstance(value, str) else default


def student_error(label: str, raised: dict) -> StudentError:
    """A student's exception as the judge raises it: as the most specific builtin type it
    derives from (so that ``except ValueError:`` catches it, as in nbgrader), and a
    StudentError. Names are only strings here: what they name is looked up in
    :data:`BUILTIN_ERRORS` alone."""
    type_name = _text(raised.get("type"), "Exception", 100)
    bases = raised.get("builtins")
    first = _text(bases[0], "", 100) if isinstance(bases, list) and bases else type_name
    message = _text(raised.get("message"), "", 2000)
    try:
        return _error_class(first)(label, type_name, message)
    except TypeError:  # a builtin whose constructor takes other arguments (UnicodeDecodeError)
        return StudentError(label, type_name, message)


class AnswerError(Exception):
    """An answer the judge could not get: unreadable, too big, too slow, or a dead kernel."""


class KernelDied(AnswerError):
    """The kernel died (or stopped answering) during a request."""


class AuthoringError(Exception):
    """A test that breaks the judge's rules (e.g. sends an expected value into the kernel)."""


# --- links to a kernel -----------------------------------------------------------------


class InProcessLink:
    """A 'kernel' in this process: an :class:`Agent` over a plain namespace (for tests).

    Replies go through JSON exactly as a real kernel's do, so that encoding and decoding are
    the same; only the process boundary (and so the sandbox) is missing.
    """

    def __init__(self, namespace: dict | None = None):
        import json

        self.namespace = {"__name__": "__main__"} if namespace is None else namespace
        self.agent = Agent(self.namespace)
        self._json = json

    def run_cell(self, source: str) -> BaseException | None:
        """Run a student's cell in the namespace; return its exception, if any."""
        try:
            with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                exec(compile(source, "<cell>", "exec"), self.namespace)
        except Exception as exc:  # noqa: BLE001 - the student's error, as the kernel has it
            return exc
        return None

    def close(self) -> None:
        """Nothing to release: the 'kernel' is this process."""

    def memory(self) -> int:
        """The 'kernel's private memory: this process's."""
        from autograd_course.kernel.memory import own_private_bytes

        return own_private_bytes()

    def request(self, payload: str, timeout: float,
                answer: Callable[[str], str] | None = None) -> dict:
        """Serve one request; a proxy's callback during it is ``answer(prompt)``, called
        directly (the prompt and the answer are the same text a kernel's would be)."""
        self.agent.ask = answer or _no_callbacks
        try:
            bundle = self.agent.serve(payload)._repr_mimebundle_()
        finally:
            self.agent.ask = _no_callbacks
        return self._json.loads(self._json.dumps(bundle[MIME]))


class JupyterLink:
    """A real kernel, reached with its own blocking client over the shell channel.

    Each request is a silent ``execute_request`` whose ``user_expressions`` evaluates
    :func:`autograd_course.kernel.agent.serve`; the reply is matched by message id and nonce, must
    arrive before the deadline and stay under ``limit`` bytes. The request allows stdin: an
    ``input_request`` of that request whose prompt is a callback (:data:`CALLBACK`) is
    answered with ``answer(prompt)`` while the judge waits; any other is answered with
    end-of-file.
    """

    def __init__(self, kernel_manager, limit: int, alive: Callable[[], bool],
                 pid: Callable[[], int | None] = lambda: None):
        from autograd_course.grading.boundary.provision import judge_client

        self.alive, self.pid = alive, pid
        self.limit = limit
        self.client = judge_client(kernel_manager, limit)
        self.stdin = _connected_stdin(self.client)
        self.inputs = 0  # input requests answered (a kernel's own included)

    def memory(self) -> int:
        """The kernel's memory, all its processes together, as Linux reports it
        (:func:`~autograd_course.kernel.memory.tree_memory_bytes`: a fork hides nothing)."""
        from autograd_course.kernel.memory import tree_memory_bytes

        pid = self.pid()
        if pid is None:
            raise AnswerError("the kernel's memory cannot be measured here")
        try:
            return tree_memory_bytes(pid)
        except Exception as exc:  # noqa: BLE001 - the kernel is gone, or /proc unreadable
            raise AnswerError(f"the kernel's memory could not be read ({exc})") from None

    def request(self, payload: str, timeout: float,
                answer: Callable[[str], str] | None = None) -> dict:
        expression = ("__import__('autograd_course.kernel.agent', fromlist=['serve'])"
                      f".serve('{payload}')")
        msg_id = self.client.execute("", silent=True, store_history=False, allow_stdin=True,
                                     user_expressions={"reply": expression})
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                self._interrupt()
                raise AnswerError(f"no answer within {timeout:.0f} s (an endless loop?)")
            try:
                channel = self._ready(min(left, 1.0))
                if channel is None:
                    raise queue.Empty
                reply = channel.get_msg(timeout=0)
            except queue.Empty:  # check that the kernel is still there
                if not self.alive():
                    raise KernelDied("the kernel died (a crash, os._exit or a signal)") from None
                continue
            except Exception as exc:  # a message over the limits (kernel.BoundedSession)
                raise AnswerError(f"the kernel's answer could not be read ({exc})") from None
            if reply.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            if channel is self.stdin:
                self._answer_input(reply, answer)
                continue
            break
        if reply.get("content", {}).get("status") != "ok":
            raise AnswerError("the kernel could not answer")
        result = reply.get("content", {}).get("user_expressions", {}).get("reply", {})
        if result.get("status") != "ok":
            name = str(result.get("ename", "an error"))[:100]
            raise AnswerError(f"the kernel could not answer ({name})")
        content = result.get("data", {}).get(MIME)
        if not isinstance(content, dict):
            raise AnswerError("the kernel's answer was not readable")
        return content

    def _ready(self, timeout: float):
        """The channel with a message waiting (stdin first), or None after ``timeout``."""
        import zmq

        poller = zmq.Poller()
        shell = self.client.shell_channel
        for channel in (self.stdin, shell):
            if channel is not None:
                poller.register(channel.socket, zmq.POLLIN)
        ready = dict(poller.poll(int(timeout * 1000)))
        for channel in (self.stdin, shell):
            if channel is not None and channel.socket in ready:
                return channel
        return None

    def _answer_input(self, message: dict, answer: Callable[[str], str] | None) -> None:
        """Answer the kernel's ``input_request``: a callback's with ``answer``, any other (a
        student's own ``input()``) with end-of-file."""
        import zmq

        self.inputs += 1
        if self.inputs > MAX_CALLBACKS:
            raise AnswerError(f"the kernel asked for input more than {MAX_CALLBACKS} times")
        content = message.get("content")
        prompt = content.get("prompt") if isinstance(content, dict) else None
        value = "\x04"
        if (message.get("msg_type") == "input_request" and answer is not None
                and isinstance(prompt, str) and prompt.startswith(CALLBACK)):
            value = answer(prompt)
        try:
            self.client.input(value)  # the stdin socket's send times out (_connected_stdin)
        except zmq.Again:
            raise AnswerError("the kernel does not read the answers to its input requests"
                              ) from None

    def _interrupt(self) -> None:
        """Interrupt the running call (an ``interrupt_request``, as the kernelspec asks)."""
        with contextlib.suppress(Exception):
            message = self.client.session.msg("interrupt_request", content={})
            self.client.control_channel.send(message)

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.client.stop_channels()
            self.client.context.destroy(linger=0)


class Namespace(dict):
    """The globals of test code: the judge's own names first, then the student's kernel.

    Builtins resolve before anything the kernel defines (a missing name raises KeyError so
    that Python falls back to builtins), and a name the kernel does not define either is a
    NameError, as usual. Nothing fetched is cached: each read sees the kernel as it is now.
    """

    def __init__(self, session: Session):
        super().__init__(__name__="__judge__", __builtins__=builtins)
        self.session = session
        self.deleted: set[str] = set()

    def __missing__(self, name: str):
        if name in _BUILTINS or name.startswith("__"):
            raise KeyError(name)
        return self.session.fetch(name)

    def __delitem__(self, name: str):
        """``del NAME`` in a test: of a name the test bound, here; of the student's, in the
        kernel, as in nbgrader (later reads, here and in the kernel, find it missing)."""
        if dict.__contains__(self, name):
            dict.__delitem__(self, name)
        elif name in _BUILTINS or name.startswith("__"):
            raise KeyError(name)
        else:
            self.session.delete(name)
            self.deleted.add(name)

    def __setitem__(self, name: str, value):
        """A test's assignment binds the name here, for the tests; putting a kernel object
        back under a name the test deleted restores it in the kernel too, as in nbgrader."""
        if name in self.deleted and self.session.handle_of(value) is not None:
            self.session.bind(name, value)
            self.deleted.discard(name)
            dict.pop(self, name, None)
        else:
            dict.__setitem__(self, name, value)


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
        return Verdict(True, stdout=out.getvalue(), notes=self._notes)

    def note(self, diagnosis: str, message: str) -> None:
        """A diagnosis that costs no points (see :func:`autograd_course.kernel.checks._fact`): shown
        with the running test's result, once."""
        if (diagnosis, message) not in self._notes:
            self._notes.append((diagnosis, message))

    def kernel_memory(self) -> int:
        """The kernel's memory in bytes (:meth:`JupyterLink.memory`), read from outside it,
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
    def _request(self, message: dict) -> dict:
        if self.dead:
            raise KernelDied(self.dead)
        nonce = secrets.token_hex(8)
        payload = base64.b64encode(_dumps(dict(message, nonce=nonce), self)).decode("ascii")
        left = self._deadline - time.monotonic()
        if left <= 0:
            if time.monotonic() >= self.budget:
                raise AnswerError("the notebook's time budget was spent")
            raise AnswerError(f"the test ran out of time ({self.timeout:.0f} s)")
        if self._in_callback:
            raise AuthoringError("a test's function answering a callback asked the kernel")
        try:
            reply = self.link.request(payload, min(left, self.timeout), self._answer)
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
        reply = self._request({"op": "files", "limit": limit, "max_files": max_files})
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


# --- proxies ------------------------------------------------------------------------------

#: Bounds of the callbacks of one test: their number, and the size of one call's arguments.
MAX_CALLBACKS = 100_000
MAX_CALLBACK_BYTES = 16 * 2**20


class Proxy:
    """What the kernel gets for a test's function or Function class (:meth:`Session.proxy`):
    it unpickles there as :func:`autograd_course.kernel.agent.proxy_callable` or
    :func:`~autograd_course.kernel.agent.proxy_function` of its token and public name, nothing
    else."""

    def __init__(self, token: str, kind: str, name: str):
        self.token, self.kind, self.name = token, kind, name

    def __reduce__(self):
        from autograd_course.kernel import agent

        make = agent.proxy_function if self.kind == "function" else agent.proxy_callable
        return make, (self.token, self.name)

    def __repr__(self) -> str:
        return f"<the test's {self.name}, called back in the judge>"


class _FunctionCalls(dict):
    """The callbacks of a Function's proxy (a Function of one output): ``forward(*inputs)``
    and ``backward(*inputs, grad)``, each with a fresh context of the judge's (backward runs
    forward again first), so that nothing is kept between calls."""

    def __init__(self, function: type):
        super().__init__(forward=self.forward, backward=self.backward)
        self.function = function

    def forward(self, *inputs):
        with torch.no_grad():
            return self.function.forward(_Context(len(inputs)), *inputs)

    def backward(self, *values):
        """``values``: the inputs, then the gradient of the (one) output."""
        if not values:
            raise ValueError("no gradient")
        context = _Context(len(values) - 1)
        with torch.no_grad():
            self.function.forward(context, *values[:-1])
            return self.function.backward(context, values[-1])


class _Context:
    """A context for a Function's forward and backward run in the judge."""

    def __init__(self, n: int):
        self.needs_input_grad = (True,) * n
        self.saved_tensors: tuple = ()

    def save_for_backward(self, *tensors):
        self.saved_tensors = tensors

    def mark_non_differentiable(self, *tensors):
        pass

    def set_materialize_grads(self, value):
        pass


#: The most elements a callback's tensors may have, each and broadcast together.
MAX_CALLBACK_ELEMENTS = 2**20
_FLAT = (type(None), bool, int, float)


def _callback_arguments(records: list, decoder: Decoder) -> list:
    """A callback's arguments: each a tensor or a number (no container: a shared structure
    would cost the judge a walk of every path through it), at most
    :data:`MAX_CALLBACK_ELEMENTS` elements each and broadcast together (inputs of shapes
    (n, 1) and (1, n) would make the test's function work on n² elements)."""
    if len(records) > 16:
        raise AnswerError("too many arguments for the test's function")
    args = [decoder.decode(record) for record in records]
    if not all(isinstance(a, torch.Tensor) or type(a) in _FLAT for a in args):
        raise AnswerError("the test's functions take tensors and numbers only")
    shapes = [a.shape for a in args if isinstance(a, torch.Tensor)]
    sizes = [math.prod(shape) for shape in shapes]
    try:
        joint = math.prod(torch.broadcast_shapes(*shapes)) if shapes else 0
    except RuntimeError:
        joint = 0  # not broadcastable: the test's function says so itself
    if max([joint, *sizes]) > MAX_CALLBACK_ELEMENTS or (sizes and joint > max(sizes)):
        raise AnswerError("the test's function takes tensors of the test's own sizes")
    return args


def _no_callbacks(prompt: str) -> str:
    import json

    return json.dumps({"error": "no test function can be called now"})


def _connected_stdin(client):
    """The client's stdin channel, once connected (or after 5 s): the kernel routes an
    ``input_request`` to the judge's identity and drops it while that is not connected."""
    import zmq

    socket = client.context.socket(zmq.DEALER)
    socket.linger = 0
    socket.sndtimeo = 2000  # a kernel that reads no answer never blocks the judge
    socket.identity = client.session.bsession
    monitor = socket.get_monitor_socket(zmq.EVENT_HANDSHAKE_SUCCEEDED)
    try:
        socket.connect(client._make_url("stdin"))
        if monitor.poll(5000):
            monitor.recv_multipart()
    finally:
        socket.disable_monitor()
        monitor.close(linger=0)
    client._stdin_channel = client.stdin_channel_class(socket, client.session, client.ioloop)
    return client._stdin_channel


# --- helpers -------------------------------------------------------------------------------

_FILE_PART = re.compile(r"^[A-Za-z0-9_+@=,-][A-Za-z0-9 ._+@=,-]{0,127}$")


_MODULE_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]*(\.[A-Za-z][A-Za-z0-9_]*)*")


def _held_module(name: str) -> types.ModuleType | None:
    """The module the judge already holds under ``name`` (a module the student's kernel
    imported, as a test reads it, as in nbgrader), else None: the kernel's becomes an inert
    :class:`Handle`. Never an import: only ``sys.modules`` is read, for a public dotted name
    (no ``__main__``, no private module) whose module says it is that name."""
    import sys

    if len(name) > 200 or not _MODULE_NAME.fullmatch(name) or name.startswith("autograd_course"):
        return None  # the course's own modules (the grader's among them) are never handed out
    module = sys.modules.get(name)
    if not isinstance(module, types.ModuleType) or vars(module).get("__name__") != name:
        return None
    return module


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


def _cut(text: str, limit: int = MESSAGE_LIMIT) -> str:
    return record.shorten(text, limit)


def seed_key(secret: bytes, *parts: str) -> bytes:
    """The key of a notebook's hidden inputs: the grader's secret and who and what is graded."""
    return hmac.new(secret, "\0".join(parts).encode(), hashlib.sha256).digest()


__all__ = ["AnswerError", "AuthoringError", "Handle", "InProcessLink", "JupyterLink",
           "KernelDied", "Namespace", "RemoteFunction", "Session", "Verdict", "seed_key"]
