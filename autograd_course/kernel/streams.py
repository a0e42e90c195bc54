"""The grading kernel's stdout and stderr (kernel side): ipykernel's stream, in small messages.

ipykernel gathers everything written within ``flush_interval`` (0.2 s) into one message, so a
loop of prints makes one message of hundreds of MiB or many small ones, by how fast the loop
runs against the kernel's I/O thread. The grader refuses a message over its limit
(``grading.boundary.provision.MAX_MESSAGE``), so the grade of such a notebook would depend
on timing.
:class:`ChunkedOutStream` sends what it holds as soon as that passes :data:`CHUNK` characters:
what a loop of prints sends, and what the kernel queues, no longer depends on timing.
"""

from __future__ import annotations

from ipykernel.iostream import OutStream

#: Characters written before the stream sends them without waiting for its interval.
CHUNK = 2**20


class ChunkedOutStream(OutStream):
    """ipykernel's ``OutStream``, flushed every :data:`CHUNK` characters (the kernel's
    ``IPKernelApp.outstream_class``); a longer write is sent in slices of that size. Flushing
    waits for the I/O thread, so a fast writer waits for its output to be sent instead of
    piling it up. A message holds at most about :data:`CHUNK` characters (JSON escapes of
    control characters make it up to 6 times as many bytes, far under the grader's limit)."""

    _unsent = 0

    def write(self, string: str) -> int | None:
        if not isinstance(string, str) or len(string) <= CHUNK:
            return self._write(string)
        for start in range(0, len(string), CHUNK):
            self._write(string[start:start + CHUNK])
        return len(string)

    def _write(self, string: str) -> int | None:
        written = super().write(string)
        if self._is_master_process():
            self._unsent += len(string)
            if self._unsent >= CHUNK:
                self._unsent = 0
                self.flush()
        return written
