"""Reading a submission: a file that is not a valid notebook is graded as an empty one, under
the course's grading lock, with the roster's names (:mod:`.around`), and a log that
formgrader shows at the server's level; and writing its feedback page with templates compiled
once per process."""

from __future__ import annotations

import functools
import os
import re
import secrets
from html.parser import HTMLParser

import jinja2
import nbformat
from nbconvert.exporters import HTMLExporter, NotebookExporter, TemplateExporter
from nbconvert.exporters.exporter import ResourcesDict
from nbconvert.filters.highlight import Highlight2HTML
from nbconvert.filters.widgetsdatatypefilter import WidgetsDataTypeFilter
from nbformat.notebooknode import NotebookNode
from nbgrader.coursedir import CourseDirectory

from autograd_course.grading.containment import contained
from autograd_course.grading.terminal import level_captures

from . import around
from .cells import META, max_file_bytes, notes, short, start_notes


class TolerantNotebookExporter(NotebookExporter):
    """A notebook exporter that reads a broken or oversized file as an empty submission, with
    a note, and keeps nothing of the grader's own in the notebook's metadata.

    A file larger than ``CourseDirectory.max_file_size`` is not read at all.

    As nbgrader's Autograde's exporter, it also holds the course's grading lock around each
    submission and puts the roster's names into the gradebook (:func:`.around.submission`),
    and makes the log formgrader collects hold what the server logs (INFO by default, not the
    DEBUG lines with the sandbox's command line: :func:`..terminal.level_captures`).
    """

    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        level_captures(self.log)  # made when an Autograde starts, before any notebook

    @contained  # the whole pipeline of one notebook: a SystemExit there is its failure alone
    def from_filename(self, filename, resources=None, **kw):
        try:
            with around.submission(self.parent, filename, resources, self.log):
                return self._from_filename(filename, resources, **kw)
        finally:  # whatever the outcome: nbgrader copied the student's files there first
            if resources is not None:
                from .inert import make_files_safe

                metadata = resources.setdefault("metadata", ResourcesDict())
                metadata.setdefault("path", os.path.dirname(filename))
                make_files_safe(CourseDirectory(config=self.config), resources)

    def _from_filename(self, filename, resources=None, **kw):
        if resources is not None and _is_submitted(filename, resources, self.config):
            start_notes(resources)  # nbgrader's sanitize stage reads submitted/: a new grading
        size, limit = os.path.getsize(filename), max_file_bytes(self.config)
        if size <= limit:
            return super().from_filename(filename, resources=resources, **kw)
        resources = ResourcesDict() if resources is None else resources
        if not resources.get("metadata"):
            resources["metadata"] = ResourcesDict()
        folder, name = os.path.split(filename)
        resources["metadata"].update(name=os.path.splitext(name)[0], path=folder)
        nb = self._empty(name, f"{size // 1000} kB, more than the limit of {limit // 1000} kB "
                         "(CourseDirectory.max_file_size); it was not read", resources)
        return self.from_notebook_node(nb, resources=resources, **kw)

    def from_file(self, file_stream, resources=None, **kw):
        resources = ResourcesDict() if resources is None else resources
        name = os.path.basename(getattr(file_stream, "name", "the notebook"))
        try:
            nb = nbformat.read(file_stream, as_version=4)
        except Exception as exc:  # not JSON, not UTF-8, not a notebook at all
            return self.from_notebook_node(self._empty(name, short(exc), resources),
                                           resources=resources, **kw)
        nb.metadata.pop(META, None)  # what the student wrote there is not the grader's
        _repair_duplicate_ids(nb)
        try:
            nbformat.validate(nb)
        except Exception as exc:  # e.g. an output a tool wrote with keys the schema forbids
            for step, what in ((_drop_outputs, "its outputs were dropped"),
                               (_drop_metadata, "its outputs and the metadata nbgrader does not "
                                "use were dropped")):
                step(nb)
                try:
                    nbformat.validate(nb)
                except Exception:  # noqa: BLE001 - try the next, more thorough, repair
                    continue
                notes(resources).append(f"{name} had invalid parts ({short(exc)}); {what} and "
                                        "the notebook was graded")
                break
            else:
                return self.from_notebook_node(self._empty(name, short(exc), resources),
                                               resources=resources, **kw)
        return self.from_notebook_node(nb, resources=resources, **kw)

    def _empty(self, name: str, why: str, resources: dict) -> NotebookNode:
        reason = f"{name} is not a valid notebook ({why})"
        self.log.warning("%s: graded as an empty submission", reason)
        nb = nbformat.v4.new_notebook()
        nb.metadata.kernelspec = {"name": "python3", "display_name": "Python 3",
                                  "language": "python"}
        notes(resources).append(reason + "; graded as an empty submission")
        return nb


