"""MathJax for the pages people see of a submission (formgrader, the feedback): from this
machine, never from a CDN.

The course's nbconvert templates (:data:`TEMPLATES`, put first by
``HTMLExporter.extra_template_basedirs`` in ``nbgrader_config.py``, see
:func:`template_basedirs`) replace nbconvert's ``mathjax()`` macro (``base/mathjax.html.j2``)
for every template built on nbconvert's: the page loads MathJax 2.7 from Debian's
``libjs-mathjax`` (:data:`MATHJAX_DIR`), with MathJax's ``Safe`` extension on, and

- as ``file://`` files when the page is a file (the feedback an instructor or a student opens);
- from the Jupyter server that serves the page (formgrader, or the feedback under ``/files/``),
  at ``<base_url>autograd-course/mathjax/``: this module is the server extension that serves
  it. The extension is enabled with
  ``jupyter server extension enable --sys-prefix autograd_course.grading.mathjax``.

Without ``libjs-mathjax`` nothing is fetched from elsewhere: math shows as its TeX source.
"""

from __future__ import annotations

from pathlib import Path

#: Debian's libjs-mathjax (MathJax 2.7); the templates load it from here (``file://``).
MATHJAX_DIR = Path("/usr/share/javascript/mathjax")
#: Where the Jupyter server serves :data:`MATHJAX_DIR`, under its base URL.
ROUTE = "autograd-course/mathjax"
#: The course's nbconvert templates (a folder per template, as nbconvert's own).
TEMPLATES = Path(__file__).parent / "templates" / "nbconvert"


def template_basedirs() -> list[str]:
    """``HTMLExporter.extra_template_basedirs`` for formgrader and the feedback: the course's
    templates first, then nbgrader's formgrade and feedback templates (left as they are:
    only the macro they call changes)."""
    import nbgrader

    nbgrader_templates = Path(nbgrader.__file__).parent / "server_extensions/formgrader/templates"
    return [str(TEMPLATES), str(nbgrader_templates)]


def available() -> bool:
    """Whether this machine has the MathJax the pages load (``apt-get install libjs-mathjax``)."""
    return (MATHJAX_DIR / "MathJax.js").is_file()


def _jupyter_server_extension_points() -> list[dict]:
    return [{"module": __name__}]


def _load_jupyter_server_extension(serverapp) -> None:
    """Serve :data:`MATHJAX_DIR` at ``<base_url>autograd-course/mathjax/`` (static files that
    need no login, as formgrader's own scripts)."""
    from jupyter_server.utils import url_path_join
    from tornado import web

    base_url = serverapp.web_app.settings["base_url"]
    serverapp.web_app.add_handlers(".*$", [(url_path_join(base_url, ROUTE, "(.*)"),
                                            web.StaticFileHandler, {"path": str(MATHJAX_DIR)})])
    if not available():
        serverapp.log.warning("MathJax is not installed at %s (apt-get install libjs-mathjax): "
                              "formgrader and the feedback show math as TeX", MATHJAX_DIR)
