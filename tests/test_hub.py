"""The course as a class runs it: a real JupyterHub, real accounts, the whole loop.

JupyterHub (pinned, with the proxy `make` installs from npm) runs on loopback with the course's
shared settings (deploy/jupyterhub_config.py, the file docs/deploy.md shows) and local-process
spawners: an instructor, whose account runs the course's formgrader as a Hub service at the
course root, and two students, each with their own JupyterLab server (support/hub.py says how
the accounts and the Hub are started). Through the Hub's HTTP API and each user's own server,
with the requests JupyterLab's Assignment List and formgrader make:

1. the instructor releases 01_gradients (`autograd-course release`: formgrader shows it released);
2. each student fetches it, edits it through the contents API, and submits it: ada a right
   answer, bob an incomplete one that carries a payload in every place a notebook can;
3. the instructor collects (formgrader) and runs `autograd-course grade --require-sandbox`;
4. the instructor releases the feedback (formgrader);
5. each student fetches their feedback.

Then what each party could reach: a student's token gets 403 from formgrader; a student's
kernel cannot read the course root, list the exchange's inbound folder, or guess another
student's submission there; the course's hidden-test check is not on a student's server; the
instructor can read every submission. Last, Chromium logs in to the Hub as the instructor and
opens formgrader's view of both graded submissions: they show, and no payload runs.

Only root can make accounts and run local spawners for them (CI runs as root): elsewhere the
module is skipped, with that reason.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path
from urllib.parse import quote

import nbformat
import pytest
from support import hub as hubs
from support.browser import chromium

from autograd_course.testkit import classes

sys.path.insert(0, str(Path(__file__).parent / "fixtures"))
import payloads  # noqa: E402

if os.geteuid() != 0:
    pytest.skip("the Hub test makes OS accounts and runs JupyterHub's local spawner for them: "
                "it needs root (CI runs as root)", allow_module_level=True)

pytestmark = pytest.mark.hub

COURSE = "autograd-course"
ASSIGNMENT = "01_gradients"
NOTEBOOK = f"{ASSIGNMENT}/{ASSIGNMENT}.ipynb"
FORMGRADER = f"services/{COURSE}/formgrader"
#: What a student's kernel tries, each attempt's outcome printed as JSON: "read" (it worked)
#: or the error's name.
PROBE = """
import json, os
def attempt(action):
    try:
        action()
        return "read"
    except OSError as error:
        return type(error).__name__
paths = {paths!r}
print(json.dumps({{
    "list the course root": attempt(lambda: os.listdir(paths["root"])),
    "read source/": attempt(lambda: open(paths["source"]).read(1)),
    "read the gradebook": attempt(lambda: open(paths["gradebook"], "rb").read(1)),
    "read the grader secret": attempt(lambda: open(paths["secret"], "rb").read(1)),
    "list the exchange's inbound": attempt(lambda: os.listdir(paths["inbound"])),
    "guess ada's submission": attempt(lambda: os.listdir(paths["guess"])),
    "list the exchange's feedback": attempt(lambda: os.listdir(paths["feedback"])),
}}))
"""


def form(assignment: str = ASSIGNMENT) -> dict:
    return {"course_id": COURSE, "assignment_id": assignment}


def edited(model: dict, answers: dict[str, str], hostile: bool) -> dict:
    """The fetched notebook ``model`` with the solution cells replaced by ``answers``; a
    hostile student's also carries the payloads (fixtures/payloads.py)."""
    nb = nbformat.from_dict(model)
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("solution") and meta.get("grade_id") in answers:
            cell.source = answers[meta["grade_id"]]
    if hostile:
        payloads.tamper(nb)
        nb.cells.append(nbformat.v4.new_code_cell(payloads.answer_cell()))
    return nb


def feedback_of(hub: hubs.Hub, user: str) -> dict[str, str]:
    """The feedback pages in ``user``'s fetched assignment: {path: text}."""
    token = hub.token(user)
    pages, folders = {}, [f"{ASSIGNMENT}/feedback"]
    while folders:
        _, listing = hub.request("GET", f"user/{user}/api/contents/{quote(folders.pop())}",
                                 token, expect=200)
        for entry in listing["content"]:
            if entry["type"] == "directory":
                folders.append(entry["path"])
            elif entry["name"].endswith(".html"):
                _, page = hub.request("GET", f"user/{user}/api/contents/{quote(entry['path'])}"
                                      "?type=file&format=text&content=1", token, expect=200)
                pages[entry["path"]] = page["content"]
    return pages


