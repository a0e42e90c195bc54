"""The student's kernel while it is graded: what it can see, write, reach and use.

A probe notebook runs through the course's own executor (JudgedExecute, as nbgrader runs it):
its cells try what a hostile student would, and print what happened. bubblewrap is required
here: ``make`` installs it as root, and grading a class without it is not what CI checks.
"""

from __future__ import annotations

import ctypes
import json
import os
import shutil
import socket
import sys
from pathlib import Path

import nbformat
import pytest
from traitlets.config import Config

import autograd_course
from autograd_course.grading.boundary import folders as kernel_folders
from autograd_course.grading.boundary import sandbox, warm
from autograd_course.grading.preprocessors import NOT_SANDBOXED, JudgedExecute
from autograd_course.kernel import seccomp

PROBE = r'''
import json, os, socket, sys, glob
def attempt(action):
    try:
        return repr(action())
    except BaseException as exc:
        return f"{type(exc).__name__}"
def write(path):
    with open(path, "a") as f:
        f.write("x")
    return "written"
def fill(path):  # write until the folder is full; the MiB written
    written = 0
    try:
        with open(path, "wb") as f:
            while written < 4096:
                f.write(b"x" * 2**20)
                f.flush()
                written += 1
    except OSError:
        pass
    os.remove(path)
    return written
def flood():  # start processes until refused; how many started
    import signal, time
    children = []
    try:
        for _ in range(2000):
            pid = os.fork()
            if pid == 0:
                time.sleep(30)
                os._exit(0)
            children.append(pid)
    except OSError:
        pass
    for pid in children:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    return len(children)
def reserve_host_disk():  # through each file the kernel holds open (its own stdout, say)
    import ctypes, fcntl, stat
    libc = ctypes.CDLL(None, use_errno=True)
    held = []
    for fd in map(int, os.listdir("/proc/self/fd")):
        try:
            mode = os.fstat(fd).st_mode
        except OSError:
            continue
        if stat.S_ISREG(mode) and fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE != os.O_RDONLY:
            # FALLOC_FL_KEEP_SIZE: disk space without a bigger file
            if libc.fallocate(fd, 1, ctypes.c_long(0), ctypes.c_long(2**30)) == 0:
                held.append(fd)
    return held
def grader_key():  # the key the grader's test put in its session keyring, if it is reachable
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    # keyctl(KEYCTL_SEARCH, KEY_SPEC_SESSION_KEYRING, "user", name, 0) (x86_64)
    return libc.syscall(250, 10, -3, b"user", b"autograd-course-probe", 0) != -1
def syscalls():  # each call the filter refuses, by number, with zero arguments: its errno
    import ctypes, errno, subprocess
    libc = ctypes.CDLL(None, use_errno=True)
    if "Seccomp:\t2" not in open("/proc/self/status").read():
        return "unfiltered"  # (clone with CLONE_NEWUSER would fork this kernel)
    def call(nr, *args):
        args = [ctypes.c_char_p(a) if isinstance(a, bytes) else ctypes.c_long(a) for a in args]
        ctypes.set_errno(0)
        done = libc.syscall(nr, *(args or [ctypes.c_long(0)] * 5))
        return errno.errorcode.get(ctypes.get_errno(), "?") if done == -1 else "done"
    found = {name: call(nr) for name, nr in REFUSED.items()}
    found["clone3"] = call(435, 0, 0)
    for flag, name in ((0x10000000, "newuser"), (0x00020000, "newns"), (0x40000000, "newnet")):
        found[f"clone_{name}"] = call(56, flag | 17, 0, 0, 0, 0)
    for ring in (-4, -3, -5):  # a key in the user, session and user-session keyrings
        found[f"add_key {ring}"] = call(248, b"user", b"planted", b"x", 1, ring)
    found["persistent"] = call(250, 22, -1, -3)  # KEYCTL_GET_PERSISTENT
    # a nested user namespace, and a mount in it, by a program the sandbox has
    found["nested"] = subprocess.run(["unshare", "--user", "--map-root-user", "--mount",
                                      "mount", "-t", "tmpfs", "x", "/tmp"],
                                     capture_output=True, text=True).stderr.strip()
    return found
def connect(port, host="127.0.0.1"):
    socket.create_connection((host, port), timeout=2).close()
    return "connected"
report = {
    "uid": os.getuid(), "cwd": os.getcwd(), "env": sorted(os.environ),
    "course_visible": os.path.exists(COURSE + "/secret.txt"),
}
if HOSTILE:  # only where the sandbox holds: unsandboxed, these would really do harm
  report.update({
    "write_package": attempt(lambda: write(PACKAGE + "/.sandbox-probe")),
    "write_kernel": [attempt(lambda d=d: write(PACKAGE + d + "/.sandbox-probe"))
                     for d in ("/kernel", "/kernel/checks")],
    "write_work": attempt(lambda: write("own.txt")),
    "write_tmp": attempt(lambda: write("/tmp/own.txt")),
    "course_listing": attempt(lambda: os.listdir(COURSE)),
    "grader_tmp_visible": os.path.exists(GRADER_TMP),
    "home_listing": attempt(lambda: [n for d in ("/root", "/home") if os.path.isdir(d)
                                     for n in os.listdir(d)]),
    "unlisted_visible": os.path.exists(UNLISTED),
    "root_listing": attempt(lambda: sorted(os.listdir("/"))),
    "etc_listing": attempt(lambda: sorted(os.listdir("/etc"))),
    "write_root": attempt(lambda: write("/probe.txt")),
    "write_dev": attempt(lambda: write("/dev/probe.txt")),
    "write_sockets": attempt(lambda: write(os.path.join(os.path.dirname(
        sys.argv[sys.argv.index("-f") + 1]), "probe.txt"))),
    "fill_work": fill("filler.bin"),
    "fill_tmp": fill("/tmp/filler.bin"),
    "fill_shm": fill("/dev/shm/filler.bin"),
    "processes_started": flood(),
    "shadow": attempt(lambda: open("/etc/shadow").read()),
    "grader_port": attempt(lambda: connect(PORT)),
    "internet": attempt(lambda: connect(80, "1.1.1.1")),
    "processes": len([p for p in os.listdir("/proc") if p.isdigit()]),
    "kill_parent": attempt(lambda: os.kill(os.getppid(), 9)),
    "extra_file": attempt(lambda: open("data.txt").read()),
    "kernel_side": [attempt(lambda m=m: __import__(m) and m) for m in PACKAGE_MOUNTS],
    "grader_side": [attempt(lambda m=m: __import__(m) and m) for m in GRADER_SIDE],
    "package_listing": attempt(lambda: sorted(os.listdir(PACKAGE))),
    "reserved_host_disk": reserve_host_disk(),
    "grader_key": grader_key(),
    "syscalls": syscalls(),
    "pid1_filtered": attempt(lambda: "Seccomp:\t2" in open("/proc/1/status").read()),
  })
print(json.dumps(report))
'''


