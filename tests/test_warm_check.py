"""The warm check (warmcheck.py, grading/checkserver.py): the same report as the cold one.

A service is started for the course as the Jupyter server extension starts it
(:class:`warmcheck.Service`), with a runtime folder of the test's own. ``autograd-course
check`` of several notebooks is then answered by it, and must print, byte for byte, what
``check --cold`` prints of the same notebooks; a service whose code went stale answers
nothing, and the check runs cold. (The hostile class is checked warm in test_grading.py.)
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time

import nbformat
import psutil
import pytest
from support.commands import ASSIGNMENT, filled_release, reference_of, run

from autograd_course import warmcheck
from autograd_course.grading import checkserver, selfcheck
from autograd_course.testkit import WRONG_ANSWERS

#: Seconds a service may take to listen (it imports nothing before it does).
LISTEN_SECONDS = 60


@pytest.fixture(scope="module")
def runtime(tmp_path_factory):
    """A runtime folder of this module's own (mode 0700), in the environment of the service
    and of the checks."""
    folder = tmp_path_factory.mktemp("runtime")
    folder.chmod(0o700)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("JUPYTER_RUNTIME_DIR", str(folder))
        patch.delenv(warmcheck.SWITCH, raising=False)
        yield folder


@pytest.fixture(scope="module")
def service(root, runtime):
    started = warmcheck.Service(root)
    assert started.start() and started.listening(LISTEN_SECONDS), (
        started.address.with_suffix(".log").read_text())
    yield started
    started.stop()
    assert not started.address.exists(), "a service that ends removes its socket"


#: An answer that keeps its check busy far longer than any test waits.
SLOW = "import time\ntime.sleep(3000)"


@pytest.fixture(scope="module")
def notebooks(root, tmp_path_factory):
    """A blank notebook, the reference answers, and a wrong answer, each in a folder of its
    own."""
    folder = tmp_path_factory.mktemp("notebooks")
    wrong = next(iter(WRONG_ANSWERS[(ASSIGNMENT, "q2_leaf_and_grad_fn")]))
    paths = []
    for name, answers in (("blank", {}), ("right", reference_of(root)),
                          ("wrong", reference_of(root) | {"q2_leaf_and_grad_fn": wrong.code}),
                          ("slow", {"q1_partials": SLOW, "q2_leaf_and_grad_fn": SLOW})):
        (folder / name).mkdir()
        paths.append(folder / name / f"{ASSIGNMENT}.ipynb")
        nbformat.write(filled_release(root, answers), paths[-1])
    return paths


def test_the_warm_check_prints_what_the_cold_check_prints(service, notebooks, root):
    names = [str(path) for path in notebooks[:3]]
    env = {"JUPYTERHUB_USER": "", "LOGNAME": "learner"}
    warm = run("--course", str(root), "check", *names, *names, env=env)
    assert service.answered() == 2 * len(names), "the service answered every check"
    cold = run("--course", str(root), "check", "--cold", *names, *names, env=env)
    assert service.answered() == 2 * len(names), "--cold asks no service"
    assert (warm.returncode, warm.stdout) == (cold.returncode, cold.stdout), warm.stderr
    assert "total: " in warm.stdout
    assert [line for line in warm.stderr.splitlines() if line.startswith("autograd-course")] == [
        line for line in cold.stderr.splitlines() if line.startswith("autograd-course")]


def test_the_service_and_the_command_say_the_same_per_notebook(service, notebooks, root):
    env = dict(os.environ, JUPYTERHUB_USER="", LOGNAME="learner")
    answer = warmcheck.ask(root, notebooks[1], "ada", env)
    assert answer is not None and answer["error"] is None
    cold = run("--course", str(root), "check", "--cold", "--student", "ada", str(notebooks[1]))
    assert cold.stdout.splitlines()[1:] == answer["lines"]


def test_a_service_whose_code_went_stale_answers_nothing_and_ends(root, notebooks, tmp_path,
                                                                   monkeypatch):
    # a service whose code_now() differs at its first check, as after a `git pull`
    (tmp_path / "runtime").mkdir(mode=0o700)
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "runtime"))
    stale = warmcheck.Service(root)
    script = ("import itertools, sys; from autograd_course.grading import checkserver as c; "
              "n = itertools.count(); c.code_now = lambda: next(n); c.main(sys.argv[1:])")
    stale.command = lambda: [sys.executable, "-P", "-c", script, str(root), str(stale.address)]
    assert stale.start()
    try:
        assert stale.listening(LISTEN_SECONDS)
        assert warmcheck.ask(root, notebooks[0]) is None
        assert stale.process.wait(timeout=60) == 0
        assert not stale.address.exists()
        checked = run("--course", str(root), "check", str(notebooks[0]))
        assert checked.returncode == 0 and "total: 0/" in checked.stdout, checked.stderr
    finally:
        stale.stop()


def test_no_service_no_socket_no_answer(root, runtime, tmp_path):
    assert not warmcheck.reachable(tmp_path)
    assert warmcheck.ask(tmp_path, tmp_path / "x.ipynb") is None


def test_a_runtime_folder_others_can_enter_has_no_warm_check(tmp_path, monkeypatch):
    tmp_path.chmod(0o755)
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path))
    assert warmcheck.address(tmp_path) is None


def test_switched_off_no_service_is_asked(service, root, notebooks):
    assert warmcheck.ask(root, notebooks[0], environ={warmcheck.SWITCH: "0"}) is None


#: A Python another user can run (this environment's may live in root's home).
SYSTEM_PYTHON = "/usr/bin/python3"


@pytest.mark.skipif(os.geteuid() != 0 or not os.access(SYSTEM_PYTHON, os.X_OK),
                    reason="needs root, to act as another user, and the system's Python")
def test_another_user_cannot_reach_the_service(service):
    probe = ("import socket, sys; s = socket.socket(socket.AF_UNIX); "
             "s.connect(sys.argv[1]); print('connected')")
    done = subprocess.run([SYSTEM_PYTHON, "-c", probe, str(service.address)], user=65534,
                          capture_output=True, text=True)
    assert done.returncode != 0 and "connected" not in done.stdout
    assert "PermissionError" in done.stderr


def test_a_request_over_its_bound_or_of_another_shape_is_closed_unanswered(service):
    for message in (b"x" * (warmcheck.REQUEST_LIMIT + 10) + b"\n", b"[1, 2]\n",
                    b'{"notebook": "relative.ipynb", "student": null, "environ": {}}\n'):
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.settimeout(30)
            conn.connect(str(service.address))
            try:
                conn.sendall(message)
                assert conn.recv(100) == b""
            except (BrokenPipeError, ConnectionResetError):
                pass  # closed while the oversized request was still being sent
    assert service.process.poll() is None, "the service goes on answering"


def test_the_code_a_check_runs_is_fingerprinted():
    first = checkserver.code_now()
    assert first == checkserver.code_now()
    assert any(name == "grading/checkserver.py" for name, _, _ in first[0])


def test_a_check_whose_asker_hangs_up_is_stopped_and_the_next_is_answered(service, root,
                                                                        notebooks):
    # the slow check's asker gives up after 5 s (a learner interrupts the cell); were its check
    # not stopped, the next would wait for its two sleeping cells (60 s each, at most the
    # notebook's 110 s): more than the 60 s it is given here
    assert warmcheck.ask(root, notebooks[3], timeout=5) is None
    answer = warmcheck.ask(root, notebooks[0], timeout=60)
    assert answer is not None and "total: 0/" in answer["lines"][-1]


def test_another_verdict_environment_is_declined_and_checked_cold(service, root, notebooks):
    theirs = dict(os.environ, OMP_NUM_THREADS=str(int(os.environ.get("OMP_NUM_THREADS", 1)) + 1))
    assert warmcheck.ask(root, notebooks[0], environ=theirs) is None
    assert service.process.poll() is None, "the service goes on answering the others"
    assert warmcheck.ask(root, notebooks[0]) is not None


def test_the_user_name_is_the_accounts_without_one_in_the_environment(tmp_path):
    import pwd

    found = selfcheck.student_and_origin(tmp_path / "x.ipynb", None, {})
    assert found == (pwd.getpwuid(os.getuid()).pw_name, "user")


def test_a_service_stopped_in_the_middle_of_a_check_leaves_nothing_behind(
        root, notebooks, tmp_path, monkeypatch):
    (tmp_path / "runtime").mkdir(mode=0o700)
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "runtime"))
    started = warmcheck.Service(root)
    assert started.start() and started.listening(LISTEN_SECONDS)
    answers = []
    asker = threading.Thread(target=lambda: answers.append(
        warmcheck.ask(root, notebooks[3], timeout=600)))
    asker.start()
    service = psutil.Process(started.process.pid)
    deadline = time.monotonic() + 120
    while not any("sleep" in " ".join(p.cmdline()) or "ipykernel" in " ".join(p.cmdline())
                  for p in _alive(service.children(recursive=True))):
        assert time.monotonic() < deadline, "the slow check's kernel did not start"
        time.sleep(0.2)
    below = service.children(recursive=True)
    started.stop()
    asker.join(60)
    assert answers == [None], "no answer: the asker checks cold"
    assert started.process.returncode == 0, "it ended on SIGTERM, mid-check"
    assert not started.address.exists()
    time.sleep(2)
    assert _alive(below) == [], "its grading child, zygote and kernels went with it"


def test_the_first_check_starts_the_zygote_beside_its_cold_kernel(root, notebooks, tmp_path,
                                                                   monkeypatch):
    # a second check asked as soon as the first is answered finds the zygote started, or
    # nearly: it does not wait for all of torch's import and priming
    (tmp_path / "runtime").mkdir(mode=0o700)
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "runtime"))
    started = warmcheck.Service(root)
    assert started.start() and started.listening(LISTEN_SECONDS)
    asker = threading.Thread(target=warmcheck.ask, args=(root, notebooks[3]),
                             kwargs={"timeout": 600}, daemon=True)
    asker.start()  # the slow notebook: its first check never ends by itself
    service = psutil.Process(started.process.pid)
    deadline = time.monotonic() + 120
    try:
        while not _zygotes(service):
            assert time.monotonic() < deadline, "no zygote while the first check runs"
            time.sleep(0.2)
        assert started.answered() == 0, "the first check is still running"
        below = service.children(recursive=True)
    finally:
        started.stop()
        asker.join(60)
    time.sleep(2)
    assert _alive(below) == [], "its grading child, zygote and kernels went with it"


def test_the_checks_after_the_first_are_forked_from_the_first_checks_zygote(
        root, notebooks, tmp_path, monkeypatch):
    (tmp_path / "runtime").mkdir(mode=0o700)
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "runtime"))
    started = warmcheck.Service(root)
    assert started.start() and started.listening(LISTEN_SECONDS)
    service = psutil.Process(started.process.pid)
    try:
        assert warmcheck.ask(root, notebooks[1], timeout=300) is not None
        first = _zygotes(service)
        assert first, "the first check started the zygote"
        assert warmcheck.ask(root, notebooks[1], timeout=300) is not None
        assert _zygotes(service) == first, "the same zygote, not a second one"
    finally:
        started.stop()


def _zygotes(service: psutil.Process) -> set[int]:
    """The pids of the zygote's processes (bubblewrap's and Python's) below ``service``."""
    found = set()
    for process in _alive(service.children(recursive=True)):
        try:
            if "autograd_course.kernel.zygote" in " ".join(process.cmdline()):
                found.add(process.pid)
        except psutil.Error:
            pass  # ended meanwhile
    return found


def _alive(processes: list) -> list:
    found = []
    for process in processes:
        try:
            if process.is_running() and process.status() != psutil.STATUS_ZOMBIE:
                found.append(process)
        except psutil.Error:
            pass
    return found
