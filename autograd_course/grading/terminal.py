"""Text from submissions, made safe for a terminal and a log: no control characters.

A student's exception message, a scan finding that quotes their code, a note: anything that
comes from a submission may carry ANSI escape codes (which can move the cursor and erase a
classmate's line from the instructor's screen), other control characters, or Unicode's
bidirectional overrides (which reorder what is shown). :func:`safe` removes them all.

>>> safe("ok\\x1b[2K\\x1b[1A gone\\r\\u202eelif")
'ok gone elif'
"""

from __future__ import annotations

import io
import logging
import re
import unicodedata

_ESCAPES = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|.)?")
_BIDI = dict.fromkeys(map(ord, "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e"
                               "\u2066\u2067\u2068\u2069"))


def safe(text: object, *, lines: bool = False) -> str:
    """``text`` with ANSI escape sequences, control characters and bidirectional overrides
    removed; tabs and line ends become spaces (one message, one line), or with ``lines`` the
    line ends (``\n``) are kept."""
    text = _ESCAPES.sub("", str(text)).translate(_BIDI)
    kept = "\n" if lines else ""
    return "".join(c if c in kept else " " if c in "\t\n\r" else c for c in text
                   if c in "\t\n\r" or unicodedata.category(c) != "Cc")


class SafeLog(logging.Filter):
    """A logging filter that makes each message :func:`safe` (line ends kept): nbgrader's own
    log lines quote the names of a submission's files and notebooks, which the student chose
    (``c.Application.logging_config`` in ``nbgrader_config.py`` sets it on the console)."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg, record.args = safe(record.getMessage(), lines=True), ()
        return True


def level_captures(logger: logging.Logger | logging.LoggerAdapter) -> None:
    """Make the log nbgrader's formgrader shows after an *Autograde* hold what the server's own
    log holds, made :func:`safe`.

    Formgrader runs nbgrader's Autograde in the Jupyter server and collects its log with a
    handler of its own (``nbgrader.utils.capture_log``: a ``StreamHandler`` on a ``StringIO``,
    with no level and no filter) on the server's logger, which traitlets leaves at DEBUG and
    filters in its console handler. Its dialog showed every DEBUG line, the sandbox's whole
    command line among them. Each such handler of ``logger`` gets the level of the logger's
    other handlers (the server's console: INFO unless it was started with ``--debug``; INFO
    when there is none) and the :class:`SafeLog` filter the console has. A logger without such
    a handler (``nbgrader autograde`` in a terminal) is left as it is.
    """
    logger = getattr(logger, "logger", logger)  # a LoggerAdapter's own logger
    handlers = list(getattr(logger, "handlers", []))
    captures = [h for h in handlers if type(h) is logging.StreamHandler
                and isinstance(h.stream, io.StringIO) and h.level == logging.NOTSET]
    others = [h.level for h in handlers if h not in captures and h.level != logging.NOTSET]
    for handler in captures:
        handler.setLevel(min(others, default=logging.INFO))
        if not any(isinstance(f, SafeLog) for f in handler.filters):
            handler.addFilter(SafeLog())
