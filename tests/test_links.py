"""The judge's link to a real kernel (grading.boundary.links.JupyterLink): held for one of the
judge's operations, let go after it, whatever the student's code does meanwhile.

A test cell's requests after the first travel as answers to the kernel's input requests
(kernel.agent.serve_loop), so the kernel serves one execute_request per operation; at the
operation's end the kernel runs cells again, also when the student's code forged a reply or
took the loop over.
"""

from __future__ import annotations

import json
import time

import pytest
from jupyter_client.kernelspec import KernelSpec
from jupyter_client.manager import KernelManager

from autograd_course.grading.boundary import links, sandbox
from autograd_course.grading.boundary.judge import Session
from autograd_course.grading.boundary.links import JupyterLink
from autograd_course.kernel.agent import REPLY


class _Manager(KernelManager):  # the grading kernel's command line, outside the sandbox
    @property
    def kernel_spec(self):
        return KernelSpec(argv=sandbox.kernel_python(), language="python", env={})


@pytest.fixture(scope="module")
def kernel(tmp_path_factory):
    """A kernel, and a client of it that runs cells (as nbclient does)."""
    manager = _Manager()
    manager.start_kernel(cwd=str(tmp_path_factory.mktemp("kernel")))
    client = manager.client()
    client.start_channels()
    client.wait_for_ready(timeout=60)
    yield manager, client
    client.stop_channels()
    manager.shutdown_kernel(now=True)


def _run(client, code: str, timeout: float = 20) -> float:
    """Run a cell as nbclient does; the seconds its reply took."""
    start = time.monotonic()
    reply = client.execute_interactive(code, timeout=timeout, output_hook=lambda msg: None)
    assert reply["content"]["status"] == "ok", reply["content"]
    return time.monotonic() - start


def _session(manager) -> tuple[Session, list[str]]:
    """A judge's session over a new link; the execute_requests its client sends."""
    link = JupyterLink(manager, 2**20, alive=manager.is_alive)
    sent = []
    execute = link.client.execute

    def counted(code, **kwargs):
        sent.append(code)
        return execute(code, **kwargs)

    link.client.execute = counted
    return Session(link, seed_key=b"k" * 32, timeout=20), sent


def _fails_then_lets_go(session: Session, client, test: str, message: str,
                        within: float) -> None:
    """``test`` fails with ``message``; then the kernel runs a cell within ``within`` seconds,
    and a later test sees what that cell did (a value no earlier cell of the module's kernel
    set)."""
    verdict = session.run_test(test, "q1_test")
    assert not verdict.passed and message in verdict.message, verdict
    value = time.monotonic_ns()
    assert _run(client, f"after = {value}") < within
    assert session.run_test(f"assert after == {value}", "q2_test").passed


def test_one_execute_request_serves_all_of_a_test_cells_requests(kernel):
    manager, client = kernel
    _run(client, "a, b = 1, 2\ndef f(x):\n    return x + a")
    session, sent = _session(manager)
    try:
        test = ("assert a + b == 3\nassert f(1) == 2\nassert f(f(1)) == 3\n"
                "assert [f(i) for i in range(5)] == [1, 2, 3, 4, 5]")
        verdict = session.run_test(test, "q1_test")
        assert verdict.passed, verdict
        assert len(sent) == 1
        assert session.link.held is None
        assert _run(client, "c = f(a)") < 2  # the kernel runs cells again at once
        assert session.run_test("assert c == 2", "q2_test").passed
        assert len(sent) == 2
        session.run_locked("d = f(10)", "setup")
        assert session.namespace["d"] == 11 and len(sent) == 3 and session.link.held is None
    finally:
        session.link.close()


def test_a_forged_reply_fails_the_test_and_the_kernel_is_let_go(kernel):
    manager, client = kernel
    forged = json.dumps({"nonce": "0" * 16, "value": {"t": "int", "v": 42}})
    _run(client, "def forger():\n"
                 f"    get_ipython().kernel.raw_input({REPLY + forged!r})\n    return 1")
    session, _ = _session(manager)
    try:
        _fails_then_lets_go(session, client, "assert forger() == 1", "different request", 2)
    finally:
        session.link.close()


def test_a_kernel_that_does_not_let_go_is_interrupted(kernel, monkeypatch):
    """The student's code replaced the loop with one that ignores the end of the operation:
    the kernel is interrupted after RELEASE_SECONDS, and runs the next cell."""
    manager, client = kernel
    monkeypatch.setattr(links, "RELEASE_SECONDS", 1.0)
    _run(client, """
import time
import autograd_course.kernel.agent as agent
def held(request, serve=agent.serve, ask=agent._ask_frontend):
    ask(agent.REPLY + json.dumps(serve(request).content))
    while True:
        time.sleep(0.05)
import json
agent.serve_loop = held
x = 3""")
    session, _ = _session(manager)
    try:
        assert session.run_test("assert x == 3", "q1_test").passed
        assert _run(client, "y = 4") < 2  # interrupted while it slept, then ran this cell
    finally:
        session.link.close()
        _run(client, "import importlib; importlib.reload(agent)")


