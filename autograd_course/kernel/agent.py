"""The kernel side of judging: answer the judge's requests for names and calls.

Runs in the student's kernel: nothing here is trusted, and nothing here decides a grade. The
requests and their replies: docs/design.md#autograd_coursekernelagentpy. Rules:

- the judge (:mod:`autograd_course.grading.boundary.judge`) evaluates :func:`serve_loop` as a
  silent ``user_expressions`` entry, which serves the first request and then holds the kernel
  for the judge's next ones (one Jupyter execute_request costs the kernel about ten times a
  request's own round trip): each reply goes out as an input request (:data:`REPLY`, then the
  reply's JSON), answered with the next request, or with an empty string when the judge lets
  the kernel go; a reply carries records (:mod:`autograd_course.kernel.wire`), matched to the
  request by its nonce;
- requests (``get``, ``read``, ``call``, ``delete``, ``bind``, ``forget``, ``trim``, ``files``)
  are pickled by the judge; a persistent id ``("h", handle)`` stands for an object this kernel
  sent earlier, handed over as the original object (its graph, ``.grad`` and aliasing);
- a call's printed output is discarded; ``files`` sends at most ``limit`` bytes and ``max_files``
  files;
- a *proxy* (:func:`proxy_function`, :func:`proxy_callable`) carries only a token and a public
  name; calling one, while the judge waits for a call's reply and only then, asks the judge
  (:func:`ask_judge`, over the stdin channel: :data:`CALLBACK`); the judge answers only tokens
  of proxies it made for the running test.
"""

from __future__ import annotations

import base64
import contextlib
import io
import json
import math
import pickle
import time
import warnings
from collections.abc import Callable

from autograd_course.kernel.wire import Encoder, ReplyError

MIME = "application/vnd.autograd-course.reply+json"
DEFAULT_LIMIT = 64 * 2**20
#: How a callback's prompt starts: the judge answers input requests that start so, and no other.
CALLBACK = "autograd-course callback:"
#: How a reply's prompt starts, when the judge holds the kernel (:func:`serve_loop`).
REPLY = "autograd-course reply:"


class Reply:
    """A reply to the judge, shown through IPython's formatter as a JSON MIME bundle;
    ``late`` when it was made after the request's deadline (the judge no longer waits)."""

    def __init__(self, content: dict, late: bool = False):
        self.content = content
        self.late = late

    def _repr_mimebundle_(self, include=None, exclude=None):
        return {MIME: self.content}

    def __repr__(self) -> str:
        return "<reply to the judge>"


class _Unpickler(pickle.Unpickler):
    def __init__(self, data: bytes, objects: dict[int, object]):
        super().__init__(io.BytesIO(data))
        self.objects = objects

    def persistent_load(self, pid):
        if isinstance(pid, tuple) and len(pid) == 2 and pid[0] == "h" and pid[1] in self.objects:
            return self.objects[pid[1]]
        raise pickle.UnpicklingError(f"unknown handle {pid!r}")


class _Sink(io.StringIO):
    """Where a call's printed output goes: kept short, then dropped."""

    def write(self, text: str) -> int:
        if self.tell() < 10_000:
            super().write(text[:10_000])
        return len(text)


