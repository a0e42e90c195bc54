"""The pages people see of a submission, in a real browser: no script of a student's runs.

A toy class with a student who put a payload in every place a submission reaches a page
(fixtures/payloads.py), an honest student who drew a plot and a computation graph, and a right
answer, is graded by `autograd-course grade`. A real JupyterLab serves the course, and headless
Chromium (Debian's, driven by Playwright) opens what an instructor opens: formgrader's view of
each submission, the feedback (served by the Jupyter server, and as a file), the class report.
No payload may run (no console line, request or page mark of one), no page may make a request
the student wrote, and the honest pictures must show. The same check on a page that nothing
made inert (the submission itself, as formgrader's template renders it) finds the payloads:
the check can fail.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from nbgrader.api import Gradebook
from support.browser import CHROMIUM, chromium
from support.lab import TOKEN, running_lab
from support.pages import formgrader_html
from support.toy import make_class

sys.path.insert(0, str(Path(__file__).parent / "fixtures"))
import payloads  # noqa: E402

pytestmark = pytest.mark.services

STUDENTS = ["attack_scripts", "honest_pictures", "right"]
MATHJAX = "https://cdnjs.cloudflare.com/ajax/libs/mathjax/"  # nbconvert's own, not a student's


@pytest.fixture(scope="module")
def pages(tmp_path_factory, root):
    """Every page of the graded class, as the browser saw it: {(page, student): Visit}."""
    assert Path(CHROMIUM).exists() and shutil.which("chromium"), (
        "Debian's chromium is required: `make test` installs it when run as root")
    base = make_class(tmp_path_factory.mktemp("browser") / "course", root, STUDENTS)
    graded = subprocess.run([sys.executable, "-m", "autograd_course", "grade", "toy", "--jobs",
                             "2"], cwd=base, capture_output=True, text=True)
    assert graded.returncode == 0, graded.stderr[-2000:]
    with Gradebook(f"sqlite:///{base / 'gradebook.db'}") as gb:
        ids = {s: gb.find_submission_notebook("toy", "toy", s).id for s in STUDENTS}
    control = base.parent / "not-inert.html"  # the submission, with nothing made inert
    control.write_text(formgrader_html(base / "submitted" / "attack_scripts" / "toy"
                                       / "toy.ipynb"))
    seen = {}
    with running_lab(base, base.parent / "lab.log") as lab, chromium() as browser:
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
        yield seen, lab.base


def test_no_script_of_the_student_runs_on_any_page(pages):
    seen, _ = pages
    for key, visit in seen.items():
        if key[0] != "not inert":
            assert visit.ran(payloads.MARK) == [], key


def test_no_page_makes_a_request_the_student_wrote(pages):
    seen, server = pages
    for key, visit in seen.items():
        if key[0] == "not inert":
            continue
        for url in visit.requests:
            assert url.startswith((server, "file://", "data:", MATHJAX)), (key, url)
            assert payloads.STUDENT_HOST not in url and payloads.MARK not in url, (key, url)


def test_the_pages_are_the_real_ones(pages):
    seen, _ = pages
    # what the student wrote is shown, as text: their markdown, their messages
    for where in ("formgrader", "feedback"):
        assert f"{payloads.MARK} markdown" in seen[where, "attack_scripts"].text, where
    assert "raised ValueError" in seen["feedback", "attack_scripts"].text
    formgrader = seen["formgrader", "right"]
    assert any("/formgrader/static/js/formgrade.js" in url for url in formgrader.requests)
    assert not formgrader.errors or all("MathJax" in e for e in formgrader.errors), (
        formgrader.errors)


def test_honest_plots_and_graphs_show(pages):
    seen, _ = pages
    for where in ("formgrader", "feedback", "feedback file"):
        assert seen[where, "honest_pictures"].images == 2, where  # the plot and the graph


def test_the_check_finds_payloads_where_nothing_made_them_inert(pages):
    seen, _ = pages
    ran = seen["not inert", ""].ran(payloads.MARK)
    assert any("md_img_onerror" in sign for sign in ran), ran  # raw HTML in a markdown cell
    assert any("md_script" in sign for sign in ran), ran
