"""The pages people see of a submission, in a real browser: no script of a student's runs.

A toy class with a student who put a payload in every place a submission reaches a page
(fixtures/payloads.py), an honest student who drew a plot and a computation graph, and a right
answer, is graded by `autograd-course grade`. A real JupyterLab serves the course, and headless
Chromium (Debian's, driven by Playwright) opens what an instructor opens: formgrader's view of
each submission, the feedback (served by the Jupyter server, and as a file), the class report.
No payload may run (no console line, request or page mark of one), no page may make a request
the student wrote, and the honest pictures must show. The same check on a page that nothing
made inert (the submission itself, as formgrader's template renders it) finds the payloads:
the check can fail. No page asks anything of another machine: MathJax comes from this one
(Debian's libjs-mathjax, served by the course's server extension, or read as files), and it
typesets the course's math.
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from nbgrader.api import Gradebook
from playwright.sync_api import TimeoutError as PlaywrightTimeout
from support.browser import CHROMIUM, chromium
from support.lab import TOKEN, running_lab
from support.pages import formgrader_html
from support.toy import make_class

from autograd_course.grading import mathjax
from autograd_course.testkit import classes

sys.path.insert(0, str(Path(__file__).parent / "fixtures"))
import payloads  # noqa: E402

pytestmark = pytest.mark.services

STUDENTS = ["attack_scripts", "honest_pictures", "right"]
#: The course's words with math, put in one graded notebook (the toy assignment has none).
MATH = r"The derivative of $x^2$ is $2x$."
#: What MathJax did on a page: its version, its Safe extension, the formulas it typeset.
MATHJAX_STATE = """() => ({
    version: window.MathJax && MathJax.version || null,
    safe: !!(window.MathJax && MathJax.Extension && MathJax.Extension.Safe),
    typeset: document.querySelectorAll(".MathJax_CHTML").length,
    errors: document.querySelectorAll(".MathJax_Error, .mjx-merror").length})"""


def add_math(base: Path, student: str) -> None:
    """Put the course's words with math into ``student``'s graded notebook and its feedback."""
    graded = base / "autograded" / student / "toy" / "toy.ipynb"
    nb = nbformat.read(graded, as_version=4)
    nb.cells.insert(0, nbformat.v4.new_markdown_cell(MATH))
    nbformat.write(nb, graded)
    done = classes.nbgrader(base, "generate_feedback", "toy", "--student", student, "--force")
    assert done.returncode == 0, done.stderr[-2000:]


def mathjax_state(browser, url: str, **visit) -> dict:
    """Open ``url``, wait until MathJax has typeset the page (20 s at most), and say what it
    did and every request the page made."""
    page = browser.context.new_page()
    requests = []
    page.on("request", lambda request: requests.append(request.url))
    page.goto(url, wait_until="load", **visit)
    with contextlib.suppress(PlaywrightTimeout):  # the state below says what is missing
        page.wait_for_function("() => window.MathJax && MathJax.Hub && MathJax.Hub.Startup"
                               " && document.querySelector('.MathJax_CHTML')", timeout=20_000)
    state = dict(page.evaluate(MATHJAX_STATE), requests=requests)
    page.close()
    return state


@pytest.fixture(scope="module")
def browser():
    """Headless Chromium, one for the module (Playwright's sync API runs one at a time)."""
    assert Path(CHROMIUM).exists() and shutil.which("chromium"), (
        "Debian's chromium is required: `make test` installs it when run as root")
    with chromium() as opened:
        yield opened


@pytest.fixture(scope="module")
def pages(tmp_path_factory, root, browser):
    """Every page of the graded class, as the browser saw it: {(page, student): Visit}."""
    base = make_class(tmp_path_factory.mktemp("browser") / "course", root, STUDENTS)
    graded = subprocess.run([sys.executable, "-m", "autograd_course", "grade", "toy", "--jobs",
                             "2"], cwd=base, capture_output=True, text=True)
    assert graded.returncode == 0, graded.stderr[-2000:]
    add_math(base, "right")
    with Gradebook(f"sqlite:///{base / 'gradebook.db'}") as gb:
        ids = {s: gb.find_submission_notebook("toy", "toy", s).id for s in STUDENTS}
    control = base.parent / "not-inert.html"  # the submission, with nothing made inert
    control.write_text(formgrader_html(base / "submitted" / "attack_scripts" / "toy"
                                       / "toy.ipynb"))
    seen = {}
    with running_lab(base, base.parent / "lab.log") as lab:
        browser.visit(f"{lab.base}/api/status?token={TOKEN}", settle_ms=0)  # the login
        for student in STUDENTS:
            seen["formgrader", student] = browser.visit(
                f"{lab.base}/formgrader/submissions/{ids[student]}/")
            seen["feedback", student] = browser.visit(
                f"{lab.base}/files/feedback/{student}/toy/toy.html", referer=f"{lab.base}/tree")
            seen["feedback file", student] = browser.visit(
                (base / "feedback" / student / "toy" / "toy.html").as_uri())
        seen["report", ""] = browser.visit((base / "reports" / "toy" / "report.html").as_uri())
        seen["not inert", ""] = browser.visit(control.as_uri())
        feedback = base / "feedback" / "right" / "toy" / "toy.html"
        seen["mathjax", "formgrader"] = mathjax_state(
            browser, f"{lab.base}/formgrader/submissions/{ids['right']}/")
        seen["mathjax", "feedback"] = mathjax_state(
            browser, f"{lab.base}/files/feedback/right/toy/toy.html", referer=f"{lab.base}/tree")
        seen["mathjax", "feedback file"] = mathjax_state(browser, feedback.as_uri())
        yield seen, lab.base


def test_no_script_of_the_student_runs_on_any_page(pages):
    seen, _ = pages
    for key, visit in seen.items():
        if key[0] not in ("not inert", "mathjax"):
            assert visit.ran(payloads.MARK) == [], key


def test_no_page_makes_a_request_the_student_wrote(pages):
    seen, server = pages
    for key, visit in seen.items():
        if key[0] == "not inert":
            continue
        requests = visit["requests"] if key[0] == "mathjax" else visit.requests
        for url in requests:
            # this machine only: the Jupyter server, files, inline data (no CDN, no student's)
            assert url.startswith((server + "/", "file://", "data:")), (key, url)
            assert payloads.STUDENT_HOST not in url and payloads.MARK not in url, (key, url)


def test_the_pages_are_the_real_ones(pages):
    seen, _ = pages
    # what the student wrote is shown, as text: their markdown, their messages
    for where in ("formgrader", "feedback"):
        assert f"{payloads.MARK} markdown" in seen[where, "attack_scripts"].text, where
    assert "raised ValueError" in seen["feedback", "attack_scripts"].text
    formgrader = seen["formgrader", "right"]
    assert any("/formgrader/static/js/formgrade.js" in url for url in formgrader.requests)
    assert formgrader.errors == []  # MathJax is there before formgrader's scripts use it


@pytest.mark.parametrize("where", ["formgrader", "feedback", "feedback file"])
def test_math_is_typeset_by_the_mathjax_of_this_machine(pages, where):
    seen, server = pages
    state = seen["mathjax", where]
    local = (f"{server}/{mathjax.ROUTE}/MathJax.js" if where != "feedback file"
             else (mathjax.MATHJAX_DIR / "MathJax.js").as_uri())
    assert any(url.startswith(local + "?config=TeX-AMS_CHTML-full,Safe")
               for url in state["requests"]), state["requests"]
    assert state["version"].startswith("2.7") and state["safe"], state
    assert state["typeset"] == 2 and state["errors"] == 0, state  # $x^2$ and $2x$


def test_honest_plots_and_graphs_show(pages):
    seen, _ = pages
    for where in ("formgrader", "feedback", "feedback file"):
        assert seen[where, "honest_pictures"].images == 2, where  # the plot and the graph


#: The lessons with computation graphs, and how many each draws.
GRAPHS = {"01_gradients": 1, "02_three_weights": 2, "07_engine": 4, "09_extending": 1}
#: JupyterLab's output area, in pixels.
OUTPUT_AREA = 968
#: The outputs of the notebook JupyterLab shows.
OUTPUTS = ".jp-NotebookPanel:not(.lm-mod-hidden) .jp-OutputArea-output"
#: An output image: loaded or not, its pixels and the width it is shown at.
IMAGE = """i => ({loaded: i.complete && i.naturalWidth > 0, pixels: i.naturalWidth,
                  shown: i.getBoundingClientRect().width, src: i.src.slice(0, 15)})"""


@pytest.fixture(scope="module")
def lessons_in_lab(tmp_path_factory, root, browser):
    """Each lesson with graphs as JupyterLab shows it when a learner first opens it (the
    notebook not trusted): {lesson: (its output images, its outputs' text)}."""
    course = tmp_path_factory.mktemp("lessons") / "course"
    shutil.copytree(root / "notebooks", course / "notebooks")
    shutil.copy2(root / "nbgrader_config.py", course / "nbgrader_config.py")
    shown = {}
    with running_lab(course, course.parent / "lab.log") as lab:
        browser.visit(f"{lab.base}/api/status?token={TOKEN}", settle_ms=0)  # the login
        for name in GRAPHS:
            page = browser.context.new_page()
            page.set_viewport_size({"width": 1400, "height": 900})
            # a workspace of its own: JupyterLab opens only this notebook
            page.goto(f"{lab.base}/lab/workspaces/{name}/tree/notebooks/{name}.ipynb?reset")
            page.wait_for_selector(OUTPUTS, timeout=90_000)
            with contextlib.suppress(PlaywrightTimeout):  # the test says what is missing
                page.wait_for_function(f"n => document.querySelectorAll('{OUTPUTS} img')"
                                       ".length >= n", arg=GRAPHS[name], timeout=20_000)
            images = []
            for image in page.locator(f"{OUTPUTS} img").all():
                image.scroll_into_view_if_needed()
                images.append(image.evaluate(IMAGE))
            text = "\n".join(page.locator(OUTPUTS).all_inner_texts())
            shown[name] = (images, text)
            page.close()
    return shown


@pytest.mark.parametrize("name", GRAPHS)
def test_a_lesson_just_opened_shows_its_graphs_as_pictures(lessons_in_lab, name):
    images, text = lessons_in_lab[name]
    assert len(images) == GRAPHS[name], images
    for image in images:
        assert image["loaded"] and image["src"].startswith("data:image/png"), image
        assert 0 < image["shown"] <= OUTPUT_AREA and image["pixels"] <= OUTPUT_AREA, image
    assert "Digraph" not in text and "graphviz" not in text


def test_the_check_finds_payloads_where_nothing_made_them_inert(pages):
    seen, _ = pages
    ran = seen["not inert", ""].ran(payloads.MARK)
    assert any("md_img_onerror" in sign for sign in ran), ran  # raw HTML in a markdown cell
    assert any("md_script" in sign for sign in ran), ran


# --- formgrader's own Autograde, manual grading and released feedback ------------------------

#: The class formgrader grades with its own Autograde button; each student's roster name.
NAMED = {"right": ("Ada", "Lovelace"), "attack_frames": ("Blaise", "Pascal")}
#: What the instructor types into formgrader's comment box of q1 for "right".
MANUAL_COMMENT = "Well argued: the gradient of a sum of squares, by hand."


def collected(base: Path, student: str) -> str:
    """Leave what `nbgrader collect` leaves beside a submission (its timestamp and secret),
    so that nbgrader's release_feedback can release it; return the secret."""
    folder = base / "submitted" / student / "toy"
    (folder / "timestamp.txt").write_text("2026-11-30 12:00:00.000000 UTC")
    secret = f"secret-of-{student}"
    (folder / "submission_secret.txt").write_text(secret)
    return secret


@pytest.fixture(scope="module")
def formgrader(tmp_path_factory, root, browser):
    """The class autograded by clicking formgrader's Autograde, a manual comment typed into
    formgrader, and the feedback generated and released with nbgrader's commands: what the
    pages showed."""
    from nbgrader.utils import notebook_hash

    base = make_class(tmp_path_factory.mktemp("formgrader") / "course", root, list(NAMED))
    (base / "roster.csv").write_text("id,first_name,last_name\n" + "".join(
        f"{s},{first},{last}\n" for s, (first, last) in NAMED.items()))
    secret = collected(base, "right")
    seen = {}
    with running_lab(base, base.parent / "lab.log") as lab:
        browser.visit(f"{lab.base}/api/status?token={TOKEN}", settle_ms=0)  # the login
        page = browser.context.new_page()
        page.goto(f"{lab.base}/formgrader/manage_submissions/toy", wait_until="load")
        page.wait_for_selector(".autograde a", timeout=60_000)
        seen["dialogs"] = []
        for student in NAMED:  # the button of each student's row (rows move as names come)
            page.locator("tr", has_text=student).locator(".autograde a").click()
            dialog = page.wait_for_selector(".modal.in", timeout=300_000)
            seen["dialogs"].append(dialog.inner_text())
            page.locator(".modal .btn").last.click()
            page.wait_for_selector(".modal", state="detached", timeout=30_000)
        page.close()
        seen["submissions"] = browser.visit(f"{lab.base}/formgrader/manage_submissions/toy")
        with Gradebook(f"sqlite:///{base / 'gradebook.db'}") as gb:
            ids = {s: gb.find_submission_notebook("toy", "toy", s).id for s in NAMED}
        page = browser.context.new_page()
        page.set_viewport_size({"width": 1024, "height": 900})
        page.goto(f"{lab.base}/formgrader/submissions/{ids['attack_frames']}/",
                  wait_until="load")
        page.wait_for_selector("textarea.comment", timeout=60_000)
        seen["flagged"] = page.evaluate("() => document.body.innerText")
        seen["cut off"] = page.evaluate(
            "() => [...document.querySelectorAll('.output_area pre')]"
            ".filter(p => p.scrollWidth > p.clientWidth + 1).map(p => p.innerText)")
        page.goto(f"{lab.base}/formgrader/submissions/{ids['right']}/", wait_until="load")
        page.wait_for_selector("#q1-comment[placeholder]", timeout=60_000)  # its model came
        box = page.locator("#q1-comment")
        box.fill(MANUAL_COMMENT)
        with page.expect_response(lambda r: "/formgrader/api/comment/" in r.url):
            box.dispatch_event("change")  # what leaving the box does: formgrader saves it
        page.close()
    # nbgrader's own commands, for the whole class: attack_frames was placed by hand (no
    # secret of its own), and its feedback is released all the same
    for args in (("generate_feedback", "toy", "--force"), ("release_feedback", "toy")):
        done = classes.nbgrader(base, *args)
        assert done.returncode == 0, done.stderr[-3000:]
    released = base / "exchange" / "autograd-course" / "feedback" / (
        notebook_hash(secret=secret, notebook_id="toy") + ".html")
    seen["released"] = browser.visit(released.as_uri())
    seen["all released"] = sorted(p.name for p in released.parent.glob("*.html"))
    return seen


def test_formgrader_autograde_shows_info_not_the_sandbox_command(formgrader):
    for dialog in formgrader["dialogs"]:
        assert "Successfully autograded" in dialog and "[INFO] Autograding" in dialog, dialog
        assert "[DEBUG]" not in dialog and "bwrap" not in dialog, dialog


def test_formgrader_lists_students_by_name_after_its_own_autograde(formgrader):
    shown = formgrader["submissions"].text
    for first, last in NAMED.values():
        assert f"{last}, {first}" in shown, shown
    assert "None, None" not in shown


def test_formgrader_shows_why_a_submission_needs_manual_grading(formgrader):
    shown = " ".join(formgrader["flagged"].split())
    assert "Needs a manual look: the code scan flagged q2, line 6: calls sys._getframe" in shown
    assert formgrader["cut off"] == []  # every verdict line fits its box


def test_released_feedback_shows_the_comment_entered_in_formgrader(formgrader):
    assert MANUAL_COMMENT in formgrader["released"].text


def test_release_feedback_releases_the_whole_class_however_each_submission_came(formgrader):
    # "right" came with a secret of its own (as through the exchange), attack_frames without
    assert len(formgrader["all released"]) == len(NAMED), formgrader["all released"]