class Agent:
    """Serves one namespace (the notebook's): keeps every object it sends, by handle."""

    def __init__(self, namespace: dict, limit: int = DEFAULT_LIMIT):
        self.namespace = namespace
        self.limit = limit
        self.objects: dict[int, object] = {}
        self.handles: dict[int, int] = {}  # id(object) -> handle
        self.sent = 0  # handles given so far
        self.ask: Callable[[str], str] = _ask_frontend  # a callback's prompt -> the answer
        self.deadline = math.inf  # the running request's (serve)

    def keep(self, value) -> int:
        handle = self.handles.get(id(value))
        if handle is None or self.objects.get(handle) is not value:
            self.sent += 1
            handle = self.sent
            self.objects[handle] = value
            self.handles[id(value)] = handle
        return handle

    def serve(self, request: str) -> Reply:
        """Answer one request (base64 of a pickled dict); never raises. A request whose
        ``deadline`` (``time.monotonic()``, the judge's clock and this one) has passed when
        it arrives is not served: its reply is ``late``, as is one made after it."""
        nonce, deadline = None, math.inf
        try:
            message = _Unpickler(base64.b64decode(request), self.objects).load()
            nonce = message.get("nonce")
            if isinstance(message.get("deadline"), float):
                deadline = message["deadline"]
            self.deadline = deadline  # what ask_judge reads; the call cannot change ``deadline``
            if time.monotonic() > deadline:
                return Reply({"nonce": nonce, "late": True}, late=True)
            body = getattr(self, "_" + message["op"])(message)
        except ReplyError as exc:
            body = {"unreadable": str(exc)}
        except Exception as exc:  # noqa: BLE001 - a request that cannot be served
            body = {"unreadable": f"{type(exc).__name__}: {exc}"[:500]}
        return Reply({"nonce": nonce, **body}, late=time.monotonic() > deadline)

    def _encoder(self) -> Encoder:
        return Encoder(self.keep, self.limit)

    def _get(self, message: dict) -> dict:
        name = message["name"]
        if name not in self.namespace:
            return {"missing": name}
        return {"value": self._encoder().encode(self.namespace[name])}

    def _read(self, message: dict) -> dict:
        return {"value": self._encoder().encode(self.objects[message["handle"]])}

    def ask_judge(self, token: str, method: str, args: tuple):
        """Run the judge's ``method`` of proxy ``token`` on ``args`` (sent as records); its
        result (unpickled), or RuntimeError with the judge's reason; past the request's
        deadline the judge is not asked (it no longer answers)."""
        if time.monotonic() > self.deadline:
            raise RuntimeError("the test's function could not run: the test's time is spent")
        encoder = self._encoder()
        prompt = CALLBACK + json.dumps({"token": token, "method": method,
                                        "args": [encoder.encode(a) for a in args]})
        answer = json.loads(self.ask(prompt))
        if "error" in answer:
            raise RuntimeError(f"the test's function could not run: {answer['error']}")
        return _Unpickler(base64.b64decode(answer["value"]), self.objects).load()

    def _call(self, message: dict) -> dict:
        global _serving
        target, args, kwargs = message["target"], message["args"], message["kwargs"]
        sink = _Sink()
        raised = result = None
        _serving = self
        with (warnings.catch_warnings(record=True) as caught,
              contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink)):
            warnings.simplefilter("always")
            try:
                if message.get("no_grad"):
                    import torch

                    with torch.no_grad():
                        result = target(*args, **kwargs)
                else:
                    result = target(*args, **kwargs)
            except KeyboardInterrupt:
                raise
            except BaseException as exc:  # noqa: BLE001 - the student's error is the answer
                raised = {"type": type(exc).__name__, "message": str(exc)[:2000],
                          "builtins": [c.__name__ for c in type(exc).__mro__
                                       if c.__module__ == "builtins"][:20]}
            finally:
                _serving = None
        encoder = self._encoder()
        # The arguments first: a result that is one of them is then sent as a reference to it.
        reply: dict = {"warnings": [str(w.message)[:500] for w in caught[:20]],
                       "args": [encoder.encode(a) for a in args],
                       "kwargs": {k: encoder.encode(v) for k, v in kwargs.items()}}
        if raised is None:
            reply["value"] = encoder.encode(result)
        else:
            reply["raised"] = raised
        return reply

    def _delete(self, message: dict) -> dict:
        if message["name"] not in self.namespace:
            return {"missing": message["name"]}
        del self.namespace[message["name"]]
        return {}

    def _bind(self, message: dict) -> dict:
        self.namespace[message["name"]] = message["value"]
        return {}

    def _forget(self, message: dict) -> dict:
        """Let go of every object kept so far (handles are never reused), and give the freed
        memory back to Linux, where the judge measures it."""
        self.objects.clear()
        self.handles.clear()
        return self._trim(message)

    def _trim(self, message: dict) -> dict:
        from autograd_course.kernel.memory import trim

        trim()
        return {}

    def _files(self, message: dict) -> dict:
        import os

        found, size = {}, 0
        for top, dirs, names in os.walk(".", followlinks=False):
            dirs[:] = sorted(d for d in dirs if not d.startswith("."))
            for name in sorted(names):
                path = os.path.join(top, name)
                if os.path.islink(path) or not os.path.isfile(path):
                    continue
                size += os.path.getsize(path)
                if size > message["limit"] or len(found) >= message["max_files"]:
                    return {"files": found, "cut": True}
                with open(path, "rb") as f:
                    found[os.path.relpath(path)] = base64.b64encode(f.read()).decode("ascii")
        return {"files": found, "cut": False}


