"""Headless Chromium (Debian's, driven by Playwright) visiting pages as an instructor would.

:func:`chromium` starts the browser (flags for a closed network, as root); :meth:`Browser.visit`
opens a page, waits for it, and returns a :class:`Visit`: every console line, page error and
request the page made, the marks payloads leave on the page's root element when they run,
and the raster images that loaded.
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field

CHROMIUM = "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]


@dataclass
class Visit:
    """What a page did while it was open."""

    url: str
    console: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)
    marks: list[str] = field(default_factory=list)  # data-* attributes payloads set on <html>
    images: int = 0  # PNG and JPEG images that loaded (naturalWidth > 0)
    text: str = ""  # what the page shows as text

    def ran(self, mark: str) -> list[str]:
        """Every sign that a payload carrying ``mark`` ran: console lines, requests, marks."""
        return ([line for line in self.console if mark in line]
                + [url for url in self.requests if mark in url]
                + [m for m in self.marks if mark.lower() in m])


class Browser:
    """A browser context: its pages share the cookies of a login."""

    def __init__(self, context):
        self.context = context

    def visit(self, url: str, *, referer: str | None = None, settle_ms: int = 1500) -> Visit:
        """Open ``url``, wait for it to load and settle, and say what it did."""
        page = self.context.new_page()
        visit = Visit(url)
        page.on("console", lambda message: visit.console.append(message.text))
        page.on("pageerror", lambda error: visit.errors.append(str(error)))
        page.on("request", lambda request: visit.requests.append(request.url))
        page.on("dialog", lambda dialog: (visit.console.append(f"dialog: {dialog.message}"),
                                          dialog.dismiss()))
        page.goto(url, wait_until="load", referer=referer)
        page.wait_for_timeout(settle_ms)
        for frame in page.frames:
            with contextlib.suppress(Exception):
                visit.marks += frame.evaluate(
                    "() => document.documentElement.getAttributeNames()"
                    ".filter(n => n.startsWith('data-'))")
        visit.images = page.evaluate(
            "() => [...document.images].filter(i => /^data:image\\/(png|jpeg)/.test(i.src)"
            " && i.complete && i.naturalWidth > 0).length")
        visit.text = page.evaluate("() => document.body ? document.body.innerText : ''")
        page.close()
        return visit


@contextlib.contextmanager
def chromium() -> Iterator[Browser]:
    """Headless Chromium with a fresh profile, for one test module."""
    from playwright.sync_api import sync_playwright

    with (tempfile.TemporaryDirectory(prefix="autograd-course-chromium-") as profile,
          sync_playwright() as playwright):
        context = playwright.chromium.launch_persistent_context(
            profile, executable_path=CHROMIUM, headless=True, args=FLAGS)
        try:
            yield Browser(context)
        finally:
            context.close()