def _drop_outputs(nb: NotebookNode) -> None:
    for cell in nb.cells:
        if cell.get("cell_type") == "code":
            cell.outputs, cell.execution_count = [], None


def _drop_metadata(nb: NotebookNode) -> None:
    """Keep only what grading uses: the kernel, and each cell's nbgrader metadata."""
    nb.metadata = NotebookNode({k: v for k, v in nb.metadata.items()
                                if k in ("kernelspec", "language_info")})
    for cell in nb.cells:
        cell.pop("attachments", None)
        meta = cell.get("metadata", {})
        cell.metadata = NotebookNode({"nbgrader": meta["nbgrader"]} if "nbgrader" in meta else {})


def _is_submitted(filename: str, resources: dict, config) -> bool:
    """Whether nbgrader reads ``filename`` from submitted/ (its sanitize stage), not from the
    autograded/ copy it made of it (its autograde stage)."""
    info = resources.get("nbgrader", {})
    if not info.get("student"):
        return False
    coursedir = CourseDirectory(config=config)
    folder = coursedir.format_path(coursedir.submitted_directory, info["student"],
                                   info.get("assignment", ""))
    return os.path.realpath(os.path.dirname(filename)) == os.path.realpath(folder)


def _repair_duplicate_ids(nb: NotebookNode) -> None:
    """Give a fresh id to every cell whose id repeats an earlier cell's (a copy-pasted cell)."""
    seen = set()
    for cell in nb.cells:
        if "id" in cell and cell.id in seen:
            cell.id = secrets.token_hex(4)
        seen.add(cell.get("id"))


class _CompiledTemplates(jinja2.BytecodeCache):
    """Jinja's compiled templates, kept in memory for the process (Jinja checks each against
    its template's source before it uses it)."""

    def __init__(self):
        self._code: dict[str, bytes] = {}

    def load_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        if bucket.key in self._code:
            bucket.bytecode_from_string(self._code[bucket.key])

    def dump_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        self._code[bucket.key] = bucket.bytecode_to_string()


_COMPILED = _CompiledTemplates()


class FeedbackExporter(HTMLExporter):
    """nbconvert's HTML exporter (``GenerateFeedback.exporter_class``), made for writing many
    pages in one process:

    - its templates are compiled once per process: nbgrader makes a new exporter for every
      feedback page, and compiling nbconvert's and nbgrader's templates again was most of a
      page's time;
    - the page is not parsed into a tree and written out again. nbconvert's HTMLExporter does
      that with BeautifulSoup, for accessibility: an image without an alternative text gets
      one, and JupyterLab's cells (``.jp-Notebook div.jp-Cell-inputWrapper``,
      ``div.jp-OutputArea-output``) get ``tabindex="0"``. nbgrader's feedback template is the
      classic one, whose cells those selectors never match, so only the images' text is left
      to give (:func:`described_images`, a streaming pass); the tree was half a page's time.
    """

    @contained  # the feedback pipeline of one notebook: a SystemExit there is its failure
    def from_notebook_node(self, nb, resources=None, **kw):
        # HTMLExporter.from_notebook_node (nbconvert 7), up to the page's tree
        info = nb.metadata.get("language_info", {})
        lexer = info.get("pygments_lexer", info.get("name", None))
        self.register_filter("highlight_code", self.filters.get(
            "highlight_code", _KeptHighlight(pygments_lexer=lexer, parent=self)))
        resources = self._init_resources(resources)
        self.register_filter("filter_data_type", WidgetsDataTypeFilter(
            notebook_metadata=self._nb_metadata, parent=self, resources=resources))
        html, resources = TemplateExporter.from_notebook_node(self, nb, resources, **kw)
        return described_images(html), resources

    def _create_environment(self):
        # nbconvert (private): TemplateExporter builds its Jinja environment here
        environment = super()._create_environment()
        environment.bytecode_cache = _COMPILED
        return environment