def student_turn(hub: hubs.Hub, user: str, answers: dict[str, str], hostile: bool) -> dict:
    """Fetch, edit and submit as JupyterLab's Assignment List does; what the server said."""
    token = hub.token(user)
    hub.spawn(user)
    _, listed = hub.request("GET", f"user/{user}/assignments?course_id={COURSE}", token,
                            expect=200)
    _, fetched = hub.request("POST", f"user/{user}/assignments/fetch", token, form=form(),
                             expect=200)
    _, model = hub.request("GET", f"user/{user}/api/contents/{NOTEBOOK}?content=1", token,
                           expect=200)
    hub.request("PUT", f"user/{user}/api/contents/{NOTEBOOK}", token, expect=200, json_body={
        "type": "notebook", "format": "json",
        "content": edited(model["content"], answers, hostile)})
    _, submitted = hub.request("POST", f"user/{user}/assignments/submit", token, form=form(),
                               expect=200)
    return {"listed": listed, "fetched": fetched, "submitted": submitted}


def log_in(browser, hub: hubs.Hub, user: str) -> None:
    """Log in to the Hub in ``browser`` as ``user``, through its login page."""
    page = browser.context.new_page()
    page.goto(f"{hub.base}/hub/login")
    page.fill("input[name=username]", user)
    page.fill("input[name=password]", hubs.PASSWORD)
    page.click("[type=submit]")
    page.wait_for_url("**/hub/**", timeout=30_000)
    page.close()


@pytest.fixture(scope="module")
def loop(tmp_path_factory, root):
    """The whole loop, run once; what every party saw, for the tests below to check."""
    hubs.Accounts.sweep()
    seen: dict = {}
    accounts = hubs.Accounts()
    shared = Path(tempfile.mkdtemp(prefix="autograd-course-hub-"))  # every account's to enter
    try:
        grace, ada, bob = (accounts.add(role) for role in ("grace", "ada", "bob"))
        os.chmod(shared, 0o755)
        exchange = shared / "exchange"
        exchange.mkdir(mode=0o1777)
        os.chmod(exchange, 0o1777)
        course = hubs.home(grace) / COURSE
        (course / "source").mkdir(parents=True)
        shutil.copy2(root / "nbgrader_config.py", course)
        shutil.copytree(root / "source" / ASSIGNMENT, course / "source" / ASSIGNMENT)
        hubs.give(course, grace)
        env = {"AUTOGRAD_COURSE_INSTRUCTORS": grace, "AUTOGRAD_COURSE_GRADER": grace,
               "AUTOGRAD_COURSE_ROOT": str(course), "AUTOGRAD_COURSE_EXCHANGE": str(exchange),
               "AUTOGRAD_COURSE_SERVICE_PORT": str(hubs.free_port())}
        reference = classes.reference_answers(root / "source" / ASSIGNMENT / f"{ASSIGNMENT}"
                                              ".ipynb")
        incomplete = dict(list(reference.items())[1:])  # bob leaves the first answer blank
        seen.update(grace=grace, ada=ada, bob=bob, course=course, exchange=exchange)
        work = tmp_path_factory.mktemp("hub")
        with hubs.running_hub(work, [grace, ada, bob], env) as hub:
            seen["hub"] = hub
            python = [sys.executable, "-m", "autograd_course"]
            seen["release"] = hub.run_as(grace, [*python, "release", ASSIGNMENT], course,
                                         env=env)  # the Hub's exchange
            assert seen["release"].returncode == 0, seen["release"].stderr[-3000:]
            teacher = hub.token(grace)
            seen["formgrader's assignment"] = hub.request(
                "GET", f"{FORMGRADER}/api/assignment/{ASSIGNMENT}", teacher)
            seen[ada] = student_turn(hub, ada, reference, hostile=False)
            seen[bob] = student_turn(hub, bob, incomplete, hostile=True)
            seen["collect"] = hub.request(
                "POST", f"{FORMGRADER}/api/assignment/{ASSIGNMENT}/collect", teacher)
            seen["grade"] = hub.run_as(grace, [*python, "grade", ASSIGNMENT, "--jobs", "2",
                                               "--require-sandbox"], course)
            seen["release_feedback"] = hub.request(
                "POST", f"{FORMGRADER}/api/assignment/{ASSIGNMENT}/release_feedback", teacher)
            for student in (ada, bob):
                seen["fetch_feedback", student] = hub.request(
                    "POST", f"user/{student}/assignments/fetch_feedback",
                    hub.token(student), form=form())
                seen["feedback", student] = feedback_of(hub, student)
            seen["probe"] = probe(hub, seen)
            seen["formgrader as", bob] = hub.request(
                "GET", f"{FORMGRADER}/api/assignments", hub.token(bob))
            seen["formgrader page as", bob] = hub.request("GET", f"{FORMGRADER}/",
                                                          hub.token(bob))
            seen["ada's server as", bob] = hub.request(
                "GET", f"user/{ada}/api/contents", hub.token(bob))
            seen["check on the Hub"] = hub.execute(bob, NOTEBOOK, (
                "from autograd_course.lab.selfstudy import check_saved_notebook\n"
                "check_saved_notebook(\"01_gradients\")"))
            seen["instructor reads"] = hub.run_as(grace, [sys.executable, "-c", (
                "import os, sys\n"
                "for top in sys.argv[1:]:\n"
                "    for folder, _, files in os.walk(top):\n"
                "        for name in files:\n"
                "            open(os.path.join(folder, name), 'rb').read()\n"
                "            print(os.path.relpath(os.path.join(folder, name), top))\n"),
                str(exchange / COURSE / "inbound"), str(exchange / COURSE / "feedback")], course)
            _, notebooks = hub.request(
                "GET", f"{FORMGRADER}/api/submitted_notebooks/{ASSIGNMENT}/{ASSIGNMENT}",
                teacher, expect=200)
            ids = {entry["student"]: entry["id"] for entry in notebooks}
            with chromium() as browser:
                log_in(browser, hub, grace)
                for student in (ada, bob):
                    seen["formgrader page", student] = browser.visit(
                        f"{hub.base}/{FORMGRADER}/submissions/{ids[student]}/")
        yield seen
    finally:
        accounts.remove()
        shutil.rmtree(shared, ignore_errors=True)