# What a notebook may import while it is graded, and what it may not (the grader, its test
# kit, and the lesson tools that do part of what an assignment asks).
KERNEL_MODULES = [f"autograd_course.kernel.{name}"
                  for name in ("checks", "hints", "agent", "graphs", "plots", "lessons")]
GRADER_MODULES = ["autograd_course.grading.boundary.judge",
                  "autograd_course.grading.units.u08_training",
                  "autograd_course.grading.units.u09_extending", "autograd_course.testkit",
                  "autograd_course.lab.cost", "autograd_course.lab.engine_pictures",
                  "autograd_course.lab.training", "autograd_course.lab.functional"]


def _probe_notebook(course: Path, grader_tmp: Path, port: int, hostile: bool, unlisted: Path
                    ) -> nbformat.NotebookNode:
    constants = (f"PACKAGE = {str(Path(autograd_course.__file__).parent)!r}\n"
                 f"PACKAGE_MOUNTS = {KERNEL_MODULES!r}\nGRADER_SIDE = {GRADER_MODULES!r}\n"
                 f"COURSE = {str(course)!r}\nGRADER_TMP = {str(grader_tmp)!r}\nPORT = {port}\n"
                 f"HOSTILE = {hostile}\nUNLISTED = {str(unlisted)!r}\n"
                 f"REFUSED = { {n: nr for n, (nr, _) in seccomp.REFUSED.items()}!r}\n")
    memory = ("try:\n    hog = bytearray(3 * 2**30)\n    print('allocated')\n"
              "except MemoryError:\n    print('MemoryError')")
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(constants + PROBE),
                                         nbformat.v4.new_code_cell(memory)])
    nb.metadata.kernelspec = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return nb