class _KeptHighlight(Highlight2HTML):
    """nbconvert's highlighting of a code cell, kept for the next page with the same cell
    when it is one of the course's locked cells (a test cell, the course's code: the same on
    every student's page, whose source nbgrader puts back as the course wrote it), for the
    :data:`HIGHLIGHTS_KEPT` cells last highlighted in this process. A student's cell is
    highlighted each time: a page keeps nothing of it."""

    def __call__(self, source, language=None, metadata=None):
        if not (metadata or {}).get("nbgrader", {}).get("locked") or len(source) > 2**16:
            return super().__call__(source, language, metadata)
        magics = (metadata or {}).get("magics_language")
        options = tuple(sorted(self.extra_formatter_options.items()))
        try:
            return _highlighted(source, language or self.pygments_lexer, magics, options)
        except TypeError:  # options that cannot be a key (a list): highlighted each time
            return super().__call__(source, language, metadata)


#: How many highlighted cells a grading process keeps (:class:`_KeptHighlight`).
HIGHLIGHTS_KEPT = 512


@functools.lru_cache(maxsize=HIGHLIGHTS_KEPT)
def _highlighted(source: str, language: str, magics: str | None, options: tuple) -> str:
    highlight = Highlight2HTML(pygments_lexer=language, extra_formatter_options=dict(options))
    return highlight(source, language, {"magics_language": magics} if magics else None)


#: The alternative text nbconvert gives an image that has none.
NO_DESCRIPTION = "No description has been provided for this image"


#: Where an image tag may start: an HTML parser reads a tag's name case-blind.
_IMAGE_TAG = re.compile("<img", re.IGNORECASE)


class _ImagesWithoutText(HTMLParser):
    """Where a page's ``<img>`` tags without an ``alt`` attribute start (offsets in the page),
    as an HTML parser finds them: never inside a ``<script>`` or ``<style>``, or a comment."""

    def __init__(self, page: str):
        super().__init__(convert_charrefs=False)
        self.lines = [0, *(m.end() for m in re.finditer("\n", page))]  # where line N+1 starts
        self.found: list[int] = []
        self.feed(page)
        self.close()

    def handle_starttag(self, tag, attrs):
        if tag == "img" and "alt" not in dict(attrs):
            line, column = self.getpos()
            self.found.append(self.lines[line - 1] + column)

    handle_startendtag = handle_starttag


def described_images(page: str) -> str:
    """``page`` with :data:`NO_DESCRIPTION` as the ``alt`` of each image that has none (as
    nbconvert's HTMLExporter gives it), and nothing else changed. A page with no ``<img``
    anywhere (most are: a plot is rare in a graded notebook) has no image tag to find, and is
    not parsed."""
    if _IMAGE_TAG.search(page) is None:
        return page
    parts, last = [], 0
    for start in _ImagesWithoutText(page).found:
        after = start + len("<img")
        parts += [page[last:after], f' alt="{NO_DESCRIPTION}"']
        last = after
    return "".join([*parts, page[last:]])
