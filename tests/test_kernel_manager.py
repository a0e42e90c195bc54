"""The grading kernel's manager (grading.boundary.provision.GradingKernelManager) on its own.

Its sessions and clients are test_kernel_messages.py's; here, the wait for a kernel's end:
jupyter_client looks whether a killed kernel is alive every 0.1 s, and a grading kernel, killed
at the end of every submission, is gone within milliseconds. The manager looks every
:data:`~autograd_course.grading.boundary.provision.KILLED_POLL_SECONDS`.
"""

from __future__ import annotations

import asyncio

from autograd_course.grading.boundary import provision


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
