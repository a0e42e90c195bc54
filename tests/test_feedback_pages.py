"""The pages people see of a graded notebook (the feedback, formgrader's view), rendered as
nbgrader renders them with the course's nbgrader_config.py: diagnoses shown as text, word for
word, and MathJax loaded from this machine, never from a CDN. (tests/test_browser.py opens the
real pages in a browser.)"""

from __future__ import annotations

import copy
import logging
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import jinja2
import nbformat
import pytest
from nbconvert.exporters import HTMLExporter
from nbgrader.api import Gradebook
from nbgrader.converters import GenerateFeedback
from nbgrader.coursedir import CourseDirectory
from support.pages import formgrader_html, live_marks
from traitlets.config import Config
from traitlets.config.loader import PyFileConfigLoader

from autograd_course.grading import mathjax, pipeline
from autograd_course.grading.preprocessors import HideHiddenTests, ShowCommentsAsText
from autograd_course.grading.preprocessors.feedback import shown_comment
from autograd_course.testkit import classes

COURSE = Path(__file__).resolve().parent.parent
#: A diagnosis as a check writes it: Markdown would make ``__name__`` a bold "name".
DIAGNOSIS = ("CheckError: grad_fn name should be a string (or None), but it is an int: return "
             "the class name, type(t.grad_fn).__name__.")
MATH = r"The derivative of $x^2$ is $2x$."


def course_config() -> Config:
    """The course's nbgrader_config.py, as every nbgrader command loads it."""
    return PyFileConfigLoader("nbgrader_config.py", path=str(COURSE)).load_config()


def graded_notebook() -> nbformat.NotebookNode:
    """An autograded notebook: the course's words with math, an answer whose comment is the
    diagnosis (nbgrader's GetGrades puts it there), and a failed test cell that printed it."""
    def meta(grade_id, **flags):
        return {"nbgrader": {"grade_id": grade_id, "schema_version": 3, "locked": False,
                             "solution": False, "grade": False, **flags}}

    answer = nbformat.v4.new_code_cell("def name_of(t):\n    return 1",
                                       metadata=meta("q2", solution=True, comment=DIAGNOSIS))
    test = nbformat.v4.new_code_cell("check_grad_fn_name(name_of(t), t)", metadata=meta(
        "q2_test", grade=True, locked=True, points=1, score=0))
    test.outputs = [
        nbformat.v4.new_output("stream", name="stdout", text=DIAGNOSIS + "\n"),
        nbformat.v4.new_output("error", ename="CheckError", evalue=DIAGNOSIS.split(": ", 1)[1],
                               traceback=[f"\x1b[0;31m{DIAGNOSIS}\x1b[0m"]),
    ]
    return nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(MATH), answer, test])


def feedback_html(nb) -> str:
    """The feedback page: nbgrader's GenerateFeedback exporter, and the course's feedback
    preprocessors that run after GetGrades (which needs a gradebook)."""
    after = pipeline.feedback_preprocessors()
    assert [p.rsplit(".", 1)[-1] for p in after[1:3]] == ["HideHiddenTests", "ShowCommentsAsText"]
    resources = {"nbgrader": {"notebook": "toy", "score": 0, "max_score": 1, "late_penalty": 0}}
    for preprocessor in (HideHiddenTests(), ShowCommentsAsText()):
        nb, resources = preprocessor.preprocess(nb, resources)
    config = course_config()
    converter = GenerateFeedback(coursedir=CourseDirectory(config=config), config=config)
    exporter = converter.exporter_class(config=converter.config)  # the course's, made per page
    assert isinstance(exporter, HTMLExporter)
    return exporter.from_notebook_node(nb, resources)[0]


def formgrader_view(nb) -> str:
    """Formgrader's view of a submission, with the course's config."""
    return formgrader_html(nb, course_config())


PAGES = {"feedback": feedback_html, "formgrader": formgrader_view}


@pytest.mark.parametrize("page", PAGES)
def test_a_diagnosis_is_shown_word_for_word(page):
    html = PAGES[page](graded_notebook())
    assert "<strong>name</strong>" not in html and "<em>" not in html
    # the comment (feedback only: formgrader shows it in a text box), the print, the error
    shown = html.count("type(t.grad_fn).__name__.")
    assert shown == (3 if page == "feedback" else 2), html


