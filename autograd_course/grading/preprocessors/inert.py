"""What people see of a submission: inert text and images, nothing that runs in a browser.

:class:`MakeInert` runs last in the autograde pipeline, so that the notebook on disk in
``autograded/`` is already clean for every viewer (each rule in full, and why:
docs/design.md#autograd_coursegradingpreprocessorsinertpy):

- **outputs** keep only ``text/plain``, streams, errors as text, and real PNG or JPEG images;
  every other kind is dropped, never parsed, and an output left empty becomes a one-line note;
- **markdown** the course wrote renders; the student's markdown and raw cells show as text;
- **metadata**: a cell keeps only well-formed nbgrader metadata, an output only an image's
  size, the notebook only its kernel and language;
- **text** loses every terminal escape and other ESC or C1 control character (:func:`plain`);
  outputs are capped (:data:`MAX_CELL` a cell, :data:`MAX_NOTEBOOK` the notebook), with a note;
- **a test cell's verdict** is wrapped at :data:`VERDICT_WIDTH` characters (:func:`wrap_verdict`);
- **files** beside the notebook get names Jupyter serves as text, an image or a download, never
  as a page (:mod:`..served`).
"""

from __future__ import annotations

import base64
import binascii
import os
import re
from pathlib import Path

import nbformat
from nbgrader.preprocessors import NbGraderPreprocessor

from autograd_course.grading import served
from autograd_course.kernel.wrapping import wrapped

from .cells import cell_role, course_paths, grade_id, release_notebook

#: Output kinds kept as they are (checked); everything else is removed.
TEXT = "text/plain"
IMAGES = {"image/png": b"\x89PNG\r\n\x1a\n", "image/jpeg": b"\xff\xd8\xff"}
MAX_IMAGE = 8 * 2**20  # bytes of one image
MAX_CELL = 2**20  # bytes of one cell's outputs (text, and images as base64)
MAX_NOTEBOOK = 4 * 2**20  # bytes of the notebook's outputs
#: Terminal escape sequences (CSI, OSC, DCS and the like, two-character ones), then any ESC
#: or C1 control character left.
_ESCAPES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b[\]PX^_][^\x07\x1b]*(?:\x07|\x1b\\)?"
                      r"|\x1b[ -/]*[0-~]|[\x1b\x80-\x9f]")
#: The longest line of a test cell's verdict, as shown (formgrader's output box at 1024
#: pixels shows some 90 characters of a line, and cuts off the rest).
VERDICT_WIDTH = 80
GRADE_ID = re.compile(r"^[A-Za-z0-9_.-]{1,128}$")
NBGRADER_KEYS = {"grade": bool, "solution": bool, "locked": bool, "task": bool,
                 "grade_id": str, "points": (int, float), "schema_version": int,
                 "checksum": str, "cell_type": str}
PYTHON = {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
          "language_info": {"name": "python"}}


class MakeInert(NbGraderPreprocessor):
    """Make the autograded notebook inert for every viewer (see the module's docstring)."""

    def preprocess(self, nb, resources):
        coursedir, assignment, notebook = course_paths(self.config, resources)
        release = release_notebook(coursedir, assignment, notebook)
        trusted = _course_texts(release)
        left = MAX_NOTEBOOK
        for index, cell in enumerate(nb.cells):
            nb.cells[index] = inert_cell(cell, trusted)
            if nb.cells[index].cell_type == "code":
                verdict = cell_role(cell) == "test"
                if verdict:
                    wrap_verdict(nb.cells[index])
                kept = cap_outputs(nb.cells[index], MAX_CELL if verdict else min(MAX_CELL, left))
                left -= 0 if verdict else kept
        nb.metadata = nbformat.NotebookNode(_notebook_metadata(release))
        make_files_safe(coursedir, resources)
        return nb, resources


def make_files_safe(coursedir, resources) -> None:
    """Give the files in the student's folder of autograded/ that nbgrader is writing names
    Jupyter never serves as pages (:func:`..served.make_safe`; the notebooks and nbgrader's
    timestamp are nbgrader's own). Nothing happens for a notebook graded elsewhere."""
    folder = _graded_folder(coursedir, resources)
    if folder is not None:
        served.make_safe(folder, {p.name for p in folder.glob("*.ipynb")} | {"timestamp.txt"})


