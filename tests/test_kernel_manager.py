"""The grading kernel's manager (grading.boundary.provision.GradingKernelManager) on its own.

Its sessions are test_kernel_messages.py's; here, the wait for a kernel's end: jupyter_client
looks whether a killed kernel is alive every 0.1 s, and a grading kernel, killed at the end of
every submission, is gone within milliseconds. The manager looks every
:data:`~autograd_course.grading.boundary.provision.KILLED_POLL_SECONDS`. And the sockets of
the clients it makes (nbclient's), in a zmq context of their own (jupyter_client's async
client makes one): they try to connect to a starting kernel every
:data:`~autograd_course.grading.boundary.provision.RECONNECT_MS`, and leave a message too
large to the grader's refusal (zmq's own limit would end the connection silently). And its
start and shutdown, without the 10 ms sleep jupyter_client adds after each (for its own tests).
"""

from __future__ import annotations

import asyncio

import zmq

from autograd_course.grading.boundary import provision


def test_the_clients_sockets_try_a_starting_kernel_often_and_cut_off_nothing():
    manager = provision.GradingKernelManager()
    client = manager.client()
    channels = [client.shell_channel, client.iopub_channel, client.control_channel,
                client.stdin_channel]
    try:
        assert client.context is not manager.context
        for socket in [channel.socket for channel in channels]:
            assert socket.getsockopt(zmq.RECONNECT_IVL) == provision.RECONNECT_MS
            assert socket.getsockopt(zmq.MAXMSGSIZE) == -1  # BoundedSession refuses instead
    finally:
        for channel in channels:
            channel.close()
        client.context.destroy(linger=0)
        manager.context.destroy(linger=0)


def test_a_killed_kernels_end_is_looked_for_every_few_milliseconds(monkeypatch):
    manager = provision.GradingKernelManager()
    alive = iter([True, True, True, False])
    slept = []
    real_sleep = asyncio.sleep

    async def is_alive() -> bool:
        return next(alive)

    async def sleep(seconds: float) -> None:
        slept.append(seconds)
        await real_sleep(0)

    monkeypatch.setattr(manager, "_async_is_alive", is_alive)
    monkeypatch.setattr(asyncio, "sleep", sleep)
    asyncio.run(manager._async_wait())  # as jupyter_client's kill calls it: no interval given
    assert slept == [provision.KILLED_POLL_SECONDS] * 3
    alive = iter([True, False])
    asyncio.run(manager._async_wait(pollinterval=0.1))  # as its finish_shutdown calls it
    assert slept[3:] == [provision.KILLED_POLL_SECONDS] and provision.KILLED_POLL_SECONDS <= 0.01


def test_starting_and_shutting_down_a_kernel_sleep_nowhere(monkeypatch):
    manager = provision.GradingKernelManager()
    slept, steps = [], []

    async def step(*args, **kwargs):
        steps.append(args)
        return ["kernel"], {}  # what pre_start_kernel returns; the others' results are unused

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    for name in ("_async_pre_start_kernel", "_async_launch_kernel", "_async_post_start_kernel",
                 "_async_kill_kernel", "_async_cleanup_resources"):
        monkeypatch.setattr(manager, name, step)
    monkeypatch.setattr(asyncio, "sleep", sleep)

    async def start_and_shut_down():
        await manager.start_kernel()
        started = manager.ready
        assert started.done() and started.exception() is None
        await manager.shutdown_kernel(now=True)
        assert manager.ready is not started and manager.ready.done()

    asyncio.run(start_and_shut_down())
    assert len(steps) == 5 and slept == []  # jupyter_client's own wrapper sleeps 10 ms in each


def test_a_kernel_that_fails_to_start_leaves_the_failure_in_ready(monkeypatch):
    manager = provision.GradingKernelManager()

    async def fail(**kwargs):
        raise OSError("no sandbox")

    monkeypatch.setattr(manager, "_async_pre_start_kernel", fail)

    async def start():
        try:
            await manager.start_kernel()
        except OSError:
            return manager.ready.exception()

    assert str(asyncio.run(start())) == "no sandbox"