@pytest.mark.parametrize("page", PAGES)
def test_pages_load_mathjax_from_this_machine_never_a_cdn(page):
    html = PAGES[page](graded_notebook())
    assert "cdnjs" not in html and "mathjax@" not in html.lower()
    remote = [src for src in re.findall(r"""src=["']?([^"' >]+)""", html)
              if re.match(r"(https?:)?//", src)]
    assert remote == []
    # the course's macro, with the paths the server extension and Debian use
    assert f'"file://{mathjax.MATHJAX_DIR}"' in html and f'"{mathjax.ROUTE}"' in html
    assert "/MathJax.js?config=TeX-AMS_CHTML-full,Safe" in html  # Safe: student content
    assert html.count("window.MathJax = {") == 1
    assert MATH in html  # left for MathJax to typeset


def test_the_mathjax_the_pages_load_is_installed():
    assert mathjax.available(), "MathJax is missing: apt-get install libjs-mathjax"
    for part in ("config/TeX-AMS_CHTML-full.js", "config/Safe.js", "extensions/Safe.js",
                 "jax/output/CommonHTML/fonts/TeX/fontdata.js"):
        assert (mathjax.MATHJAX_DIR / part).is_file(), part
    version = re.search(r'MathJax\.version\s*=\s*"([\d.]+)"',
                        (mathjax.MATHJAX_DIR / "MathJax.js").read_text())
    assert version and version.group(1).startswith("2.7")


def test_the_jupyter_server_serves_the_mathjax():
    # formgrader, and the feedback under /files/, load MathJax from the Jupyter server
    from jupyter_core.paths import jupyter_config_path
    from jupyter_server.extension.config import ExtensionConfigManager

    enabled = ExtensionConfigManager(read_config_path=jupyter_config_path())
    assert enabled.get_jpserver_extensions().get("autograd_course.grading.mathjax"), (
        "enable the course's server extension: a file etc/jupyter/jupyter_server_config.d/"
        'autograd_course.json in the environment holding {"ServerApp": {"jpserver_extensions":'
        ' {"autograd_course.grading.mathjax": true}}}')
    served = []

    class WebApp:
        settings = {"base_url": "/base/"}

        def add_handlers(self, host, handlers):
            served.extend(handlers)

    class ServerApp:
        web_app, log = WebApp(), logging.getLogger(__name__)

    mathjax._load_jupyter_server_extension(ServerApp())
    (pattern, _, options), = served
    assert pattern == "/base/autograd-course/mathjax/(.*)"
    assert options == {"path": str(mathjax.MATHJAX_DIR)}


def test_a_feedback_page_compiles_no_template_once_the_process_has(monkeypatch):
    nb = graded_notebook()
    first = feedback_html(copy.deepcopy(nb))  # nbgrader makes a new exporter for each page
    compiled = []
    real = jinja2.Environment.compile
    monkeypatch.setattr(jinja2.Environment, "compile",
                        lambda self, *a, **k: compiled.append(a) or real(self, *a, **k))
    again = feedback_html(copy.deepcopy(nb))
    assert compiled == []
    uuids = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
    assert uuids.sub("", again) == uuids.sub("", first)


# -- the instructor's comment and the automatic diagnostic, both -----------------------------
#: What an instructor types in formgrader's comment box: Markdown, markup and an entity, which
#: the feedback shows word for word.
MANUAL = "See **lecture 3** <img src=x onerror=alert(1)> & `retain_grad`: q1 < q2."
BLANK_FOR = "q2_leaf_and_grad_fn"  # a box the instructor typed into, then emptied


