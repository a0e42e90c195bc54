"""Links to a student's kernel: how the judge sends it a request and gets the reply back.

A link serves ``request(payload, timeout, answer)`` (the reply: the agent's data, a dict),
``release()`` (the judge's operation is over: the kernel may run cells again), ``memory()`` and
``close()``. :class:`JupyterLink` reaches a real kernel over Jupyter messaging;
:class:`InProcessLink` is a 'kernel' in this process, for tests, with the same JSON. Rules of a
real kernel's link: each request has a deadline and its reply a size limit; the kernel's input
requests are answered only as a proxy's callback (``answer``) or with end-of-file, at most
:data:`MAX_CALLBACKS` times; an answer that cannot be got is an :class:`AnswerError`
(:class:`KernelDied` for a dead kernel).
"""

from __future__ import annotations

import contextlib
import io
import queue
import time
import warnings
from collections.abc import Callable

from autograd_course.kernel.agent import CALLBACK, MIME, REPLY, Agent

#: Bounds of the callbacks of one test: their number, and the size of one call's arguments.
MAX_CALLBACKS = 100_000
MAX_CALLBACK_BYTES = 16 * 2**20
#: How long a kernel may take to let go at the end of the judge's operation before it is
#: interrupted (:meth:`JupyterLink.release`): an honest one takes a millisecond.
RELEASE_SECONDS = 5.0


class AnswerError(Exception):
    """An answer the judge could not get: unreadable, too big, too slow, or a dead kernel."""


class KernelDied(AnswerError):
    """The kernel died (or stopped answering) during a request."""



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

    def release(self) -> None:
        """Nothing is held: the 'kernel' answers each request in a call."""

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
            with separate_classes():
                bundle = self.agent.serve(payload)._repr_mimebundle_()
        finally:
            self.agent.ask = _no_callbacks
        return self._json.loads(self._json.dumps(bundle[MIME]))


@contextlib.contextmanager
def separate_classes():
    """Unpickle here as another process would: with a class tracker of cloudpickle's own.

    cloudpickle remembers each class it sends by value, and unpickling one in the process that
    sent it finds the class itself and sets the pickled attributes on it (3.1's
    ``_lookup_class_or_track`` then ``_class_setstate``): an in-process 'kernel' would replace
    the methods of the grader's own classes (:class:`~autograd_course.kernel.checks.functions.
    StandInContext`'s) with its copies. Within this block the tracker is a fresh one, so what
    is unpickled is new, as in a real kernel.

    The trackers are swapped for the whole process, and without cloudpickle's
    ``_DYNAMIC_CLASS_TRACKER_LOCK``: that is a ``threading.Lock`` which cloudpickle itself takes
    while the block runs (``_lookup_class_or_track`` as it unpickles, and
    ``_get_or_create_tracker_id`` as it pickles), so holding it here would deadlock. The
    in-process link is for tests, in one thread: no other thread may pickle or unpickle a class
    by value while a request is served.
    """
    from cloudpickle import cloudpickle as module

    saved = module._DYNAMIC_CLASS_TRACKER_BY_CLASS, module._DYNAMIC_CLASS_TRACKER_BY_ID
    module._DYNAMIC_CLASS_TRACKER_BY_CLASS = type(saved[0])()
    module._DYNAMIC_CLASS_TRACKER_BY_ID = type(saved[1])()
    try:
        yield
    finally:
        module._DYNAMIC_CLASS_TRACKER_BY_CLASS, module._DYNAMIC_CLASS_TRACKER_BY_ID = saved