def _unlisted_folder() -> Path:
    """A folder the sandbox's allowlist does not name, as another course's checkout would be:
    beside the Python installation when that is in a home folder, else in /opt."""
    for parent in (Path("/opt"), Path.home()):
        if os.access(parent, os.W_OK):
            return parent / f"autograd-course-probe-{os.getpid()}"
    raise AssertionError("no writable folder outside /tmp to put the probe's file in")


def _plant_grader_key() -> None:
    """A key in this process's session keyring, as a grader started from a login has: the
    kernel must not reach it (add_key, x86_64's system call 248)."""
    libc = ctypes.CDLL(None, use_errno=True)
    found = libc.syscall(248, b"user", b"autograd-course-probe", b"grader-only", 11, -3)
    assert found != -1, os.strerror(ctypes.get_errno())


def _run(tmp_path, **settings):
    course = tmp_path / "course"
    submission = course / "autograded" / "s" / "a"
    submission.mkdir(parents=True)
    (course / "secret.txt").write_text("the gradebook and source/ live here")
    (submission / "data.txt").write_text("a file the student submitted")
    grader_tmp = tmp_path / "grader-scratch"
    grader_tmp.mkdir()
    unlisted = _unlisted_folder() / "nbgrader_config.py"
    unlisted.parent.mkdir()
    unlisted.write_text("# another course's configuration\n")
    server = socket.create_server(("127.0.0.1", 0))
    config = Config()
    config.CourseDirectory.root = str(course)
    config.JudgedExecute.secret = "test"
    config.JudgedExecute.memory_limit_mb = 1500
    for name, value in settings.items():
        setattr(config.JudgedExecute, name, value)
    resources = {"nbgrader": {"student": "s", "assignment": "a", "notebook": "n"},
                 "metadata": {"path": str(submission)}}
    nb = _probe_notebook(course, grader_tmp, server.getsockname()[1],
                         hostile=settings.get("sandbox", True), unlisted=unlisted)
    os.environ["AUTOGRAD_COURSE_TEST_TOKEN"] = "grader-only"
    _plant_grader_key()
    try:
        nb, resources = JudgedExecute(config=config).preprocess(nb, resources)
    finally:
        del os.environ["AUTOGRAD_COURSE_TEST_TOKEN"]
        server.close()
        shutil.rmtree(unlisted.parent, ignore_errors=True)
    assert nb.cells[0].outputs, (resources["autograd_course"], nb.cells[0].outputs)
    report = json.loads(nb.cells[0].outputs[-1]["text"])
    memory = nb.cells[1].outputs[-1]["text"].strip()
    return report, memory, resources["autograd_course"]


@pytest.fixture(scope="module", params=["warm", "cold"])
def sandboxed(request, tmp_path_factory):
    """The probe's report from a kernel forked by the zygote (warm) and from a kernel started
    as a process of its own (cold): every property holds for both."""
    assert sandbox.bubblewrap(), ("bubblewrap (bwrap) is required to test the sandbox: "
                                  "`make test` installs Debian's bubblewrap when run as root")
    warm.plan(None, wait=True)  # the first notebook waits for the zygote
    try:
        report, memory, state = _run(tmp_path_factory.mktemp("sandbox"), max_processes=64,
                                     disk_mb=32, warm_kernels=request.param == "warm")
    finally:
        warm.plan(None)
    assert state["kernel"] == request.param, state
    return report, memory, state


