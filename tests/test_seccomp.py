"""The grading kernel's system-call filter (autograd_course.kernel.seccomp) and its keyrings.

The program is decoded back and run instruction by instruction; installed in a process of its
own it refuses what the table names and leaves what honest work uses (threads, fork, exec,
multiprocessing, Graphviz); honest notebooks score in cold and warm kernels under it; a uid
that owns a key is never lent to a kernel, and where the filter is off, a key planted by one
kernel is not found by the next, and the grade record says the filter was off. The probes of
tests/test_sandbox.py check every refused call in a cold and a warm grading kernel.
"""

from __future__ import annotations

import ctypes
import errno
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support.judged import grade_cells

from autograd_course.grading.boundary import folders as kernel_folders
from autograd_course.grading.boundary import sandbox, warm
from autograd_course.kernel import seccomp

ALLOW, EPERM = seccomp.SECCOMP_RET_ALLOW, seccomp.SECCOMP_RET_ERRNO | errno.EPERM
ENOSYS = seccomp.SECCOMP_RET_ERRNO | errno.ENOSYS
#: Calls honest work makes (read, write, mmap, futex, getpid, fork, vfork, execve, wait4,
#: seccomp, prctl, prlimit64, openat, socket, clone's own thread and fork flags below).
USED = (0, 1, 9, 202, 39, 57, 58, 59, 61, 317, 157, 302, 257, 41)
THREAD = 0x003D0F00  # glibc's pthread_create: VM|FS|FILES|SIGHAND|THREAD|SYSVSEM|SETTLS|...
FORK = 0x01200011  # glibc's fork: CHILD_SETTID|CHILD_CLEARTID|SIGCHLD
HEADER = Path("/usr/include/x86_64-linux-gnu/asm/unistd_64.h")
on_x86_64 = pytest.mark.skipif(os.uname().machine != "x86_64" or not sandbox.seccomp_on(),
                               reason="the filter is built for x86_64 Linux with seccomp")


def test_the_program_decodes_to_the_table():
    for name, (number, _) in seccomp.REFUSED.items():
        assert seccomp.evaluate(number) == EPERM, name
    for number in USED:
        assert seccomp.evaluate(number) == ALLOW, number
    assert seccomp.evaluate(56, arg0=THREAD) == seccomp.evaluate(56, arg0=FORK) == ALLOW
    for flag in (0x00020000, 0x02000000, 0x04000000, 0x08000000, 0x10000000, 0x20000000,
                 0x40000000):  # each namespace flag, alone or with fork's
        assert seccomp.evaluate(56, arg0=flag) == seccomp.evaluate(56, arg0=flag | FORK) == EPERM
    assert seccomp.evaluate(435) == ENOSYS  # clone3: glibc falls back to clone
    # another ABI: i386's int 0x80 (its 39 is not getpid), and x32's numbers
    assert seccomp.evaluate(39, arch=0x40000003) == EPERM
    assert seccomp.evaluate(39 | seccomp.X32_SYSCALL_BIT) == EPERM
    # the check can fail: a program without the architecture test lets i386 through
    assert seccomp.evaluate(39, arch=0x40000003, code=seccomp.program()[2:]) == ALLOW
    assert len(seccomp.assemble()) == 8 * len(seccomp.program()) < 8 * 4096


@pytest.mark.skipif(not HEADER.exists(), reason="needs Linux's x86_64 headers")
def test_the_numbers_are_x86_64s():
    numbers = dict(re.findall(r"#define __NR_(\w+) (\d+)", HEADER.read_text()))
    table = {**seccomp.REFUSED, **seccomp.CONDITIONAL}
    known = {name for name in table if name in numbers}
    assert len(known) >= len(table) - 1  # open_tree_attr is newer than these headers
    assert {name: table[name][0] for name in known} == {name: int(numbers[name])
                                                         for name in known}