class JupyterLink:
    """A real kernel, reached with its own blocking client over the shell channel.

    The first request of a judge's operation is a silent ``execute_request`` whose
    ``user_expressions`` evaluates :func:`autograd_course.kernel.agent.serve_loop`: the kernel
    serves it and sends the reply as an input request (:data:`~autograd_course.kernel.agent.
    REPLY`), and the next requests go as the answers to those, until :meth:`release` lets the
    kernel go. A reply must come from that execute_request, carry the request's nonce (the
    judge checks it), arrive before the deadline and stay under ``limit`` bytes. Any other
    input request of that execute_request whose prompt is a callback (:data:`CALLBACK`) is
    answered with ``answer(prompt)`` while the judge waits; any other is answered with
    end-of-file. A kernel that forges a reply's prompt gains nothing: the kernel's replies are
    data whatever sends them.
    """

    def __init__(self, kernel_manager, limit: int, alive: Callable[[], bool],
                 pid: Callable[[], int | None] = lambda: None):
        from autograd_course.grading.boundary.provision import judge_client

        self.alive, self.pid = alive, pid
        self.limit = limit
        self.client = judge_client(kernel_manager, limit)
        self.stdin = _connected_stdin(self.client)
        self.inputs = 0  # input requests answered (a kernel's own included)
        self.held: str | None = None  # the execute_request the kernel serves the judge in
        self.abandoned: set[str] = set()  # loops let go of, not yet over (_let_go)

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
        try:
            if self.held is None:
                expression = ("__import__('autograd_course.kernel.agent', "
                              f"fromlist=['serve_loop']).serve_loop('{payload}')")
                self.held = self.client.execute("", silent=True, store_history=False,
                                                allow_stdin=True,
                                                user_expressions={"reply": expression})
            else:
                self._send(payload)
            return self._reply(self.held, time.monotonic() + timeout, timeout, answer)
        except KernelDied:
            self.held = None
            raise
        except AnswerError:  # the kernel may wait for an answer: let it go
            self.release()
            raise

    def _reply(self, msg_id: str, deadline: float, timeout: float,
               answer: Callable[[str], str] | None) -> dict:
        """The reply to the request held in ``msg_id``, answering the kernel's input requests
        meanwhile, until ``deadline`` (then the kernel's call is interrupted)."""
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                self.held = None
                self._let_go(msg_id, interrupt=True)
                raise timed_out(timeout)
            found = self._next(min(left, 1.0))
            if found is None:
                continue
            channel, message = found
            if _parent(message) != msg_id:
                self._settle_abandoned(channel, message)
            elif channel is self.stdin:
                prompt = _prompt(message)
                if prompt.startswith(REPLY):
                    return _replied(prompt)
                self._answer_input(message, answer)
            elif message.get("msg_type") == "execute_reply":
                break
        self.held = None  # the kernel's loop ended without a reply (interrupted, or late)
        content = message.get("content")
        expressions = content.get("user_expressions") if isinstance(content, dict) else None
        result = expressions.get("reply") if isinstance(expressions, dict) else None
        if not (isinstance(result, dict) and content.get("status") == "ok"):
            raise AnswerError("the kernel could not answer")
        if result.get("status") != "ok":
            name = str(result.get("ename", "an error"))[:100]
            raise AnswerError(f"the kernel could not answer ({name})")
        # an honest loop ends on its own only past the request's deadline (agent.serve_loop)
        raise timed_out(timeout)

    def release(self) -> None:
        """Let the kernel go, so that it runs cells again (:meth:`_let_go`, with the empty
        answer that ends its loop). Never raises but KeyboardInterrupt."""
        msg_id, self.held = self.held, None
        if msg_id is not None:
            self._let_go(msg_id, interrupt=False)

    def _let_go(self, msg_id: str, *, interrupt: bool) -> None:
        """End the kernel's loop of ``msg_id`` (:func:`~autograd_course.kernel.agent.
        serve_loop`): interrupt its call, or answer it with the empty answer, and await the
        loop's execute_request's reply. Meanwhile, a reply's prompt (one the student's code
        forged first, or one sent as the deadline passed) gets the empty answer too, any other
        input request end-of-file. A loop that has not ended within :data:`RELEASE_SECONDS`
        is interrupted, and settled whenever the judge reads the kernel again
        (:meth:`_settle_abandoned`). Never raises but KeyboardInterrupt."""
        self.abandoned.add(msg_id)  # until its execute_reply arrives, here or later
        try:
            if interrupt:
                self._interrupt()
            else:
                self._send("")
            deadline = time.monotonic() + RELEASE_SECONDS
            while (left := deadline - time.monotonic()) > 0:
                found = self._next(min(left, 1.0))
                if found is None:
                    continue
                self._settle_abandoned(*found)
                if msg_id not in self.abandoned:
                    return
        except Exception:  # noqa: BLE001, S110 - dead, unreadable, a flood: interrupted below
            pass
        self._interrupt()

    def _next(self, timeout: float) -> tuple[object, dict] | None:
        """The next message (stdin first) and its channel, or None after ``timeout``;
        KernelDied when the kernel is gone, AnswerError for a message the grader's session
        refuses (:class:`~autograd_course.grading.boundary.provision.BoundedSession`)."""
        channel = self._ready(timeout)
        if channel is None:
            if not self.alive():
                raise KernelDied("the kernel died (a crash, os._exit or a signal)")
            return None
        try:
            return channel, channel.get_msg(timeout=0)
        except queue.Empty:
            return None
        except Exception as exc:  # noqa: BLE001 - a message over the limits
            raise AnswerError(f"the kernel's answer could not be read ({exc})") from None

    def _settle(self, message: dict) -> None:
        """Answer an input request of a loop the judge is done with: a reply's prompt with
        the empty answer (the loop ends), any other with end-of-file."""
        if _prompt(message).startswith(REPLY):
            self._send("")
        else:
            self._answer_input(message, None)

    def _settle_abandoned(self, channel, message: dict) -> None:
        """A message of a loop the judge let go of (:meth:`_let_go`): its input requests are
        settled (a kernel that went on past an interrupt still ends its call), and the loop
        forgotten once its execute_request is over."""
        parent = _parent(message)
        if parent not in self.abandoned:
            return
        if channel is self.stdin:
            self._settle(message)
        elif message.get("msg_type") == "execute_reply":
            self.abandoned.discard(parent)

    def _send(self, value: str) -> None:
        """Answer the kernel's input request (the stdin socket's send times out)."""
        import zmq

        try:
            self.client.input(value)
        except zmq.Again:
            raise AnswerError("the kernel does not read the answers to its input requests"
                              ) from None

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
        self.inputs += 1
        if self.inputs > MAX_CALLBACKS:
            raise AnswerError(f"the kernel asked for input more than {MAX_CALLBACKS} times")
        prompt = _prompt(message)
        value = "\x04"
        if answer is not None and prompt.startswith(CALLBACK):
            value = answer(prompt)
        self._send(value)

    def _interrupt(self) -> None:
        """Interrupt the running call (an ``interrupt_request``, as the kernelspec asks)."""
        with contextlib.suppress(Exception):
            message = self.client.session.msg("interrupt_request", content={})
            self.client.control_channel.send(message)

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.client.stop_channels()
            self.client.context.destroy(linger=0)


