"""Pages people see, read as a browser would parse them, and formgrader's view rendered offline.

:func:`live_marks` parses an HTML page and lists every place where a payload's mark is live:
in an attribute (``onerror=...``, ``href=javascript:...``, ``srcdoc``, a ``data:`` image), in
the content of a ``<script>`` or ``<style>``, or in a tag of a kind that runs or embeds
content. The mark in ordinary text (escaped, in ``<pre>`` or a table cell) is inert and is
not listed. :func:`formgrader_html` renders a notebook as formgrader's submission view does.
"""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path

from nbformat import NotebookNode
from traitlets.config import Config

#: Elements whose content the browser runs or does not show as text.
RAW = {"script", "style", "iframe", "object", "embed", "svg", "math", "template", "noscript"}


class _Marks(HTMLParser):
    def __init__(self, mark: str):
        super().__init__(convert_charrefs=True)
        self.mark, self.found, self.open = mark, [], []

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if value and self.mark in value:
                self.found.append(f"<{tag} {name}={value[:80]!r}>")
            elif name in ("href", "src", "action") and (value or "").strip().lower().startswith(
                    "javascript:"):
                self.found.append(f"<{tag} {name}={value[:80]!r}>")
        if tag in RAW:
            self.open.append(tag)

    def handle_endtag(self, tag):
        if tag in self.open:
            self.open.remove(tag)

    def handle_data(self, data):
        if self.open and self.mark in data:
            self.found.append(f"<{self.open[-1]}> holds {data.strip()[:80]!r}")


def live_marks(page: str, mark: str) -> list[str]:
    """Where ``mark`` is live in the HTML ``page`` (empty when it appears only as text)."""
    parser = _Marks(mark)
    parser.feed(page)
    parser.close()
    return parser.found


def formgrader_html(notebook: Path | NotebookNode, config: Config | None = None,
                    name: str = "toy") -> str:
    """``notebook`` (a file, or a notebook called ``name``) rendered as formgrader's submission
    view renders it: nbgrader's formgrade template, nbconvert's HTMLExporter, formgrader's
    resources; then ``config`` (say, the course's nbgrader_config.py, which nbgrader loads
    after formgrader's own settings)."""
    import nbgrader.server_extensions.formgrader.handlers as handlers
    from nbconvert.exporters import HTMLExporter

    settings = Config()
    settings.HTMLExporter.template_name = "formgrade"  # FormgradeExtension.build_extra_config
    settings.HTMLExporter.extra_template_basedirs = [handlers.template_path]
    if config is not None:
        settings.merge(config)
    path = notebook if isinstance(notebook, Path) else Path(f"{name}.ipynb")
    resources = {"assignment_id": "a", "notebook_id": path.stem, "submission_id": "s",
                 "index": 0, "total": 1, "base_url": "", "student": "s", "last_name": None,
                 "first_name": None, "notebook_path": str(path)}
    exporter = HTMLExporter(config=settings)
    if isinstance(notebook, Path):
        return exporter.from_filename(str(notebook), resources=resources)[0]
    return exporter.from_notebook_node(notebook, resources)[0]
