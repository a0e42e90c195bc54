"""Warm kernels: what one forked kernel does never reaches the zygote or the next kernel.

A hostile notebook patches torch, builtins and ``sys.modules``, leaves files in ``/tmp`` and
``/dev/shm``, changes the environment and the generators, and starts processes that try to
outlive it; then an honest notebook is graded by the same zygote (the same process, as on
one grading worker) and reports its kernel. The zygote's own design rules (one thread, no
capabilities in a child) are checked too.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import psutil
import pytest
from support.judged import grade_cells
from traitlets.config import Config

from autograd_course.grading.boundary import folders as kernel_folders
from autograd_course.grading.boundary import sandbox, warm
from autograd_course.grading.preprocessors import JudgedExecute

HOSTILE = r'''
import builtins, os, random, subprocess, sys
import numpy, torch
torch.Tensor.backward = lambda self, *a, **k: None
torch.autograd.grad = lambda *a, **k: "patched"
torch.randn = lambda *a, **k: torch.zeros(*a)
numpy.pi = 3.0
builtins.EVIL = True
sys.modules["json"] = "polluted"
sys.modules["evil_module"] = sys
sys.path.insert(0, "/tmp/evil")
open("/tmp/left-behind.txt", "w").write("x")
open("/dev/shm/left-behind", "w").write("x")
os.environ["EVIL"] = "1"
random.seed(1); numpy.random.seed(1); torch.manual_seed(1)
subprocess.Popen(["sleep", "1000"], start_new_session=True)
if os.fork() == 0:  # a daemon: fork, new session, fork again
    os.setsid()
    if os.fork() == 0:
        os.execvp("sleep", ["sleep", "1001"])
    os._exit(0)
print("hostile done", os.getpid())
'''

HONEST = r'''
import builtins, json, os, random, sys
import numpy, torch
x = torch.tensor([1.0, 2.0], requires_grad=True)
(x * x).sum().backward()
print(json.dumps({
    "backward": torch.Tensor.backward.__module__, "grad": torch.autograd.grad.__module__,
    "randn": torch.randn.__module__ if hasattr(torch.randn, "__module__") else None,
    "x_grad": x.grad.tolist(), "pi": numpy.pi, "evil_builtin": hasattr(builtins, "EVIL"),
    "json_module": type(sys.modules["json"]).__name__,
    "evil_module": "evil_module" in sys.modules, "evil_path": "/tmp/evil" in sys.path,
    "tmp": sorted(n for n in os.listdir("/tmp") if not n.startswith(".")),
    "shm": os.listdir("/dev/shm"), "env": "EVIL" in os.environ,
    "processes": sorted(int(p) for p in os.listdir("/proc") if p.isdigit()),
    "random": [random.random(), float(numpy.random.rand()), float(torch.rand(1))],
    "uid": os.getuid(), "pid": os.getpid(),
    "status": {k: v.strip() for k, v in (l.split(":", 1) for l in open("/proc/self/status"))
               if k in ("CapEff", "CapPrm", "CapBnd", "NoNewPrivs")},
    "init": {k: v.strip() for k, v in (l.split(":", 1) for l in open("/proc/1/status"))
             if k in ("CapEff", "CapPrm", "CapBnd")},
}))
'''


def _grade(tmp_path, source: str, name: str, kernel: str = "warm"):
    """One notebook through JudgedExecute, as nbgrader's autograde runs it, in a ``kernel``
    (warm or cold) kernel (warm kernels on: the first is cold while the zygote starts)."""
    nb, state, _ = grade_cells(tmp_path, [source], name, warm=True)
    assert state["kernel"] == kernel, state
    return nb.cells[0].outputs, state


def _sleepers() -> list[psutil.Process]:
    return [p for p in psutil.process_iter(["cmdline"])
            if (p.info["cmdline"] or [])[:1] == ["sleep"]
            and (p.info["cmdline"] or [""])[-1] in ("1000", "1001")]


@pytest.fixture(scope="module")
def after_a_hostile_kernel(tmp_path_factory):
    assert sandbox.bubblewrap(), "bubblewrap is required for warm kernels (make test installs it)"
    warm.close_all()
    warm.plan(None, wait=True)  # the first notebook waits for the zygote
    tmp = tmp_path_factory.mktemp("zygote")
    before = {p.pid for p in _sleepers()}
    outputs, _ = _grade(tmp, HOSTILE, "hostile")
    assert "hostile done" in outputs[-1]["text"], outputs
    deadline = time.monotonic() + 10
    while {p.pid for p in _sleepers()} - before and time.monotonic() < deadline:
        time.sleep(0.1)
    left = {p.pid for p in _sleepers()} - before
    [zygote] = warm._zygotes.values()
    outputs, _ = _grade(tmp, HONEST, "honest")
    third = json.loads(_grade(tmp, HONEST, "another")[0][-1]["text"])
    assert list(warm._zygotes.values()) == [zygote] and zygote.alive()  # one, all along
    yield json.loads(outputs[-1]["text"]), third, left, zygote
    warm.close_all()
    warm.plan(None)


def test_nothing_a_kernel_patched_reaches_the_next(after_a_hostile_kernel):
    report, _, _, _ = after_a_hostile_kernel
    assert report["backward"] == "torch._tensor"
    assert report["grad"] == "torch.autograd"
    assert report["randn"] != "__main__"  # torch's own, not the lambda
    assert report["x_grad"] == [2.0, 4.0]
    assert report["pi"] == pytest.approx(3.141592653589793)
    assert not report["evil_builtin"] and not report["evil_module"] and not report["evil_path"]
    assert report["json_module"] == "module"
    assert not report["env"]


def test_no_file_and_no_process_is_left_behind(after_a_hostile_kernel):
    report, _, left, _ = after_a_hostile_kernel
    # only the path to its own folders and the allowlist's folders there (a checkout in /tmp),
    # nothing the hostile kernel wrote
    allowed = {Path(p).parts[2] for paths in sandbox.allowlist().values() for p in paths
               if Path(p).parts[1:2] == ("tmp",)}
    assert [n for n in report["tmp"] if not n.startswith(kernel_folders.KERNEL_FOLDERS)] == sorted(
        allowed), report["tmp"]
    assert sum(n.startswith(kernel_folders.KERNEL_FOLDERS) for n in report["tmp"]) == 1
    assert report["shm"] == []
    assert left == set(), "a process the hostile kernel started outlived it"
    # its own PID namespace: its PID 1 (which reaps orphans) and the kernel
    assert report["processes"] == [1, report["pid"]], report["processes"]
    assert report["pid"] != 1  # Linux drops the signals PID 1 sends itself: a SIGSEGV too


def test_each_kernel_has_fresh_generators_a_user_of_its_own_and_no_capabilities(
        after_a_hostile_kernel):
    report, third, _, _ = after_a_hostile_kernel
    assert report["random"] != third["random"]  # reseeded in each child, not copied
    for kernel in (report, third):
        assert kernel["status"]["CapEff"].strip("0") == ""
        assert kernel["status"]["CapPrm"].strip("0") == ""
        assert kernel["status"]["CapBnd"].strip("0") == ""
        assert kernel["status"]["NoNewPrivs"] == "1"
        assert all(not value.strip("0") for value in kernel["init"].values()), kernel["init"]
        if os.geteuid() == 0:
            assert kernel["uid"] in kernel_folders.KERNEL_UIDS
    if os.geteuid() == 0:
        assert report["uid"] != third["uid"]


def test_the_zygote_is_one_thread_without_a_kernel_of_its_own(after_a_hostile_kernel):
    *_, zygote = after_a_hostile_kernel
    assert zygote.ready["threads"] == 1
    process = psutil.Process(zygote.process.pid)
    python = [p for p in process.children(recursive=True) if p.name() != "bwrap"
              and "autograd_course.kernel.zygote" in " ".join(p.cmdline())]
    assert len(python) == 1 and python[0].num_threads() == 1
    assert not python[0].children()  # no kernel left running under it
    status = open(f"/proc/{python[0].pid}/status").read()
    if os.geteuid() == 0:  # only what a child needs to set itself up
        caps = int(next(line.split()[1] for line in status.splitlines()
                        if line.startswith("CapEff")), 16)
        kept = sum(1 << cap for cap in
                   (6, 7, 8, 12, 21))  # SETGID, SETUID, SETPCAP, NET_ADMIN, SYS_ADMIN
        assert caps == kept


def test_one_notebook_never_starts_a_zygote(tmp_path):
    warm.close_all()
    warm.plan(1)  # `check` of one notebook: a zygote's start would cost more than it saves
    try:
        _grade(tmp_path, "print(1)", "alone", kernel="cold")
        assert not warm._zygotes
    finally:
        warm.plan(None)


def test_a_notebook_graded_while_the_zygote_starts_gets_a_cold_kernel(tmp_path):
    warm.close_all()
    _grade(tmp_path / "1", "print(1)", "first", kernel="cold")  # the zygote starts meanwhile
    [zygote] = warm._zygotes.values()
    assert zygote.wait(warm.START_SECONDS) and zygote.alive()
    outputs, _ = _grade(tmp_path / "2", "import os\nprint(os.getpid())", "second")
    assert outputs[-1]["text"].strip() == "2"  # its namespace's PID 1 forked it
    assert list(warm._zygotes.values()) == [zygote]
    warm.close_all()


def test_a_grading_child_starts_its_zygote_first_and_its_notebooks_wait_for_it(tmp_path):
    warm.close_all()
    config = Config()
    config.CourseDirectory.root = str(tmp_path / "course")
    try:
        JudgedExecute(config=config).start_zygote()  # as a grading child starts
        [zygote] = warm._zygotes.values()
        _grade(tmp_path, "print(1)", "first")  # warm: it waited, and took no cold kernel
        assert list(warm._zygotes.values()) == [zygote]
    finally:
        warm.plan(None)
        warm.close_all()


def test_a_notebook_waits_for_a_starting_zygote_half_its_time_at_most(tmp_path, monkeypatch):
    waited = []

    class Starting:  # a zygote that is never ready
        def __init__(self, private):
            pass

        def alive(self) -> bool:
            return True

        def wait(self, seconds: float) -> bool:
            waited.append(seconds)
            return False

        def close(self) -> None:
            pass

    warm.close_all()
    monkeypatch.setattr(warm, "Zygote", Starting)
    warm.plan(None, wait=True)
    try:
        nb, state, _ = grade_cells(tmp_path, ["print(6 * 7)"], "impatient", warm=True,
                                   notebook_seconds=40)
    finally:
        warm.plan(None)
        warm.close_all()
    assert state["kernel"] == "cold" and nb.cells[0].outputs[-1]["text"].strip() == "42"
    assert len(waited) == 1 and 0 < waited[0] <= 20


def test_where_the_zygote_cannot_start_kernels_start_cold_and_the_log_says_why(
        tmp_path, monkeypatch, caplog):
    def cannot(private):
        raise warm.ZygoteError("no zygote on this machine")

    warm.close_all()
    monkeypatch.setattr(warm, "Zygote", cannot)
    warm.plan(None, wait=True)
    try:
        outputs, state = _grade(tmp_path, "print(6 * 7)", "fallback", kernel="cold")
    finally:
        warm.plan(None)
        warm.close_all()
    assert outputs[-1]["text"].strip() == "42" and state["sandboxed"] is True
    assert "no zygote on this machine: each notebook's kernel starts cold" in caplog.text