def probe(hub: hubs.Hub, seen: dict) -> dict:
    """What bob's kernel on bob's server could reach of the course and the exchange."""
    course, exchange = seen["course"], seen["exchange"] / COURSE
    ada_submission = next(p.name for p in (exchange / "inbound").iterdir()
                          if p.name.startswith(f"{seen['ada']}+"))
    paths = {"root": str(course), "source": str(course / "source" / NOTEBOOK),
             "gradebook": str(course / "gradebook.db"), "secret": str(course / ".grader-secret"),
             "inbound": str(exchange / "inbound"),
             "guess": str(exchange / "inbound" / ada_submission.rsplit("+", 1)[0]),
             "feedback": str(exchange / "feedback")}
    printed = hub.execute(seen["bob"], NOTEBOOK, PROBE.format(paths=paths))
    return {"paths": paths, "outcomes": json.loads(printed.strip().splitlines()[-1]),
            "submission": ada_submission}


def test_a_run_removes_its_accounts_and_sweeps_those_a_killed_run_left():
    left = hubs.Accounts()
    stale = left.add("stale")  # as a run killed before its clean-up leaves it
    assert hubs.home(stale).is_dir()
    assert stale in hubs.Accounts.sweep()
    with pytest.raises(KeyError):
        hubs.pwd.getpwnam(stale)
    run = hubs.Accounts()
    made = run.add("own")
    folder = hubs.home(made)
    run.remove()
    assert not folder.exists() and made not in {e.pw_name for e in hubs.pwd.getpwall()}