def test_the_package_is_read_only_and_the_course_is_hidden(sandboxed):
    report, _, state = sandboxed
    assert state["sandboxed"] is True
    assert report["write_package"] in ("OSError", "PermissionError")  # read-only, not theirs
    # kernel/ is mounted whole, its subfolders too: no file planted there for the grader
    for said in report["write_kernel"]:
        assert said in ("OSError", "PermissionError"), report["write_kernel"]
    assert report["course_visible"] is False and report["course_listing"] in ("[]",
                                                                              "FileNotFoundError")
    assert report["grader_tmp_visible"] is False
    # home folders are hidden, apart from a Python installation the kernel runs on
    python_homes = {Path(p).parts[2] for p in (sys.base_prefix, sys.prefix)
                    if Path(p).parts[1] in ("root", "home")}
    assert set(eval(report["home_listing"])) <= python_homes


def test_the_kernel_imports_the_kernel_side_of_the_package_only(sandboxed):
    report, _, _ = sandboxed
    assert report["kernel_side"] == [repr(m) for m in KERNEL_MODULES]
    assert report["grader_side"] == ["ModuleNotFoundError"] * len(GRADER_MODULES)
    listing = eval(report["package_listing"])
    assert set(listing) == set(sandbox.PACKAGE_MOUNTS)  # no __pycache__, no grading/


def test_the_kernel_sees_only_what_the_allowlist_names(sandboxed):
    report, _, _ = sandboxed
    assert report["unlisted_visible"] is False  # another course's config, outside the list
    top = set(eval(report["root_listing"]))
    named = {Path(p).parts[1] for paths in sandbox.allowlist().values() for p in paths}
    assert top <= named | {"dev", "proc", "tmp", "etc"}, top - named
    assert not top & {"home", "srv", "var", "mnt", "media", "run", "boot", "opt"} - named
    assert set(eval(report["etc_listing"])) <= set(sandbox.ETC) | {"passwd", "group"}


def test_the_kernels_folders_have_sizes_and_its_processes_a_limit(sandboxed):
    report, _, _ = sandboxed
    assert report["write_root"] == report["write_dev"] == "OSError"  # read-only file systems
    if os.geteuid() == 0:  # once the kernel is up, its socket folder is the grader's
        assert report["write_sockets"] == "PermissionError"
    assert 1 <= report["fill_work"] <= 32 and 1 <= report["fill_tmp"] <= 32  # disk_mb = 32
    assert report["fill_shm"] <= sandbox.SHM_MB
    if os.geteuid() == 0:  # a user per kernel: the limit (64 here) counts its own processes
        assert 0 < report["processes_started"] < 64
    # no file of the host is open in the kernel (its own stdout and stderr are a pipe), so no
    # disk space can be reserved past the limits
    assert report["reserved_host_disk"] == []


def test_the_kernel_has_a_keyring_of_its_own(sandboxed):
    report, _, _ = sandboxed  # a key of the grader's session keyring is out of its reach
    assert report["grader_key"] is False


def test_the_kernel_runs_under_the_system_call_filter(sandboxed):
    """Cold and warm: every call of the table fails with EPERM (an OSError, not a kill), so do
    keys in every keyring and a nested user namespace; clone3 answers ENOSYS."""
    report, _, state = sandboxed
    found = report["syscalls"]
    assert found != "unfiltered" and sandbox.SECCOMP_OFF not in state["notes"]
    assert {name: found[name] for name in seccomp.REFUSED} == dict.fromkeys(seccomp.REFUSED,
                                                                          "EPERM")
    assert found["clone3"] == "ENOSYS"
    assert found["clone_newuser"] == found["clone_newns"] == found["clone_newnet"] == "EPERM"
    assert [found[f"add_key {ring}"] for ring in (-4, -3, -5)] == ["EPERM"] * 3
    assert found["persistent"] == "EPERM"
    assert "Operation not permitted" in found["nested"], found["nested"]
    # PID 1 of the kernel's namespace (bubblewrap's, or the zygote's init) is filtered too
    assert report["pid1_filtered"] == "True", report["pid1_filtered"]


def test_the_kernel_writes_only_its_own_folders(sandboxed, tmp_path):
    report, _, _ = sandboxed
    assert report["write_work"] == "'written'" and report["write_tmp"] == "'written'"
    assert report["extra_file"] == "'a file the student submitted'"
    assert not list(tmp_path.rglob("own.txt"))