def _graded_folder(coursedir, resources) -> Path | None:
    """The student's folder in autograded/ that nbgrader is writing, or None (another
    folder: a notebook made inert anywhere else keeps the files beside it)."""
    info = resources.get("nbgrader", {})
    folder = resources.get("metadata", {}).get("path")
    if not (folder and info.get("student") and info.get("assignment")):
        return None
    graded = coursedir.format_path(coursedir.autograded_directory, info["student"],
                                   info["assignment"])
    if os.path.realpath(folder) != os.path.realpath(graded) or not os.path.isdir(graded):
        return None
    return Path(graded)


def wrap_verdict(cell) -> None:
    """Wrap every line of ``cell``'s text outputs (streams, and errors' tracebacks, which
    are what pages show of an error) at :data:`VERDICT_WIDTH` characters, at spaces where
    there are some. An error's name and value stay as they are (the grade record's message).

    >>> cell = nbformat.v4.new_code_cell("")
    >>> cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text="ab " * 40)]
    >>> wrap_verdict(cell)
    >>> [len(line) for line in cell.outputs[0].text.splitlines()]
    [80, 38]
    """
    for output in cell.outputs:
        if output.get("output_type") == "stream":
            output.text = wrapped(output.text, VERDICT_WIDTH, "", break_words=True)
        elif output.get("output_type") == "error":
            output.traceback = [wrapped(line, VERDICT_WIDTH, "", break_words=True)
                                for line in output.traceback]


def cap_outputs(cell, limit: int) -> int:
    """Keep at most ``limit`` bytes of ``cell``'s outputs (text, and images as base64), in
    order: a text that goes past it is cut, the outputs after it are dropped, and a note says
    so. Return the bytes kept."""
    kept, cut, outputs = 0, 0, []
    for output in cell.outputs:
        size = _output_size(output)
        if cut or kept + size > limit:
            room = limit - kept
            fitted = _fit(output, room) if not cut else None
            cut += size - (_output_size(fitted) if fitted else 0)
            if fitted is not None:
                outputs.append(fitted)
                kept += _output_size(fitted)
            continue
        outputs.append(output)
        kept += size
    if cut:
        outputs.append(nbformat.v4.new_output("stream", name="stderr", text=(
            f"\n[the grader cut this cell's outputs here: {cut} bytes more were not kept "
            f"(at most {MAX_CELL // 2**20} MiB a cell, {MAX_NOTEBOOK // 2**20} MiB a "
            "notebook)]\n")))
    cell.outputs = outputs
    return kept


def _output_size(output) -> int:
    kind = output.get("output_type")
    if kind == "stream":
        return _bytes(output.text)
    if kind == "error":
        return _bytes(output.ename) + _bytes(output.evalue) + sum(map(_bytes, output.traceback))
    return sum(map(_bytes, output.get("data", {}).values()))


