"""nbgrader's Validate button, answered by the course: with the hidden tests where they are.

JupyterLab's nbgrader extension (the notebook toolbar's *Validate*, and the Assignment List's)
posts a notebook's path to ``<base_url>assignments/validate`` and shows the answer,
``{"success": ..., "value": ...}``, in a dialog: a ``value`` with none of nbgrader's keys reads
"Success! Your notebook passes all the tests."; ``value["failed"]`` lists failed cells, each a
``source`` (shown as text) and an ``error`` (shown as HTML); ``"success": false`` shows
``value`` as "an error running the validate command". nbgrader's own server extension
(``nbgrader.server_extensions.validate_assignment``) runs the visible tests only, and says
"passes all the tests" when they pass. This server extension serves the same URLs instead
(the Makefile and ``deploy/jupyter_server_config.json`` enable it and disable nbgrader's):

- where the hidden tests are at hand (self-study: a course root, with ``nbgrader_config.py``
  and ``source/``, above an assignment's notebook, :func:`hidden_tests_for`), Validate gives
  the verdict of ``autograd-course check``, run as the notebook's check cell runs it
  (:func:`.selfstudy.check_command`; :func:`verdict`): each question that fails its hidden
  tests is a failed cell with its points and message, the last one followed by the whole
  report (PASS or FAIL per question, the total); full marks are nbgrader's success, with the
  report;
- elsewhere (a course server, where the hidden tests are the instructor's, or a notebook that
  is no assignment's), nbgrader's own validation runs, and its answer says that it ran the
  visible tests only (:func:`visible_only`).

nbgrader's dialog has no place for a server's words on success, so this extension also serves
nbgrader's labextension files with one change (:func:`patched_chunk`): the success paragraph
shows ``value["message"]`` when the answer has one, nbgrader's sentence otherwise. Enable it
with ``jupyter server extension enable --sys-prefix autograd_course.lab.validate``.
"""

from __future__ import annotations

import asyncio
import html
import json
import re
import textwrap
from pathlib import Path

from jupyter_server.auth.decorator import allow_unauthenticated
from jupyter_server.base.handlers import JupyterHandler
from jupyter_server.utils import url_path_join
from nbgrader.server_extensions.validate_assignment.handlers import (
    NbGraderVersionHandler,
    ValidateAssignmentHandler,
)
from tornado import web

from autograd_course.lab import selfstudy

#: The columns of a line in the dialog (its text boxes break longer lines anywhere).
WIDTH = 80
#: What an answer of nbgrader's visible tests adds: they are not all the tests.
VISIBLE_ONLY = ("Validate ran the visible tests only: the checks in the question cells. The "
                "hidden tests are your instructor's; they run when your work is graded, so "
                "passing these is no promise of full marks.")
#: Where JupyterLab serves nbgrader's labextension (under the server's base_url).
NBGRADER_STATIC = "lab/extensions/@jupyter/nbgrader/static"
#: nbgrader's sentence for a notebook that passes.
SUCCESS = "Success! Your notebook passes all the tests."

_QUESTION = re.compile(r"^  (PASS|FAIL) (\S+): ([\d.]+)/([\d.]+)(?:  (.*))?$")
_TOTAL = re.compile(r"^  total: ([\d.]+)/([\d.]+)$")
#: The line with which a report's entry begins (a longer one is continued, wrapped, below it).
_ENTRY = re.compile(r"^(\S|  \S)")


# -- which tests: the hidden ones where the course is --------------------------------------
def _is_assignment(notebook: Path) -> bool:
    """Whether ``notebook`` is an assignment's (it has nbgrader's graded cells), not a lesson
    that shares its assignment's name."""
    try:
        cells = json.loads(notebook.read_text(encoding="utf-8")).get("cells", [])
    except (OSError, ValueError, AttributeError):
        return False
    return any(isinstance(c, dict) and isinstance(c.get("metadata"), dict)
               and isinstance(c["metadata"].get("nbgrader"), dict)
               and c["metadata"]["nbgrader"].get("grade_id") for c in cells)


def hidden_tests_for(notebook: Path) -> Path | None:
    """The course root whose hidden tests grade ``notebook``: the nearest one above it
    (:func:`.selfstudy.course_root`) that has the notebook's assignment in source/, when the
    notebook is an assignment's; else None."""
    root = selfstudy.course_root(notebook.parent)
    if root is None or not (root / "source" / notebook.stem / notebook.name).is_file():
        return None
    return root if _is_assignment(notebook) else None