_agent: Agent | None = None
_serving: Agent | None = None  # the agent whose call is running: the only time a proxy works


def _ask_frontend(prompt: str) -> str:
    """Ask the judge through the kernel's stdin channel (an ``input_request``, which the judge
    allows on its requests and answers while it waits for their reply)."""
    from IPython import get_ipython

    kernel = getattr(get_ipython(), "kernel", None)
    if kernel is None:
        raise RuntimeError("no judge to ask: this is not a kernel")
    return kernel.raw_input(prompt)


def ask_judge(token: str, method: str, args: tuple):
    """What a proxy does when called: ask the judge, through the call that is running."""
    if _serving is None:
        raise RuntimeError("the test's function works only while the test calls your code")
    return _serving.ask_judge(token, method, args)


def proxy_callable(token: str, name: str):
    """The kernel's stand-in for a test's function: calling it runs the test's function in
    the judge (its code and parameters stay there); it carries only ``token`` and ``name``."""

    def proxy(*args):
        return ask_judge(token, "call", args)

    proxy.__name__ = proxy.__qualname__ = name
    return proxy


def proxy_function(token: str, name: str) -> type:
    """The kernel's stand-in for a test's ``torch.autograd.Function``: ``forward`` and
    ``backward`` run the test's own in the judge (its code and parameters stay there); the
    class carries only ``token`` and ``name``. Its inputs are tensors (or None); backward
    sends them back with the gradients, so the judge keeps no state between the two."""
    import torch

    def forward(ctx, *args):
        ctx.save_for_backward(*args)
        return ask_judge(token, "forward", args)

    def backward(ctx, *grads):
        return ask_judge(token, "backward", (*ctx.saved_tensors, *grads))

    return type(name, (torch.autograd.Function,), {
        "forward": staticmethod(forward), "backward": staticmethod(backward),
        "__module__": "__main__", "__qualname__": name})


def serve(request: str) -> Reply:
    """Serve one request against the notebook's namespace."""
    global _agent
    if _agent is None:
        import __main__

        _agent = Agent(vars(__main__))
    return _agent.serve(request)


def serve_loop(request: str) -> None:
    """The kernel's entry point: serve ``request``, send its reply to the judge as an input
    request (:data:`REPLY`, then the reply's JSON), and serve the answer as the next request,
    until the answer is empty (the judge lets the kernel go, to run cells again), or a reply
    is late: past its request's deadline the judge no longer waits for it (it interrupted
    the kernel, whose call went on), and the kernel would wait for an answer for ever."""
    while request:
        reply = serve(request)
        if reply.late:
            return
        # nothing to flush: ipykernel's flush of its own streams waits for its IOPub thread
        with contextlib.redirect_stdout(_Sink()), contextlib.redirect_stderr(_Sink()):
            request = _ask_frontend(REPLY + json.dumps(reply.content))