def _bytes(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def _cut(text: str, room: int) -> str:
    return text.encode("utf-8", "surrogatepass")[:max(0, room)].decode("utf-8", "ignore")


def _fit(output, room: int):
    """The first ``room`` bytes of a text output (a stream, or an error's value), or None."""
    kind = output.get("output_type")
    if kind == "stream" and room > 0:
        return nbformat.v4.new_output("stream", name=output.name, text=_cut(output.text, room))
    if kind == "error" and room > _bytes(output.ename):
        return nbformat.v4.new_output("error", ename=output.ename, traceback=[],
                                      evalue=_cut(output.evalue, room - _bytes(output.ename)))
    return None


def inert_cell(cell, trusted: set[str] = frozenset()):
    """The cell as people may see it: the course's markdown as it is, the student's as
    text; inert outputs; well-formed nbgrader metadata only."""
    metadata = _nbgrader_metadata(cell.get("metadata", {}))
    kind = cell.get("cell_type")
    source = _text(cell.get("source", ""))
    if kind == "code":
        new = nbformat.v4.new_code_cell(source, metadata=metadata)
        count = cell.get("execution_count")
        new.execution_count = count if type(count) is int else None
        new.outputs = [o for o in (inert_output(o) for o in cell.get("outputs", [])) if o]
    elif kind == "markdown" and source in trusted:
        new = nbformat.v4.new_markdown_cell(source, metadata=metadata)
    else:  # the student's markdown, a raw cell, anything else: shown as text
        new = nbformat.v4.new_markdown_cell(as_text(source), metadata=metadata)
    if isinstance(cell.get("id"), str):
        new.id = cell["id"]
    else:  # a notebook older than nbformat 4.5 has no cell ids: none is made up
        del new["id"]
    return new


def as_text(source: str) -> str:
    """Markdown that renders ``source`` as literal text: a fenced block longer than any run
    of backticks inside it."""
    if not source.strip():
        return ""
    runs = re.findall(r"`+", source)
    fence = "`" * max(3, 1 + max((len(r) for r in runs), default=0))
    return f"{fence}text\n{source}\n{fence}"


def inert_output(output):
    """An output with only inert content, or None for a kind the notebook format lacks."""
    kind = output.get("output_type")
    if kind == "stream":
        name = "stderr" if output.get("name") == "stderr" else "stdout"
        return nbformat.v4.new_output("stream", name=name, text=plain(output.get("text", "")))
    if kind == "error":
        traceback = output.get("traceback")
        lines = [plain(line) for line in traceback[:200]] if isinstance(traceback, list) else []
        return nbformat.v4.new_output("error", ename=plain(output.get("ename", ""))[:200],
                                      evalue=plain(output.get("evalue", "")), traceback=lines)
    if kind not in ("display_data", "execute_result"):
        return None
    data = output.get("data") if isinstance(output.get("data"), dict) else {}
    kept, metadata = {}, {}
    if TEXT in data:
        kept[TEXT] = plain(data[TEXT])
    for mime, signature in IMAGES.items():
        image = _image(data.get(mime), signature)
        if image is not None:
            kept[mime] = image
            size = _image_size(output.get("metadata"), mime)
            if size:
                metadata[mime] = size
    removed = sorted(str(m)[:60] for m in data if m not in kept)
    if not kept:
        kept[TEXT] = ("[the grader removed this output: " + ", ".join(removed or ["empty"])
                      + "; only text and PNG or JPEG images are shown]")
    if kind == "execute_result":
        count = output.get("execution_count")
        return nbformat.v4.new_output(kind, data=kept, metadata=metadata,
                                      execution_count=count if type(count) is int else None)
    return nbformat.v4.new_output(kind, data=kept, metadata=metadata)


def plain(value) -> str:
    """nbformat text (:func:`_text`) without terminal escape sequences or any other ESC or C1
    control character (time linear in its length).

    >>> plain(["\\x1b[1;31mred\\x1b[0m ", "\\x1b]8;;http://x\\x07link\\x1b]8;;\\x07 \\x9b31m\\x1b"])
    'red link 31m'
    """
    return _ESCAPES.sub("", _text(value))


def _text(value) -> str:
    """nbformat text (a string, or a list of lines), as one string; anything else is empty."""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return "".join(value)
    return ""


def _image(value, signature: bytes) -> str | None:
    """Canonical base64 of an image whose bytes start with ``signature``, or None."""
    if not isinstance(value, str) or len(value) > MAX_IMAGE * 4 // 3 + 1024:
        return None
    try:
        raw = base64.b64decode("".join(value.split()), validate=True)
    except (binascii.Error, ValueError):
        return None
    if not raw.startswith(signature) or len(raw) > MAX_IMAGE:
        return None
    return base64.b64encode(raw).decode("ascii")


def _image_size(metadata, mime: str) -> dict[str, int]:
    """An image's width and height from an output's metadata, when they are small integers."""
    found = metadata.get(mime, {}) if isinstance(metadata, dict) else {}
    found = found if isinstance(found, dict) else {}
    return {k: v for k in ("width", "height") if type(v := found.get(k)) is int and 0 < v < 10**4}


def _nbgrader_metadata(metadata) -> dict:
    """``{"nbgrader": ...}`` when the cell's nbgrader metadata is well formed, else ``{}``."""
    meta = metadata.get("nbgrader") if isinstance(metadata, dict) else None
    if not isinstance(meta, dict) or set(meta) - set(NBGRADER_KEYS):
        return {}
    for key, kind in NBGRADER_KEYS.items():
        if key in meta and (not isinstance(meta[key], kind) or (
                kind is not bool and isinstance(meta[key], bool))):
            return {}
    if "grade_id" in meta and not GRADE_ID.match(meta["grade_id"]):
        return {}
    return {"nbgrader": dict(meta)}


def _course_texts(release) -> set[str]:
    """The markdown the course wrote: the sources of the student version's markdown cells."""
    if release is None:
        return set()
    return {cell.source for cell in release.cells if cell.cell_type == "markdown"
            and (grade_id(cell) is None or cell.metadata.get("nbgrader", {}).get("locked"))}


def _notebook_metadata(release) -> dict:
    """The kernel and language of the student version (a plain Python 3 one without it)."""
    found = {key: release.metadata[key] for key in PYTHON
             if release is not None and key in release.metadata}
    return {**PYTHON, **found}