class _Footers(HTMLParser):
    """The text of each comment of a feedback page (nbgrader's ``panel-footer`` divs)."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.footers, self.depth = [], 0

    def handle_starttag(self, tag, attrs):
        if tag == "div" and self.depth:
            self.depth += 1
        elif tag == "div" and "panel-footer" in (dict(attrs).get("class") or ""):
            self.depth = 1
            self.footers.append("")

    def handle_endtag(self, tag):
        if tag == "div" and self.depth:
            self.depth -= 1

    def handle_data(self, data):
        if self.depth:
            self.footers[-1] += data


def footers(html: str) -> list[str]:
    parser = _Footers()
    parser.feed(html)
    return parser.footers


@pytest.fixture(scope="module")
def commented(tmp_path_factory, root):
    """A submission graded by `autograd-course grade`, an instructor's comment set on its first
    answer as formgrader's API sets it (``manual_comment``), another box emptied, and the
    feedback generated again by plain nbgrader: the course, and the automatic comments."""
    course = classes.make_course(tmp_path_factory.mktemp("comments") / "course", root,
                                 ["01_gradients"])
    classes.submit_class(course, "01_gradients", [("blaise", "mistakes")], seed=3)
    done = subprocess.run([sys.executable, "-m", "autograd_course", "grade", "01_gradients",
                           "--jobs", "1"], cwd=course, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    auto = {}
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        for comment in gb.find_submission_notebook("01_gradients", "01_gradients",
                                                   "blaise").comments:
            auto[comment.name] = comment.auto_comment
            if comment.name == "q1_partials":
                comment.manual_comment = MANUAL
            elif comment.name == BLANK_FOR:
                comment.manual_comment = ""
        gb.db.commit()
    assert auto["q1_partials"] and auto[BLANK_FOR], auto  # a wrong answer: diagnosed
    again = classes.nbgrader(course, "generate_feedback", "01_gradients", "--force")
    assert again.returncode == 0, again.stderr[-3000:]
    return course, auto


@pytest.mark.class_grading
def test_the_feedback_shows_the_instructors_comment_and_the_diagnostic(commented):
    course, auto = commented
    html = (course / "feedback" / "blaise" / "01_gradients" / "01_gradients.html").read_text()
    (both,) = [text for text in footers(html) if MANUAL in text]
    assert both.count(MANUAL) == 1 and both.count(auto["q1_partials"]) == 1, both
    assert both.index("Instructor's comment:") < both.index(MANUAL) < both.index(
        "Automatic diagnostic:") < both.index(auto["q1_partials"])
    assert html.count(MANUAL.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
                      ) == 1  # escaped, once: in the page only as that text
    assert "<img" not in html and "<strong>lecture" not in html
    assert live_marks(html, "alert(1)") == []
    # the emptied box shows the diagnostic alone, as before anyone typed there
    (alone,) = [text for text in footers(html) if auto[BLANK_FOR] in text]
    assert "Instructor's comment:" not in alone and alone.count(auto[BLANK_FOR]) == 1
    # each other answer shows its diagnostic once, unlabelled
    shown = [text for text in footers(html) if "Automatic diagnostic:" in text]
    assert shown == [both]
    for name, text in auto.items():
        assert sum(footer.count(text) for footer in footers(html)) == 1, name


def test_comments_are_shown_as_nbgrader_would_when_one_is_missing():
    assert shown_comment("CheckError: x", None) == shown_comment(None, "CheckError: x") == (
        "```text\nCheckError: x\n```")
    assert shown_comment("a", "a ") == "```text\na \n```"  # the same twice: once
    assert shown_comment(None, " ") == shown_comment(None, None) == ""


# -- the page, written once: no tree of it, highlighted cells kept ---------------------------
#: The smallest PNG: a student's plot, as an output the page shows.
PNG = ("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5"
       "ErkJggg==")


def with_a_plot(nb) -> nbformat.NotebookNode:
    nb = copy.deepcopy(nb)
    nb.cells[1].outputs = [nbformat.v4.new_output("display_data", data={"image/png": PNG})]
    nb.cells[1].cell_type, nb.cells[1].execution_count = "code", 1
    return nb


def test_a_feedback_page_is_the_page_nbconvert_writes_with_its_images_described():
    from bs4 import BeautifulSoup

    from autograd_course.grading.preprocessors.exporter import NO_DESCRIPTION, FeedbackExporter

    nb = with_a_plot(graded_notebook())
    ours = feedback_html(copy.deepcopy(nb))
    real = FeedbackExporter.from_notebook_node
    try:  # nbconvert's own HTMLExporter, BeautifulSoup's tree and all
        FeedbackExporter.from_notebook_node = HTMLExporter.from_notebook_node
        theirs = feedback_html(copy.deepcopy(nb))
    finally:
        FeedbackExporter.from_notebook_node = real
    assert f'<img alt="{NO_DESCRIPTION}" src="data:image/png;base64,{PNG}"' in ours
    uuids = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
    assert uuids.sub("", str(BeautifulSoup(ours, "html.parser"))) == uuids.sub("", theirs)


def test_a_locked_cell_on_many_pages_is_highlighted_once_and_a_students_each_time(
        monkeypatch):
    import nbconvert.filters.highlight as highlight

    nb = graded_notebook()
    nb.cells[2].source += "  # a cell no page had before"  # the course's test cell: locked
    feedback_html(copy.deepcopy(nb))
    highlighted = []
    real = highlight._pygments_highlight
    monkeypatch.setattr(highlight, "_pygments_highlight",
                        lambda source, *a, **k: highlighted.append(source) or real(source, *a, **k))
    feedback_html(copy.deepcopy(nb))
    nb.cells[1].source += "\n# another student's answer"
    feedback_html(copy.deepcopy(nb))
    answers = [graded_notebook().cells[1].source, nb.cells[1].source]
    assert highlighted == answers  # the student's answer, each page; the test cell, never
