"""What a grading kernel sends the grader: bounded by the grader's side, and in small parts.

The grader's session (grading.boundary.provision.BoundedSession) refuses a message too large
in all its parts, too full of structure, or with a wrong signature, and gives a reason that is
the same every time; the kernel's stream (autograd_course.kernel.streams) sends a loop of prints in
messages of a bounded size, whatever the timing.
"""

from __future__ import annotations

import time

import pytest
from jupyter_client.kernelspec import KernelSpec
from jupyter_client.session import Session

from autograd_course.grading.boundary import provision, sandbox
from autograd_course.kernel import streams


def _parts(session: Session, buffers=()) -> list[bytes]:
    """A stream message as the grader's socket hands it over, identities taken off."""
    message = session.msg("stream", {"name": "stdout", "text": "parts"})
    message["buffers"] = list(buffers)
    _, parts = session.feed_identities(session.serialize(message))
    return parts + [bytes(b) for b in buffers]


def test_a_message_of_many_parts_is_refused_and_stops_the_kernel():
    refused = []
    grader = provision.BoundedSession(key=b"k", max_bytes=2**20, on_refused=refused.append)
    kernel_side = Session(key=b"k")
    assert grader.deserialize(_parts(kernel_side))["content"]["text"] == "parts"
    with pytest.raises(ValueError) as too_large:
        grader.deserialize(_parts(kernel_side, [b"x" * 2**19] * 3))  # each part is small
    assert refused == [str(too_large.value)] == [provision.TOO_LARGE]


def test_a_wrong_signature_gets_one_reason_whatever_the_message():
    refused = []
    grader = provision.BoundedSession(key=b"k", max_bytes=2**20, on_refused=refused.append)
    for key in (b"other", b"another"):
        with pytest.raises(ValueError):
            grader.deserialize(_parts(Session(key=key)))
    assert refused[0] == refused[1] == provision.unreadable("a wrong signature")


def test_too_much_structure_is_refused_over_all_the_parts_together():
    grader = provision.BoundedSession(key=b"k", max_bytes=2**30)
    kernel_side = Session(key=b"k")
    for content, metadata in (([[]] * 3_000_000, {}), ([[]] * 600_000, {"m": [[]] * 600_000})):
        message = kernel_side.msg("stream", {"name": "stdout", "text": content},
                                  metadata=metadata)
        _, parts = kernel_side.feed_identities(kernel_side.serialize(message))
        with pytest.raises(ValueError) as refused:
            grader.deserialize(parts)
        assert str(refused.value) == provision.TOO_STRUCTURED


def test_a_header_of_many_dates_is_refused_before_it_is_parsed():
    # jupyter_client reads every string of a header as a possible date (dateutil): a million
    # of them passed the size and structure limits and cost the grader about 8 CPU-seconds
    refused = []
    grader = provision.BoundedSession(key=b"k", max_bytes=2**30, on_refused=refused.append)
    kernel_side = Session(key=b"k")
    message = kernel_side.msg("stream", {"name": "stdout", "text": "dates"})
    message["header"]["d"] = ["2020-01-01T00:00:00.123456+01:00"] * 100_000
    _, parts = kernel_side.feed_identities(kernel_side.serialize(message))
    started = time.process_time()
    with pytest.raises(ValueError):
        grader.deserialize(parts)
    assert refused == [provision.HEADER_TOO_LARGE]
    assert time.process_time() - started < 0.1  # refused on its size, not parsed
    honest = kernel_side.msg("stream", {"name": "stdout", "text": "x"},
                             parent=kernel_side.msg("execute_request", {}))
    _, parts = kernel_side.feed_identities(kernel_side.serialize(honest))
    assert grader.deserialize(parts)["content"]["text"] == "x"


def test_a_signed_message_that_is_not_a_jupyter_message_gets_one_reason():
    refused = []
    grader = provision.BoundedSession(key=b"k", max_bytes=2**20, on_refused=refused.append)
    kernel_side = Session(key=b"k")
    rest = _parts(kernel_side)[2:5]  # parent header, metadata, content
    # both signed; the second nested far past Python's recursion limit, within MAX_HEADER
    for header in (b'"not a header"', b"[" * 30_000 + b"]" * 30_000):
        with pytest.raises(ValueError):
            grader.deserialize([kernel_side.sign([header, *rest]), header, *rest])
    assert refused == [provision.unreadable("not a Jupyter message")] * 2


def test_prints_arrive_in_small_messages_a_long_one_in_slices(tmp_path):
    from jupyter_client.manager import KernelManager

    class Manager(KernelManager):  # the grading kernel's command line, outside the sandbox
        @property
        def kernel_spec(self):
            return KernelSpec(argv=sandbox.kernel_python(), language="python", env={})

    manager = Manager()
    manager.start_kernel(cwd=str(tmp_path))
    client = manager.client()
    client.start_channels()
    try:
        client.wait_for_ready(timeout=60)
        line = "y" * 2**19
        code = f"for _ in range(24):\n    print({line!r})\nprint('z' * 5 * 2**20)"
        msg_id = client.execute(code)
        texts = []
        while True:
            message = client.get_iopub_msg(timeout=60)
            if message["parent_header"].get("msg_id") != msg_id:
                continue
            if message["msg_type"] == "stream":
                texts.append(message["content"]["text"])
            if message["msg_type"] == "status" and message["content"]["execution_state"] == "idle":
                break
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)
    assert "".join(texts) == (line + "\n") * 24 + "z" * 5 * 2**20 + "\n"
    assert max(map(len, texts)) <= streams.CHUNK + len(line) + 1, [len(t) for t in texts]
