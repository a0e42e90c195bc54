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

- the course is the server's (:func:`configured_course`): the folder the trait
  ``CourseValidate.course_root`` names, or else the server's ``root_dir`` when it is a course
  root (``nbgrader_config.py`` and ``source/``, inside no other course root) — never a folder
  found by walking up from the notebook, which a submission could bring along
  (``submitted/ID/NN/`` with a ``nbgrader_config.py``, a ``source/`` and an
  ``autograd_course/`` of its own);
- a learner's own copy of an assignment there (:func:`.selfstudy.learners_copy`:
  ``release/NN/NN.ipynb``, ``work/NN/NN.ipynb``, or the Assignment List's ``NN/NN.ipynb``
  directly below the root, no symbolic link on the way leading elsewhere) gets the verdict of
  ``autograd-course check`` (:func:`hidden_verdict`, :func:`verdict`), run as the check cell
  runs it (:func:`.selfstudy.check_command`: ``python -P``, in the configured root,
  ``--course`` that root, ``--`` before the notebook): each question that fails its hidden
  tests is a failed cell with its points and message, the last one followed by the whole
  report (PASS or FAIL per question, the total); full marks are nbgrader's success, with the
  report;
- any other notebook inside a course root (the configured one, or any course found above the
  notebook: ``submitted/``, ``autograded/``, ``feedback/``, an exchange, a nested course, a
  lesson) is refused (:func:`refused`): nothing of it runs. nbgrader's own validation would
  run the notebook, unsandboxed, as whoever runs the server (on the course's formgrader: the
  grader, who can read the secret and the gradebook);