CHILD = r'''
import ctypes, errno, json, multiprocessing, os, subprocess, threading
libc = ctypes.CDLL(None, use_errno=True)
status = open("/proc/self/status").read()
assert "Seccomp:\t2" in status and "NoNewPrivs:\t1" in status, "not filtered"
def call(nr, *args):
    ctypes.set_errno(0)
    done = libc.syscall(nr, *[ctypes.c_long(a) for a in args or [0] * 5])
    return errno.errorcode.get(ctypes.get_errno(), "?") if done == -1 else "done"
found = {str(nr): call(nr) for nr in NUMBERS}
found["clone3"] = call(435, 0, 0)
box = []
thread = threading.Thread(target=box.append, args=("thread",))
thread.start(); thread.join()
with multiprocessing.get_context("fork").Pool(2) as pool:
    found["pool"] = pool.map(abs, [-1, -2])
found["thread"] = box
found["dot"] = subprocess.run(["dot", "-Tsvg"], input="digraph{a->b}", capture_output=True,
                              text=True).stdout.count("<g id=")
found["unshare"] = subprocess.run(["unshare", "--user", "true"], capture_output=True,
                                  text=True).stderr.strip()
print(json.dumps(found))
'''


@on_x86_64
def test_installed_it_refuses_the_table_and_leaves_honest_work():
    numbers = [number for number, _ in seccomp.REFUSED.values()]
    script = f"NUMBERS = {numbers!r}\n{CHILD}"
    done = subprocess.run([sys.executable, "-P", "-m", "autograd_course.kernel.seccomp", "--filter",
                           "--", sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert {str(n): found[str(n)] for n in numbers} == dict.fromkeys(map(str, numbers), "EPERM")
    assert found["clone3"] == "ENOSYS"
    assert found["thread"] == ["thread"] and found["pool"] == [1, 2]
    assert found["dot"] >= 3  # graph, two nodes, an edge
    assert "Operation not permitted" in found["unshare"]


def test_the_launcher_stops_when_the_filter_cannot_be_installed(monkeypatch):
    def cannot():
        raise OSError(errno.ENOSYS, "no system-call filter for this machine")

    launched = []
    monkeypatch.setattr(seccomp, "install", cannot)
    monkeypatch.setattr(seccomp, "fresh_session_keyring", lambda: None)
    monkeypatch.setattr(os, "execv", lambda path, argv: launched.append(argv))
    assert seccomp.main(["--filter", "--", "/bin/true", "x"]) == 70 and launched == []
    seccomp.main(["--", "/bin/true", "x"])  # asked for no filter: started as it is
    assert launched == [["/bin/true", "x"]]
    assert seccomp.main(["/bin/true"]) == 2  # no "--": nothing is started


def test_kernels_are_started_through_the_filter(tmp_path):
    if not sandbox.seccomp_on():
        pytest.skip("no seccomp here")
    folders = kernel_folders.prepare_folders(tmp_path / "k")
    launcher = sandbox.seccomp_launcher()
    assert launcher[3:] == ["autograd_course.kernel.seccomp", "--filter", "--"]
    for use_sandbox in (True, False):  # bubblewrap's kernel, and the unsandboxed fallback
        argv, _ = sandbox.kernel_command(folders, sandbox.Limits(), use_sandbox=use_sandbox)
        at = argv.index("autograd_course.kernel.seccomp")
        assert argv[at - 3:at + 3] == launcher
        assert argv[at + 3:] == sandbox.kernel_python()  # exec'd under the filter
    assert sandbox.zygote_command(tmp_path)[-1] == "--seccomp"  # its children install it


def test_bubblewrap_installs_the_filter_on_the_whole_sandbox(tmp_path):
    """A sandboxed cold kernel's command opens the grader's copy of the program for
    bubblewrap's --seccomp, so that bubblewrap's own PID 1 (the kernel's user, without a
    user of the pool) runs filtered too."""
    if not (sandbox.seccomp_on() and sandbox.bubblewrap()):
        pytest.skip("no seccomp or bubblewrap here")
    folders = kernel_folders.prepare_folders(tmp_path / "k")
    argv, sandboxed = sandbox.kernel_command(folders, sandbox.Limits())
    assert sandboxed and argv[:4] == ["/bin/sh", "-c", 'exec 9<"$0" && exec "$@"',
                                      str(folders.filter)]
    bwrap = argv.index(sandbox.bubblewrap())
    assert argv[argv.index("--seccomp", bwrap) + 1] == "9"
    assert folders.filter.read_bytes() == seccomp.assemble()
    assert not str(folders.filter).startswith(str(folders.work))  # never in the sandbox
    # bubblewrap, started as an unprivileged user in a user namespace, filters its PID 1
    probe = ("grep -h Seccomp: /proc/1/status /proc/self/status")
    done = subprocess.run(  # (the file is opened before the user changes, as by a grader)
        [*argv[:4], "setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--",
         sandbox.bubblewrap(), "--ro-bind", "/", "/", "--proc", "/proc",
         "--dev", "/dev", "--unshare-user", "--unshare-pid", "--cap-drop", "ALL",
         "--seccomp", "9", "sh", "-c", probe], capture_output=True, text=True, timeout=60)
    assert done.stdout.split() == ["Seccomp:", "2", "Seccomp:", "2"], done.stderr


# -- keyrings ------------------------------------------------------------------------------
_libc = ctypes.CDLL(None, use_errno=True)
root_only = pytest.mark.skipif(os.geteuid() != 0, reason="kernels have users of the pool as root")
TEST_UIDS = range(1_989_999_000, 1_989_999_002)  # outside the pool, as the pool's users are


def _as_user(uid: int, action) -> int:
    """Fork a child that becomes ``uid`` and runs ``action``; its pid (not waited for)."""
    pid = os.fork()
    if pid == 0:
        try:
            os.setgroups([])
            os.setresgid(uid, uid, uid)
            os.setresuid(uid, uid, uid)
            action()
        finally:
            os._exit(0)
    return pid


def _wait_until(condition, seconds: float = 20) -> bool:
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.1)
    return condition()


@root_only
def test_a_user_that_owns_a_key_is_not_lent(tmp_path, monkeypatch):
    """While a key of a uid lives (here in a session keyring its process holds), the pool
    skips that uid; once the key is gone, it is lent again."""
    first, second = TEST_UIDS
    monkeypatch.setattr(kernel_folders, "KERNEL_UIDS", TEST_UIDS)
    monkeypatch.setattr(kernel_folders, "USER_LOCKS", tmp_path / "users")
    read, write = os.pipe()

    def plant_and_wait():
        os.close(write)
        _libc.syscall(250, 1, None)  # a session keyring of its own
        assert _libc.syscall(248, b"user", b"planted", b"x", 1, -3) > 0
        os.read(read, 1)

    holder = _as_user(first, plant_and_wait)
    os.close(read)
    try:
        assert _wait_until(lambda: kernel_folders.holds_keys(first))
        monkeypatch.setattr(kernel_folders, "_next_user", [0])
        with kernel_folders.kernel_user() as uid:
            assert uid == second
    finally:
        os.close(write)
        os.waitpid(holder, 0)
    assert _wait_until(lambda: not kernel_folders.holds_keys(first))  # collected with its session
    monkeypatch.setattr(kernel_folders, "_next_user", [0])
    with kernel_folders.kernel_user() as uid:
        assert uid == first


KEYS = r'''
import ctypes, json
libc = ctypes.CDLL(None, use_errno=True)
persistent = libc.syscall(250, 22, -1, -3)  # KEYCTL_GET_PERSISTENT, linked in the session
rings = {"user": -4, "user-session": -5, "session": -3, "persistent": persistent}
if PLANT:
    found = {name: libc.syscall(248, b"user", b"planted-" + name.encode(), b"x", 1, ring)
             for name, ring in rings.items()}
else:  # KEYCTL_SEARCH of each keyring, for each key
    found = {f"{ring}/{name}": libc.syscall(250, 10, rings[ring], b"user",
                                            b"planted-" + name.encode(), 0)
             for ring in rings for name in rings}
print(json.dumps({"uid": __import__("os").getuid(), "found": found}))
'''


def _grade(tmp_path, source: str, name: str, *, warm_kernels: bool = False):
    nb, state, _ = grade_cells(tmp_path, [source], name, warm=warm_kernels)
    return nb.cells[0].outputs, state


def _scrub(uid: int) -> None:
    """Empty and invalidate the keyrings a test filled for ``uid`` (so that it owns no key)."""
    def scrub():
        _libc.syscall(250, 1, None)
        rings = [_libc.syscall(250, 22, -1, -3), _libc.syscall(250, 0, -5, 0),
                 _libc.syscall(250, 0, -4, 0)]
        for ring in rings:
            _libc.syscall(250, 7, ring)
            _libc.syscall(250, 21, ring)

    os.waitpid(_as_user(uid, scrub), 0)


@root_only
def test_where_the_filter_is_off_a_planted_key_never_reaches_the_next_kernel(
        tmp_path, monkeypatch):
    """The fallback: a kernel without the filter plants keys in every keyring it has; the next
    kernel, which the pool would have given the same uid, gets another one, and finds none of
    them. Both records say that the filter was off."""
    monkeypatch.setattr(sandbox, "seccomp_on", lambda: False)
    monkeypatch.setattr(kernel_folders, "KERNEL_UIDS", TEST_UIDS)
    monkeypatch.setattr(kernel_folders, "USER_LOCKS", tmp_path / "users")
    assert not any(kernel_folders.holds_keys(uid) for uid in TEST_UIDS)
    try:
        monkeypatch.setattr(kernel_folders, "_next_user", [0])
        outputs, state = _grade(tmp_path / "1", "PLANT = True\n" + KEYS, "planter")
        planted = json.loads(outputs[-1]["text"])
        assert planted["uid"] == TEST_UIDS[0]
        assert all(key > 0 for key in planted["found"].values()), planted  # unfiltered
        assert sandbox.SECCOMP_OFF in state["notes"]
        assert kernel_folders.holds_keys(TEST_UIDS[0])
        monkeypatch.setattr(kernel_folders, "_next_user", [0])  # the same uid comes round
        outputs, state = _grade(tmp_path / "2", "PLANT = False\n" + KEYS, "finder")
        found = json.loads(outputs[-1]["text"])
        assert found["uid"] == TEST_UIDS[1]
        assert set(found["found"].values()) == {-1}, found
        assert sandbox.SECCOMP_OFF in state["notes"]
    finally:
        for uid in TEST_UIDS:
            _scrub(uid)
    assert _wait_until(lambda: not any(kernel_folders.holds_keys(uid) for uid in TEST_UIDS))


# -- honest work under the filter ---------------------------------------------------------
HONEST = r'''
import json, multiprocessing, subprocess, threading
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
import torch
torch.set_num_threads(2)
x = torch.randn(256, 256, requires_grad=True)
(x @ x).sum().backward()
box = []
thread = threading.Thread(target=box.append, args=(1,))
thread.start(); thread.join()
with multiprocessing.get_context("fork").Pool(2) as pool:
    squares = pool.map(abs, [-2, -3])
plt.plot([0, 1], [1, 0]); plt.savefig("plot.png")
svg = subprocess.run(["dot", "-Tsvg"], input="digraph{a->b}", capture_output=True,
                     text=True, check=True).stdout
print(json.dumps({"grad": list(x.grad.shape), "thread": box, "pool": squares,
                  "dot": "<svg" in svg, "seccomp": open("/proc/self/status").read()
                  .split("Seccomp:")[1].split()[0]}))
'''


@on_x86_64
@pytest.mark.parametrize("kind", ["cold", "warm"])
def test_honest_work_runs_under_the_filter(tmp_path, kind):
    warm.close_all()
    warm.plan(None, wait=True)
    try:
        outputs, state = _grade(tmp_path, HONEST, "honest", warm_kernels=kind == "warm")
    finally:
        warm.plan(None)
        warm.close_all()
    assert state["kernel"] == kind, state
    report = json.loads(outputs[-1]["text"])
    assert report == {"grad": [256, 256], "thread": [1], "pool": [2, 3], "dot": True,
                      "seccomp": "2"}
    assert sandbox.SECCOMP_OFF not in state["notes"]


def test_the_summary_says_once_that_the_filter_was_off(capsys):
    from autograd_course.cli import summarise
    from autograd_course.grading.record import GradeRecord

    records = [GradeRecord(student=s, assignment="a", notebook="n", sandboxed=True,
                           notes=[sandbox.SECCOMP_OFF]) for s in ("ann", "bob")]
    summarise([], records)
    printed = capsys.readouterr().out
    assert "SECCOMP OFF: 2 notebooks" in printed
    assert "PROBLEM" not in printed and "0 graded with a problem" in printed