# -- the answers -------------------------------------------------------------------------------
def _wrapped(text: str) -> str:
    """``text`` with every line broken at spaces to :data:`WIDTH` columns."""
    return "\n".join("\n".join(textwrap.wrap(line, WIDTH, break_long_words=False,
                                             break_on_hyphens=False,
                                             subsequent_indent=re.match(r" *", line)[0] + "  "))
                     or line for line in text.split("\n"))


def _entries(report: str) -> list[str]:
    """The report's entries (a question, an error, a note, the total), each a line again:
    ``check`` breaks a long one into lines, the ones after indented more."""
    entries: list[str] = []
    for line in report.splitlines():
        if entries and line.strip() and not _ENTRY.match(line):
            entries[-1] += " " + line.strip()
        else:
            entries.append(line)
    return entries


def verdict(report: str, status: int, errors: str = "") -> dict:
    """Validate's answer from ``autograd-course check``'s ``report``, exit ``status`` and
    ``errors`` (its stderr): nbgrader's success with the report at full marks; a failed cell for
    each failing question, the report after the last; nbgrader's error when it could not
    check."""
    entries = _entries(report)
    totals = [m for m in map(_TOTAL.match, entries) if m]
    if status != 0 or len(totals) != 1:
        said = "\n".join(part for part in (report.strip(), errors.strip()[-2000:]) if part)
        return {"success": False, "value": "The hidden tests could not check this notebook "
                f"(autograd-course check):\n\n{_wrapped(said)}"}
    score, most = (float(g) for g in totals[0].groups())
    shown = "\n".join(entries[1:])  # the notebook's path is the dialog's own
    if score >= most:
        return {"success": True, "value": {"message": (
            f"{SUCCESS[:-1]}, the hidden tests too: {score:g}/{most:g}, as the grader would "
            f"grade it (autograd-course check).\n\n{_wrapped(shown)}")}}
    failed = []
    for match in filter(None, map(_QUESTION.match, entries)):
        mark, question, got, points, message = match.groups()
        if mark == "FAIL":
            failed.append({"source": f"{question}: {float(got):g}/{float(points):g} points "
                                     "with the hidden tests",
                           "error": html.escape(_wrapped(message or "(no message)"))})
    whole = html.escape(_wrapped(f"The whole check, {score:g}/{most:g} points, as the grader "
                                 "would grade this notebook (autograd-course check):")
                        + f"\n\n{_wrapped(shown)}")
    if not failed:
        return {"success": True, "value": {"failed": [
            {"source": "the hidden tests", "error": whole}]}}
    failed[-1]["error"] += "\n\n" + whole
    return {"success": True, "value": {"failed": failed}}


def visible_only(answer: dict) -> dict:
    """nbgrader's ``answer`` of the visible tests, saying that they were the visible ones only:
    in its success message, or after its last failed cell. An error, or a cell whose type or
    locked source changed, is left as nbgrader says it."""
    if answer.get("success") is not True:
        return answer
    value = answer.get("value")
    if isinstance(value, str):
        value = json.loads(value)
    if not isinstance(value, dict) or "type_changed" in value or "changed" in value:
        return answer
    if value.get("failed"):
        value["failed"][-1]["error"] += "\n\n" + html.escape(_wrapped(VISIBLE_ONLY))
    else:
        value["message"] = f"Your notebook passes its visible tests.\n\n{VISIBLE_ONLY}"
    return {"success": True, "value": value}