- a notebook in no course (a student's own server on a course's JupyterHub, where the hidden
  tests are the instructor's) gets nbgrader's own validation, its answer saying that it ran
  the visible tests only (:func:`visible_only`): the student's code, run as the student.

Where the server has a course, the extension also keeps the warm check ready for it
(:mod:`autograd_course.warmcheck`: a service that the check cell, Validate and
``autograd-course check`` ask first), unless ``--CourseValidate.warm_check=False``; it is
stopped with the server.

nbgrader's dialog has no place for a server's words on success, so this extension also serves
nbgrader's labextension files with one change (:func:`patched_chunk`): the success paragraph
shows ``value["message"]`` when the answer has one, nbgrader's sentence otherwise; the patched
text is kept per file and modification time (:func:`served_chunk`). Enable it
with ``jupyter server extension enable --sys-prefix autograd_course.lab.validate``.
"""

from __future__ import annotations

import asyncio
import html
import json
import re
from pathlib import Path

from jupyter_server.auth.decorator import allow_unauthenticated
from jupyter_server.base.handlers import JupyterHandler
from jupyter_server.utils import url_path_join
from nbgrader.server_extensions.validate_assignment.handlers import (
    NbGraderVersionHandler,
    ValidateAssignmentHandler,
)
from tornado import web
from traitlets import Bool, Unicode
from traitlets.config import Configurable

from autograd_course import warmcheck
from autograd_course.kernel.wrapping import wrapped
from autograd_course.lab import selfstudy

#: The columns of a line in the dialog (its text boxes break longer lines anywhere).
WIDTH = 80
#: What an answer of nbgrader's visible tests adds: they are not all the tests.
VISIBLE_ONLY = ("Validate ran the visible tests only: the checks in the question cells. The "
                "hidden tests are your instructor's; they run when your work is graded, so "
                "passing these is no promise of full marks.")
#: Where JupyterLab serves nbgrader's labextension (under the server's base_url).
NBGRADER_STATIC = "lab/extensions/@jupyter/nbgrader/static"
#: The web application's setting that holds the server's course (:func:`configured_course`).
COURSE_SETTING = "autograd_course_validate_course"
#: The server's setting that holds the lock of its hidden checks: one runs at a time (each
#: grades a whole notebook, a kernel and all), the others wait their turn.
CHECK_LOCK_SETTING = "autograd_course_validate_check_lock"
#: The server's setting that holds the warm check's service (:class:`.warmcheck.Service`).
WARM_CHECK_SETTING = "autograd_course_warm_check"
#: How the answer to a notebook Validate does not check in a course starts.
REFUSED = "Validate did not check this notebook, and ran nothing of it"
#: nbgrader's sentence for a notebook that passes.
SUCCESS = "Success! Your notebook passes all the tests."

_QUESTION = re.compile(r"^  (PASS|FAIL) (\S+): ([\d.]+)/([\d.]+)(?:  (.*))?$")
_TOTAL = re.compile(r"^  total: ([\d.]+)/([\d.]+)$")
#: The line with which a report's entry begins (a longer one is continued, wrapped, below it).
_ENTRY = re.compile(r"^(\S|  \S)")


# -- which tests: the hidden ones of the server's course ---------------------------------
class CourseValidate(Configurable):
    """The course whose hidden tests Validate runs (``--CourseValidate.course_root=DIR``)."""

    warm_check = Bool(True, config=True, help=(
        "Keep a warm check ready for the course's learners' copies (autograd_course."
        "warmcheck): the check cell, Validate and `autograd-course check` then answer in "
        "about a second from the second check on. It holds a grading process, a zygote and their "
        "memory while the server runs."))

    course_root = Unicode("", config=True, help=(
        "The course root (nbgrader_config.py and source/) whose hidden tests Validate runs "
        "for a learner's copy of an assignment in it; by default the server's root_dir, when "
        "it is a course root."))


def configured_course(root_dir: str | Path, setting: str = "") -> Path | None:
    """The course of a server at ``root_dir``, resolved: the folder ``setting`` names, when it
    is a course root; else ``root_dir`` when it is one inside no other course root; else None
    (no hidden tests on this server)."""
    if setting:
        chosen = Path(setting).expanduser().resolve()
        return chosen if selfstudy.is_course_root(chosen) else None
    root = Path(root_dir).resolve()
    return root if selfstudy.outermost_course(root) else None


def in_a_course(course: Path | None, notebook: Path) -> bool:
    """Whether ``notebook`` (as named, or resolved) is inside the ``course`` or any course root
    above it."""
    real = notebook.resolve()
    return (course is not None and (notebook.is_relative_to(course)
                                    or real.is_relative_to(course))) or any(
        selfstudy.course_root(path.parent) is not None for path in (notebook, real))


# -- the answers -------------------------------------------------------------------------------
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
                f"(autograd-course check):\n\n{wrapped(said, WIDTH)}"}
    score, most = (float(g) for g in totals[0].groups())
    shown = "\n".join(entries[1:])  # the notebook's path is the dialog's own
    if score >= most:
        return {"success": True, "value": {"message": (
            f"{SUCCESS[:-1]}, the hidden tests too: {score:g}/{most:g}, as the grader would "
            f"grade it (autograd-course check).\n\n{wrapped(shown, WIDTH)}")}}
    failed = []
    for match in filter(None, map(_QUESTION.match, entries)):
        mark, question, got, points, message = match.groups()
        if mark == "FAIL":
            failed.append({"source": f"{question}: {float(got):g}/{float(points):g} points "
                                     "with the hidden tests",
                           "error": html.escape(wrapped(message or "(no message)", WIDTH))})
    whole = html.escape(wrapped(f"The whole check, {score:g}/{most:g} points, as the grader "
                                "would grade this notebook (autograd-course check):", WIDTH)
                        + f"\n\n{wrapped(shown, WIDTH)}")
    if not failed:
        return {"success": True, "value": {"failed": [
            {"source": "the hidden tests", "error": whole}]}}
    failed[-1]["error"] += "\n\n" + whole
    return {"success": True, "value": {"failed": failed}}


def refused(path: str) -> dict:
    """Validate's answer to the notebook at ``path``, in a course, that is no learner's copy:
    nbgrader's error, saying why and what Validate checks."""
    return {"success": False, "value": wrapped(
        f"{REFUSED}: {path}. In a course, Validate checks a learner's own copy of an "
        "assignment only, at the course root: release/NN/NN.ipynb, work/NN/NN.ipynb "
        "(autograd-course start) or NN/NN.ipynb (the Assignment List), NN an assignment of "
        "source/, with no symbolic link on the way. A submission (submitted/, autograded/) is "
        "graded with autograd-course grade, which runs it in the sandbox.", WIDTH)}


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
        value["failed"][-1]["error"] += "\n\n" + html.escape(wrapped(VISIBLE_ONLY, WIDTH))
    else:
        value["message"] = f"Your notebook passes its visible tests.\n\n{VISIBLE_ONLY}"
    return {"success": True, "value": value}


async def hidden_verdict(root: Path, notebook: Path,
                         timeout: float = selfstudy.TIMEOUT) -> dict:
    """Validate's answer for ``notebook`` from the hidden tests of the course at ``root``:
    ``autograd-course check`` run as the check cell runs it, within ``timeout`` seconds."""
    command, env = selfstudy.check_command(root, notebook)
    answer = await asyncio.to_thread(warmcheck.ask, root, notebook, None, env, timeout)
    if answer is not None:  # JupyterLab's warm check answered: the same report
        return verdict("\n".join([command[-1], *answer["lines"]]) + "\n",
                       2 if answer["error"] else 0, answer["error"] or "")
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
    """``POST assignments/validate``: the notebook's path (relative to the server's root) as an
    argument or in a JSON body, as nbgrader takes it; the hidden tests' verdict for a learner's
    copy in the server's course (one check at a time, :data:`CHECK_LOCK_SETTING`), a refusal
    for any other notebook in a course, nbgrader's own validation (:meth:`validate_notebook`,
    in a thread of its own) elsewhere, said to be the visible tests' only."""

    @web.authenticated
    async def post(self):
        try:
            path = self.get_argument("path")
        except web.MissingArgumentError:
            path = (self.get_json_body() or {}).get("path")
        if not isinstance(path, str) or not path:
            raise web.HTTPError(400, "no notebook path given")
        root = Path(self.root_dir).resolve()
        notebook = root / path  # as named: learners_copy follows no link leading elsewhere
        try:
            inside = notebook.resolve().is_relative_to(root)
        except (OSError, RuntimeError, ValueError):  # a loop of links, a NUL
            inside = False
        if not inside:
            raise web.HTTPError(403, "Access denied: path outside allowed directory")
        course = self.settings.get(COURSE_SETTING)
        if course is not None and selfstudy.learners_copy(course, notebook):
            async with self.settings[CHECK_LOCK_SETTING]:
                self.log.info("Validating %s with the hidden tests of %s", notebook, course)
                answer = await hidden_verdict(course, notebook)
        elif in_a_course(course, notebook):
            self.log.warning("Validate refused %s: no learner's copy of the course %s",
                             notebook, course)
            answer = refused(path)
        else:
            # nbgrader's validation blocks (it runs the notebook): in a thread, so that the
            # server goes on answering meanwhile
            answer = visible_only(await asyncio.to_thread(self.validate_notebook, path))
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


#: The files served, patched: path -> ((modification time, size), text).
_SERVED: dict[Path, tuple[tuple[int, int], str]] = {}


def served_chunk(path: Path) -> str:
    """nbgrader's labextension file at ``path``, :func:`patched_chunk`; read and patched once
    per modification of the file (patching the largest takes some 15 ms)."""
    stat = path.stat()
    key = (stat.st_mtime_ns, stat.st_size)
    kept = _SERVED.get(path)
    if kept is None or kept[0] != key:
        kept = _SERVED[path] = (key, patched_chunk(path.read_text(encoding="utf-8")))
    return kept[1]


class NbgraderFileHandler(JupyterHandler):
    """``GET lab/extensions/@jupyter/nbgrader/static/NAME.js``: nbgrader's labextension file,
    :func:`served_chunk`; public, as JupyterLab serves these files, and never cached by the
    browser (a new nbgrader is seen at once)."""

    @allow_unauthenticated
    def get(self, name: str):
        static = nbgrader_static()
        path = static / name if static else None
        if path is None or not path.is_file():
            raise web.HTTPError(404)
        self.set_header("Content-Type", "application/javascript; charset=UTF-8")
        self.set_header("Cache-Control", "no-cache")
        self.finish(served_chunk(path))


#: Seconds between two looks at the warm check's service (restarted when it has ended).
WATCH_SECONDS = 5.0


def _start_warm_check(serverapp, course: Path) -> None:
    """Start the warm check's service for the server's course
    (:mod:`autograd_course.warmcheck`), look at it every :data:`WATCH_SECONDS` (a service whose
    code went stale ends, and starts again), and stop it with the server."""
    import atexit

    from tornado.ioloop import PeriodicCallback

    service = warmcheck.Service(course, serverapp.log)
    if not service.start():
        serverapp.log.info("autograd_course.lab.validate: no warm check here (no private "
                           "runtime folder for its socket); checks run cold")
        return
    serverapp.web_app.settings[WARM_CHECK_SETTING] = service
    PeriodicCallback(service.watch, WATCH_SECONDS * 1000).start()
    atexit.register(service.stop)


def _jupyter_server_extension_points() -> list[dict]:
    return [{"module": "autograd_course.lab.validate"}]


def _load_jupyter_server_extension(serverapp) -> None:
    """Serve Validate's URLs (nbgrader's version check too) and nbgrader's labextension files;
    loaded before jupyterlab and nbgrader (extensions load in the order of their names), the
    first handler of a URL answers it. The server's course is found once, here."""
    webapp = serverapp.web_app
    base_url = webapp.settings["base_url"]
    webapp.settings["root_dir"] = serverapp.root_dir  # as nbgrader's handlers read it
    options = CourseValidate(config=serverapp.config)
    setting = options.course_root
    course = webapp.settings[COURSE_SETTING] = configured_course(serverapp.root_dir, setting)
    webapp.settings[CHECK_LOCK_SETTING] = asyncio.Lock()
    if course is not None and options.warm_check:
        _start_warm_check(serverapp, course)
    webapp.add_handlers(".*$", [
        (url_path_join(base_url, "assignments/validate"), ValidateHandler),
        (url_path_join(base_url, "nbgrader_version"), NbGraderVersionHandler),
        (url_path_join(base_url, NBGRADER_STATIC, r"([\w.-]+\.js)"), NbgraderFileHandler),
    ])
    if setting and course is None:
        serverapp.log.error("autograd_course.lab.validate: CourseValidate.course_root=%s is no "
                            "course root (nbgrader_config.py and source/)", setting)
    if course is None:
        serverapp.log.info("autograd_course.lab.validate: no course here; Validate runs the "
                           "visible tests outside a course and refuses notebooks inside one")
    else:
        serverapp.log.info("autograd_course.lab.validate: Validate checks a learner's copies "
                           "in %s with its hidden tests and refuses other notebooks there",
                           course)