def _prompt(message: dict) -> str:
    """The prompt of an ``input_request`` ("" for any other message)."""
    content = message.get("content")
    prompt = content.get("prompt") if isinstance(content, dict) else None
    if message.get("msg_type") != "input_request" or not isinstance(prompt, str):
        return ""
    return prompt


def timed_out(timeout: float) -> AnswerError:
    """The error of a request not answered within ``timeout`` seconds."""
    return AnswerError(f"no answer within {timeout:.0f} s (an endless loop?)")


def too_structured(text: str) -> bool:
    """Whether ``text`` holds more brackets, braces and commas than a kernel's message may
    (:data:`~autograd_course.grading.boundary.provision.MAX_STRUCTURE`), counted in the text
    as decoded: JSON carried in a string, whose escapes hid them from the message's count."""
    from autograd_course.grading.boundary.provision import MAX_STRUCTURE, structure

    return structure(text) > MAX_STRUCTURE


def _parent(message: dict) -> object:
    """The id of the request a message answers."""
    parent = message.get("parent_header")
    return parent.get("msg_id") if isinstance(parent, dict) else None


def _replied(prompt: str) -> dict:
    """The reply a :data:`REPLY` prompt carries. Its structure is counted here, in the
    prompt as decoded: the grader's session counted the message's bytes, where a string's
    escapes (``\\u005b``) hide brackets from the count."""
    import json

    if too_structured(prompt):
        raise AnswerError("the kernel's answer holds too much structure")
    try:
        content = json.loads(prompt[len(REPLY):])
    except (ValueError, RecursionError):
        content = None
    if not isinstance(content, dict):
        raise AnswerError("the kernel's answer was not readable")
    return content


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