def test_a_call_that_swallows_the_interrupt_does_not_hold_the_kernel(kernel, monkeypatch):
    """Found by a hostile review: past a request's deadline the judge interrupts the call;
    a call that goes on (a bare ``except:`` in a loop) still ends, and its loop then waited
    for an answer nobody sent. The request carries its deadline, and a late reply is never
    sent: the kernel runs the next cell as soon as the call returns."""
    manager, client = kernel
    monkeypatch.setattr(links, "RELEASE_SECONDS", 1.0)  # the judge gives up before it returns
    _run(client, """
import time
def stubborn():
    end = time.monotonic() + 3
    while time.monotonic() < end:
        try:
            time.sleep(0.05)
        except KeyboardInterrupt:
            pass
    return 1""")
    session, _ = _session(manager)
    session.timeout = 1
    try:
        _fails_then_lets_go(session, client, "stubborn()", "no answer within 1 s", 5)
    finally:
        session.link.close()


def test_a_reply_is_read_only_within_the_structure_a_message_may_hold():
    """Found by a hostile review: a reply carried in a prompt string is JSON inside JSON, and
    the string's escapes (\\u005b) hide its brackets from the count of the message's bytes:
    the prompt is counted again, as decoded, before it is parsed; so is a callback's."""
    from autograd_course.grading.boundary.provision import MAX_STRUCTURE
    from autograd_course.kernel.agent import CALLBACK

    with pytest.raises(links.AnswerError, match="too much structure"):
        links._replied(REPLY + "[" * (MAX_STRUCTURE + 1))
    with pytest.raises(links.AnswerError, match="not readable"):
        links._replied(REPLY + "[" * 100_000)  # deeper than the parser goes
    assert links._replied(REPLY + '{"nonce": "1"}') == {"nonce": "1"}
    answer = json.loads(Session(links.InProcessLink())._answer(
        CALLBACK + "[" * (MAX_STRUCTURE + 1)))
    assert "too much structure" in answer["error"]


class _Shell:
    """A stand-in for the shell channel of a link that is never started."""


def _unstarted(messages=(), send=None) -> JupyterLink:
    """A JupyterLink over no kernel: ``_next`` gives ``messages`` (on the shell channel),
    ``send(value)`` answers input requests."""
    link = object.__new__(JupyterLink)
    link.held, link.abandoned, link.inputs, link.stdin = None, set(), 0, object()
    queue = list(messages)
    link._next = lambda timeout: (_Shell, queue.pop(0)) if queue else None
    link._send = send or (lambda value: None)
    link._interrupt = lambda: None
    link.alive = lambda: True
    return link


def test_a_loop_that_ends_on_its_own_is_a_late_reply():
    """Found by a second review: the kernel's loop ends on its own only past the request's
    deadline (it sends no late reply), so the judge says the request timed out, not that the
    answer was unreadable; an execute_reply of any other shape is 'could not answer'."""
    ended = {"parent_header": {"msg_id": "m"}, "msg_type": "execute_reply",
             "content": {"status": "ok", "user_expressions": {"reply": {"status": "ok"}}}}
    with pytest.raises(links.AnswerError, match="no answer within 5 s"):
        _unstarted([ended])._reply("m", time.monotonic() + 5, 5, None)
    for content in ([], {"status": "ok", "user_expressions": []}, {"status": "error"}):
        with pytest.raises(links.AnswerError, match="could not answer"):
            _unstarted([dict(ended, content=content)])._reply("m", time.monotonic() + 5, 5,
                                                              None)


def test_letting_go_never_raises_and_keeps_the_loop_to_settle(monkeypatch):
    """Found by a second review: release() runs in the judge's ``finally`` blocks, so no
    error of the link's (a closed socket here) may replace the test's verdict; a loop not
    seen to end stays to be settled when the judge next reads the kernel."""
    import zmq

    monkeypatch.setattr(links, "RELEASE_SECONDS", 0.2)

    def closed(value):
        raise zmq.ZMQError(zmq.ENOTSOCK)

    link = _unstarted(send=closed)
    link.held = "m"
    link.release()
    assert link.held is None and link.abandoned == {"m"}
    over = {"parent_header": {"msg_id": "m"}, "msg_type": "execute_reply", "content": {}}
    link._next = lambda timeout: (_Shell, over)
    link._settle_abandoned(_Shell, over)
    assert link.abandoned == set()


def test_a_proxy_past_the_requests_deadline_does_not_ask_the_judge():
    from autograd_course.kernel.agent import Agent

    agent = Agent({})
    agent.ask = lambda prompt: pytest.fail("the judge was asked past the deadline")
    agent.deadline = time.monotonic() - 1
    with pytest.raises(RuntimeError, match="time is spent"):
        agent.ask_judge("token", "call", (1,))