def test_the_instructor_releases_through_the_course_and_formgrader(loop):
    assert loop["release"].returncode == 0, loop["release"].stderr[-3000:]
    status, answer = loop["formgrader's assignment"]  # released by the course's command
    assert status == 200 and answer["status"] == "released", answer
    assert (loop["exchange"] / COURSE / "outbound" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb").is_file()


@pytest.mark.parametrize("who", ["ada", "bob"])
def test_each_student_fetches_edits_and_submits_through_their_own_server(loop, who):
    student = loop[who]
    turn = loop[student]
    assert turn["listed"]["success"], turn["listed"]
    assert [a["assignment_id"] for a in turn["listed"]["value"]] == [ASSIGNMENT]
    assert turn["fetched"]["success"] and turn["submitted"]["success"], turn
    fetched = hubs.home(student) / NOTEBOOK
    assert fetched.stat().st_uid == hubs.pwd.getpwnam(student).pw_uid  # fetched as the student
    inbound = [p.name for p in (loop["exchange"] / COURSE / "inbound").iterdir()]
    assert [name for name in inbound if name.startswith(f"{student}+{ASSIGNMENT}+")], inbound


def test_the_instructor_collects_and_grades_in_the_sandbox(loop):
    status, answer = loop["collect"]
    assert status == 200 and answer["success"], answer
    grade = loop["grade"]
    assert grade.returncode == 0, (grade.stdout + grade.stderr)[-3000:]
    assert "NOT SANDBOXED" not in grade.stdout
    course = loop["course"]
    full = classes.full_marks(course / "source" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb")
    scores = classes.gradebook_scores(course, ASSIGNMENT)
    assert scores[loop["ada"]] == full, scores
    assert 0 < scores[loop["bob"]] < full, scores


def test_each_student_fetches_only_their_own_feedback(loop):
    status, answer = loop["release_feedback"]
    assert status == 200 and answer["success"], answer
    scores = classes.gradebook_scores(loop["course"], ASSIGNMENT)
    for student in (loop["ada"], loop["bob"]):
        status, answer = loop["fetch_feedback", student]
        assert status == 200 and answer["success"], answer
        pages = loop["feedback", student]
        assert len(pages) == 1, pages.keys()  # theirs alone, of the two released
        (page,) = pages.values()
        assert re.search(rf"Score:\s*{scores[student]:g}", page), page[:3000]
        other = loop["bob"] if student == loop["ada"] else loop["ada"]
        assert other not in page


def test_a_students_token_is_refused_by_formgrader_and_by_another_students_server(loop):
    bob = loop["bob"]
    assert loop["formgrader as", bob][0] == 403, loop["formgrader as", bob]
    assert loop["formgrader page as", bob][0] == 403
    assert loop["ada's server as", bob][0] == 403


def test_a_students_kernel_reaches_neither_the_course_root_nor_others_submissions(loop):
    outcomes = loop["probe"]["outcomes"]
    assert outcomes == {
        "list the course root": "PermissionError",
        "read source/": "PermissionError",
        "read the gradebook": "PermissionError",
        "read the grader secret": "PermissionError",
        "list the exchange's inbound": "PermissionError",
        "guess ada's submission": "FileNotFoundError",  # the name ends in a random string
        "list the exchange's feedback": "PermissionError",
    }, outcomes
    # nbgrader names a submission STUDENT+ASSIGNMENT+TIMESTAMP+RANDOM: 9 random bytes, 72
    # bits to guess. (Its files are world-readable: a student who knew the name could read it.)
    assert len(loop["probe"]["submission"].rsplit("+", 1)[1]) >= 12, loop["probe"]


def test_the_hidden_test_check_is_not_on_a_students_server(loop):
    said = loop["check on the Hub"]
    assert said.startswith("The hidden tests are not on this server"), said
    assert "PASS" not in said and "FAIL" not in said


def test_the_instructor_reads_every_submission_and_feedback(loop):
    reads = loop["instructor reads"]
    assert reads.returncode == 0, reads.stderr[-2000:]
    read = reads.stdout.splitlines()
    for student in (loop["ada"], loop["bob"]):
        assert [p for p in read if p.startswith(f"{student}+") and p.endswith(".ipynb")], read
    assert len([p for p in read if p.endswith(".html")]) == 2, read


def test_formgrader_behind_the_hub_shows_each_graded_submission_and_runs_no_payload(loop):
    for student in (loop["ada"], loop["bob"]):
        visit = loop["formgrader page", student]
        assert visit.ran(payloads.MARK) == [], visit.ran(payloads.MARK)
        assert not [url for url in visit.requests if payloads.STUDENT_HOST in url]
        assert any("/formgrader/static/js/formgrade.js" in url for url in visit.requests)
        assert visit.errors == [], visit.errors
        # the graded notebook, anonymized as formgrader shows it by default
        assert "Submission 1 / 2" in visit.text or "Submission 2 / 2" in visit.text
        assert "Question 1 (2 points)" in visit.text, visit.text[:2000]
    # bob's payloads reached the page, as text
    assert payloads.MARK in loop["formgrader page", loop["bob"]].text