async def hidden_verdict(root: Path, notebook: Path,
                         timeout: float = selfstudy.TIMEOUT) -> dict:
    """Validate's answer for ``notebook`` from the hidden tests of the course at ``root``:
    ``autograd-course check`` run as the check cell runs it, within ``timeout`` seconds."""
    command, env = selfstudy.check_command(root, notebook)
    process = await asyncio.create_subprocess_exec(
        *command, cwd=root, env=env, stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    try:
        out, err = await asyncio.wait_for(process.communicate(), timeout)
    except TimeoutError:
        process.kill()
        await process.wait()
        return {"success": False, "value": f"The check ran longer than {timeout:g} s and "
                "was stopped."}
    except asyncio.CancelledError:  # the server stops: so does the check
        process.kill()
        raise
    return verdict(out.decode(errors="replace"), process.returncode,
                   err.decode(errors="replace"))


# -- the handlers ------------------------------------------------------------------------------
class ValidateHandler(ValidateAssignmentHandler):
    """``POST assignments/validate``: the notebook's path as an argument or in a JSON body, as
    nbgrader takes it; the hidden tests' verdict where they are, else nbgrader's own
    validation (:meth:`validate_notebook`), said to be the visible tests' only."""

    @web.authenticated
    async def post(self):
        try:
            path = self.get_argument("path")
        except web.MissingArgumentError:
            path = (self.get_json_body() or {}).get("path")
        if not isinstance(path, str) or not path:
            raise web.HTTPError(400, "no notebook path given")
        root = Path(self.root_dir).resolve()
        target = (root / path).resolve()
        if not target.is_relative_to(root):
            raise web.HTTPError(403, "Access denied: path outside allowed directory")
        course = hidden_tests_for(target) if target.is_file() else None
        if course is None:
            answer = visible_only(self.validate_notebook(path))
        else:
            self.log.info("Validating %s with the hidden tests of %s", target, course)
            answer = await hidden_verdict(course, target)
        self.finish(json.dumps(answer))


_PARSED = re.compile(r'\((\w+)="string"==typeof \1\.value\?JSON\.parse\(\1\.value\):\1\.value\)')
_SAYS = re.compile(r"(\w+)\.innerText=" + re.escape(json.dumps(SUCCESS)))


def patched_chunk(text: str) -> str:
    """nbgrader's labextension code ``text``, its success paragraph showing the answer's
    ``message`` when it has one (a string), nbgrader's sentence otherwise. Code without exactly
    one such paragraph and one parsed answer (another nbgrader) is returned as it is."""
    parsed, says = _PARSED.findall(text), _SAYS.findall(text)
    if len(parsed) != 1 or len(says) != 1:
        return text
    value = parsed[0]
    return _SAYS.sub(lambda m: (f'{m.group(1)}.innerText=("string"==typeof {value}.message?'
                                f"{value}.message:{json.dumps(SUCCESS)})"), text)


def nbgrader_static() -> Path | None:
    """The folder of nbgrader's labextension files, the first on Jupyter's path."""
    from jupyter_core.paths import jupyter_path

    for folder in jupyter_path("labextensions"):
        static = Path(folder) / NBGRADER_STATIC.removeprefix("lab/extensions/")
        if static.is_dir():
            return static
    return None


class NbgraderFileHandler(JupyterHandler):
    """``GET lab/extensions/@jupyter/nbgrader/static/NAME.js``: nbgrader's labextension file,
    :func:`patched_chunk`; public, as JupyterLab serves these files, and never cached."""

    @allow_unauthenticated
    def get(self, name: str):
        static = nbgrader_static()
        path = static / name if static else None
        if path is None or not path.is_file():
            raise web.HTTPError(404)
        self.set_header("Content-Type", "application/javascript; charset=UTF-8")
        self.set_header("Cache-Control", "no-cache")
        self.finish(patched_chunk(path.read_text(encoding="utf-8")))


def _jupyter_server_extension_points() -> list[dict]:
    return [{"module": "autograd_course.lab.validate"}]


def _load_jupyter_server_extension(serverapp) -> None:
    """Serve Validate's URLs (nbgrader's version check too) and nbgrader's labextension files;
    loaded before jupyterlab and nbgrader (extensions load in the order of their names), the
    first handler of a URL answers it."""
    webapp = serverapp.web_app
    base_url = webapp.settings["base_url"]
    webapp.settings["root_dir"] = serverapp.root_dir  # as nbgrader's handlers read it
    webapp.add_handlers(".*$", [
        (url_path_join(base_url, "assignments/validate"), ValidateHandler),
        (url_path_join(base_url, "nbgrader_version"), NbGraderVersionHandler),
        (url_path_join(base_url, NBGRADER_STATIC, r"([\w.-]+\.js)"), NbgraderFileHandler),
    ])
    serverapp.log.info("autograd_course.lab.validate: Validate checks with the hidden tests "
                       "where a course root is above the notebook")