def test_no_network_no_other_processes_no_grader_environment(sandboxed):
    report, _, _ = sandboxed
    # a loopback of its own: the grader's server on 127.0.0.1 is not there; nothing else is
    assert report["grader_port"] == "ConnectionRefusedError"
    assert report["internet"] == "OSError"  # Network is unreachable
    assert report["processes"] <= 2  # bubblewrap's init and the kernel
    assert "AUTOGRAD_COURSE_TEST_TOKEN" not in report["env"]
    assert report["kill_parent"] == "PermissionError" or report["kill_parent"] == "None"


@pytest.mark.skipif(os.geteuid() != 0, reason="the kernel has a user of its own only when the "
                    "grader is root (CI is); otherwise it keeps the grader's uid in a namespace")
def test_as_root_the_kernel_is_an_unprivileged_user_of_its_own(sandboxed):
    report, _, _ = sandboxed
    assert report["uid"] in kernel_folders.KERNEL_UIDS
    assert report["shadow"] == "FileNotFoundError"  # not on the allowlist


def test_memory_is_limited(sandboxed):
    _, memory, _ = sandboxed
    assert memory == "MemoryError"


def test_without_the_sandbox_grading_says_so_or_refuses(tmp_path):
    report, _, state = _run(tmp_path / "plain", sandbox=False)
    assert state["sandboxed"] is False and NOT_SANDBOXED in state["notes"]
    assert report["course_visible"] is True  # what the sandbox prevents
    with pytest.raises(sandbox.SandboxUnavailable, match="requires the sandbox"):
        _run(tmp_path / "refused", sandbox=False, require_sandbox=True)


def test_the_sandbox_command_binds_only_what_it_should(tmp_path):
    folders = kernel_folders.prepare_folders(tmp_path / "k")
    course = tmp_path / "course"
    course.mkdir()
    argv, sandboxed = sandbox.kernel_command(folders, sandbox.Limits(), private=[course])
    assert sandboxed and any(part.endswith("bwrap") for part in argv[:5])
    text = " ".join(argv)
    assert "--ro-bind / /" not in text and str(course) not in text
    assert f"--bind {folders.ipc} {folders.ipc}" in text
    assert f"--tmpfs {folders.work}" in text
    assert f"--ro-bind {folders.files} {folders.files}" in text
    assert "--unshare-net" in text and "--clearenv" in text and "--die-with-parent" in text
    assert "--remount-ro / " in text
    # the checkout that holds the package is not bound whole, even when it is on sys.path
    # (the current folder under `python -m pytest`): its folders may be private (mode 0700)
    checkout = sandbox.PACKAGE.parent
    sys.path.insert(0, str(checkout))
    try:
        assert checkout not in sandbox.python_paths()
    finally:
        sys.path.remove(str(checkout))
    assert argv[-len(sandbox.kernel_python()):] == sandbox.kernel_python()


def test_two_kernels_never_share_a_user():
    with kernel_folders.kernel_user() as first, kernel_folders.kernel_user() as second:
        if os.geteuid() == 0:
            assert first != second and {first, second} <= set(kernel_folders.KERNEL_UIDS)
        else:
            assert first is second is None


@pytest.mark.skipif(os.geteuid() != 0, reason="the socket folder is locked only as root")
def test_locking_the_socket_folder_leaves_the_kernel_nothing_to_write(tmp_path):
    uid = kernel_folders.KERNEL_UIDS[0]
    folders = kernel_folders.prepare_folders(tmp_path / "k", uid)
    spill = folders.ipc / "spill" / "deeper"
    spill.mkdir(parents=True)
    (spill / "file").write_text("x")
    for path in (folders.ipc / "spill", spill, spill / "file"):
        os.chown(path, uid, uid)
        os.chmod(path, 0o777)
    kernel_folders.lock_sockets(folders)
    for path in (folders.ipc, folders.ipc / "spill", spill, spill / "file"):
        info = path.stat()
        assert (info.st_uid, info.st_mode & 0o022) == (0, 0), path  # root's, not writable


def test_the_kernel_starts_without_the_working_folder_on_its_path():
    python = sandbox.kernel_python()
    assert python[:3] == [sys.executable, "-P", "-m"]
    assert any("sys').path.insert(0, '')" in arg for arg in python)  # added once started
