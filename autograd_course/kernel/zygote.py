"""A warm parent of grading kernels (kernel side): torch imported once, a kernel forked each time.

The grader (:mod:`autograd_course.grading.boundary.warm`) starts this module once per grading
worker, inside the sandbox's fixed part (bubblewrap: the allowlist of
:mod:`autograd_course.grading.boundary.sandbox`, no network, its own PID namespace). It
imports only what a grading kernel imports (torch, numpy, ipykernel, this package's kernel
side), primes torch (one autograd pass and one ``torch.optim`` step, which loads
``torch._dynamo``), and then answers the grader's requests on its stdin, one JSON line each:

- ``{"op": "spawn", ...}``: fork a kernel for one notebook (:func:`_child`); the reply is the
  forked process's id in this sandbox's PID namespace;
- end of input: exit.

It holds no grader code, no secret, no course path, no zmq context and no thread but its own
(checked before every fork: :func:`_assert_forkable`). A student's code never runs here: it
runs in a child, which before it runs anything of the notebook

1. closes every inherited file descriptor (the grader's pipe included);
2. enters new mount, PID, network, IPC and UTS namespaces (and, where this parent is not
   root, a user namespace of its own), and brings up the new network's loopback only;
3. mounts its own ``/tmp``, ``/dev/shm`` and working folder (each a tmpfs with a size), binds
   in its socket folder and a read-only copy of the submission's other files at the paths the
   grader uses (all under ``/tmp``), and so hides every other notebook's folder;
4. forks the new PID namespace's PID 1 (:func:`_init`, as bubblewrap's own PID 1 in a cold
   kernel), which mounts its own ``/proc``, forks the kernel, drops every capability, installs
   the system-call filter and reaps orphans until the kernel ends;
5. drops to the kernel's user (every capability, the bounding set included, and
   ``no_new_privs``), joins a session keyring of its own and installs the system-call filter
   (:mod:`autograd_course.kernel.seccomp`; no mount or new namespace from here on), when the zygote
   was started with ``--seccomp``;
6. sets its resource limits (address space, CPU seconds, file size, descriptors, processes;
   the address space a cold kernel gets, plus what priming torch added to the zygote's);
7. reseeds Python's, NumPy's and torch's generators from ``os.urandom``;
8. starts ipykernel's kernel (its zmq sockets are made now, after the fork).

What a child changes (patched modules, ``sys.modules``, ``builtins``, torch, files) stays in
its own copy of memory and its own file systems; when its kernel ends, its PID namespace ends
with every process in it. The Linux calls (namespaces, mounts, capabilities) are
:mod:`autograd_course.kernel.linux`'s.
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import random
import signal
import sys
import time

from autograd_course.kernel import seccomp
from autograd_course.kernel.linux import (
    CAP_NET_ADMIN,
    CAP_SETGID,
    CAP_SETPCAP,
    CAP_SETUID,
    CAP_SYS_ADMIN,
    CLONE_NEWIPC,
    CLONE_NEWNET,
    CLONE_NEWNS,
    CLONE_NEWPID,
    CLONE_NEWUSER,
    CLONE_NEWUTS,
    MS_BIND,
    MS_MOVE,
    MS_NODEV,
    MS_NOEXEC,
    MS_NOSUID,
    MS_PRIVATE,
    MS_REC,
    PR_CAP_AMBIENT,
    PR_CAP_AMBIENT_CLEAR_ALL,
    PR_SET_NO_NEW_PRIVS,
    PR_SET_PDEATHSIG,
    bind_read_only,
    drop_bounding_set,
    loopback_up,
    mount,
    prctl,
    set_capabilities,
    status_fields,
    unshare,
)

#: What this parent keeps of root's capabilities: what a child needs to mount its file
#: systems (SYS_ADMIN), to become the kernel's user (SETUID, SETGID), to empty its own
#: bounding set (SETPCAP) and to bring up its own loopback (NET_ADMIN). A child drops them all.
KEPT = (CAP_SETGID, CAP_SETUID, CAP_SETPCAP, CAP_NET_ADMIN, CAP_SYS_ADMIN)


# -- the parent ------------------------------------------------------------------------------
def _load() -> None:
    """Import what a grading kernel imports: ipykernel's kernel imports its debugger (debugpy,
    a tenth of a forked kernel's time) and IPython's history and inspector as it starts."""
    import sqlite3  # noqa: F401

    import ipykernel.debugger  # noqa: F401
    import IPython.core.oinspect  # noqa: F401
    import numpy  # noqa: F401
    import torch  # noqa: F401
    from ipykernel.kernelapp import IPKernelApp  # noqa: F401

    import autograd_course.kernel.agent  # noqa: F401
    import autograd_course.kernel.memory  # noqa: F401
    import autograd_course.kernel.streams  # noqa: F401


def _prime() -> int:
    """Run torch's first autograd pass and optimiser step (``torch.optim``'s first step
    imports ``torch._dynamo``: seconds in a fresh process); the bytes of address space that
    this added (a cold kernel that never steps an optimiser does not have them)."""
    import torch

    before = _address_space()
    model = torch.nn.Linear(4, 1)
    optimiser = torch.optim.SGD(model.parameters(), lr=0.1)
    loss = model(torch.randn(3, 4, requires_grad=True)).pow(2).sum()
    loss.backward()
    optimiser.step()
    torch.optim.Adam(model.parameters()).step()
    return max(0, _address_space() - before)


def _address_space() -> int:
    """This process's address space in bytes (``VmSize``), which ``RLIMIT_AS`` bounds."""
    return int(status_fields("VmSize")["VmSize"].split()[0]) * 1024


def _tasks() -> int:
    return len(os.listdir("/proc/self/task"))


def _assert_forkable() -> None:
    """A fork copies one thread only, and shares writable shared mappings: there must be
    neither a second thread nor such a mapping."""
    if _tasks() != 1:
        raise RuntimeError(f"the zygote runs {_tasks()} threads; a fork needs one")
    with open("/proc/self/maps") as f:
        shared = [line for line in f if line.split()[1][1:4] == "w-s"]
    if shared:
        raise RuntimeError(f"the zygote has a writable shared mapping: {shared[0].strip()}")


def main() -> None:
    """Prime, then fork a child for each request on stdin until it closes. With
    ``--seccomp``, every child installs the system-call filter (and fails without it)."""
    started = time.perf_counter()
    filtered = "--seccomp" in sys.argv[1:]
    root = os.geteuid() == 0
    if root:
        drop_bounding_set(KEPT)
        set_capabilities(KEPT)
    _load()
    primed = _prime()
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children are reaped by the kernel
    gc.collect()
    gc.freeze()  # children's collections leave the parent's objects (and pages) alone
    _assert_forkable()
    requests, replies = sys.stdin.buffer, sys.stdout
    _reply(replies, ready=True, seconds=round(time.perf_counter() - started, 3),
           threads=_tasks(), root=root, primed_mb=round(primed / 2**20), seccomp=filtered)
    for line in requests:
        try:
            request = json.loads(line)
            _assert_forkable()
            pid = _spawn(dict(request, seccomp=filtered), primed)
            _reply(replies, pid=pid)
        except Exception as exc:  # noqa: BLE001 - the grader hears why, and goes on
            _reply(replies, error=f"{type(exc).__name__}: {exc}")


def _reply(stream, **fields) -> None:
    stream.write(json.dumps(fields) + "\n")
    stream.flush()


def _spawn(request: dict, primed: int) -> int:
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid:
        return pid
    status = 70
    try:
        status = _child(dict(request, primed=primed))
    except BaseException as exc:  # noqa: BLE001 - a child never returns to the parent's loop
        _log(f"the warm kernel could not start: {type(exc).__name__}: {exc}")
    finally:
        os._exit(status)


def _log(message: str) -> None:
    with open(2, "w", closefd=False) as f:
        f.write(message + "\n")


# -- a child -----------------------------------------------------------------------------
def _child(request: dict) -> int:
    """The first process of a notebook's kernel: namespaces and file systems, then the new
    PID namespace's PID 1, whose exit status (the kernel's) it returns."""
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    prctl(PR_SET_PDEATHSIG, signal.SIGKILL)  # dies with the zygote
    log = os.open(request["log"], os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600)
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(log, 1)
    os.dup2(log, 2)
    os.closerange(3, os.sysconf("SC_OPEN_MAX"))
    root = os.geteuid() == 0
    flags = CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS
    if not root:
        uid, gid = os.geteuid(), os.getegid()
        unshare(flags | CLONE_NEWUSER)
        for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"),
                           ("gid_map", f"{gid} {gid} 1")):
            with open(f"/proc/self/{name}", "w") as f:
                f.write(text)
    else:
        unshare(flags)
    loopback_up()
    _file_systems(request)
    init = os.fork()
    if init == 0:
        status = 70
        try:
            status = _init(request)
        except BaseException as exc:  # noqa: BLE001
            _log(f"the warm kernel could not start: {type(exc).__name__}: {exc}")
        os._exit(status)
    return _wait_for(init)


def _wait_for(pid: int) -> int:
    """Reap children until ``pid`` ends (orphans come to PID 1); its exit status, as a shell
    gives it (128 + the signal that killed it)."""
    while True:
        try:
            ended, status = os.waitpid(-1, 0)
        except ChildProcessError:
            return 0
        if ended == pid:
            code = os.waitstatus_to_exitcode(status)
            return 128 - code if code < 0 else code & 0xFF


def _init(request: dict) -> int:
    """PID 1 of the notebook's PID namespace, as bubblewrap's is in a cold kernel: it mounts
    the namespace's ``/proc``, forks the kernel, drops every capability, forwards an
    interrupt to the kernel, and reaps orphans until the kernel ends. (The kernel itself is
    not PID 1: Linux would drop every signal it sent itself without a handler, so a
    ``SIGSEGV`` a notebook raised, or its own ``SIGKILL``, would not end it.)"""
    prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    kernel = os.fork()
    if kernel == 0:
        try:
            _kernel(request)
        except BaseException as exc:  # noqa: BLE001
            _log(f"the warm kernel could not start: {type(exc).__name__}: {exc}")
        os._exit(70)
    signal.signal(signal.SIGINT, lambda *_: os.kill(kernel, signal.SIGINT))
    drop_bounding_set()
    prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL)
    set_capabilities(())
    prctl(PR_SET_NO_NEW_PRIVS, 1)
    if request.get("seccomp"):
        seccomp.install()
    return _wait_for(kernel)


def _tmpfs(target: str, mb: int, mode: str) -> None:
    mount("tmpfs", target, "tmpfs", MS_NOSUID | MS_NODEV, f"size={mb * 2**20},mode={mode}")


def _file_systems(request: dict) -> None:
    """This child's own file systems (see the module's step 3); the rest stays read-only.

    The new ``/tmp`` is made first in the kernel's empty ``home`` folder, with this kernel's
    own folders bound inside it at the paths the grader uses, and the allowlist's folders
    that lie under ``/tmp`` (an environment in a checkout there) bound again, read-only; then
    it is moved onto ``/tmp`` with them: every other folder of the spool is covered."""
    limits = request["limits"]
    mount(None, "/", None, MS_REC | MS_PRIVATE)  # nothing here reaches the parent
    for name in ("passwd", "group"):  # name only root, nobody and the kernel's user
        if request.get(name):
            bind_read_only(request[name], f"/etc/{name}")
    tmp = request["home"]
    _tmpfs(tmp, limits["tmp_mb"], "1777")
    for point in _mounts_in("/tmp", but=request["spool"]):  # the allowlist's, under /tmp
        target = os.path.join(tmp, os.path.relpath(point, "/tmp"))
        if os.path.isdir(point):
            os.makedirs(target, mode=0o755)
        else:
            os.makedirs(os.path.dirname(target), mode=0o755, exist_ok=True)
            open(target, "x").close()
        bind_read_only(point, target, recursive=True)
    inside = {name: os.path.join(tmp, os.path.relpath(request[name], "/tmp"))
              for name in ("ipc", "files", "work")}
    for path in inside.values():
        os.makedirs(path, mode=0o755)
    mount(request["ipc"], inside["ipc"], None, MS_BIND)
    bind_read_only(request["files"], inside["files"])
    _tmpfs(inside["work"], limits["work_mb"], "0777")
    mount(tmp, "/tmp", None, MS_MOVE)
    _tmpfs("/dev/shm", limits["shm_mb"], "1777")


def _mounts_in(folder: str, but: str) -> list[str]:
    """The mount points right inside the file system mounted at ``folder`` (each with what is
    mounted inside it), except ``but`` (/proc/self/mountinfo: id, parent id, device, root,
    mount point, with spaces and the like as octal escapes)."""
    with open("/proc/self/mountinfo") as f:
        rows = [line.split()[:5] for line in f]
    points = {row[0]: row[4].encode().decode("unicode_escape") for row in rows}
    top = [row[0] for row in rows if points[row[0]] == folder][-1:]
    return [points[row[0]] for row in rows if row[1] in top and points[row[0]] != but]


def _kernel(request: dict) -> None:
    """The notebook's kernel, forked by its namespace's PID 1: the kernel's user, limits,
    seeds, and ipykernel's kernel (see the module's steps 5 to 8)."""
    import resource

    prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    os.chdir(request["work"])
    drop_bounding_set()
    prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL)
    uid = request.get("uid")
    if os.geteuid() == 0 and uid is not None:
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)  # clears the permitted and effective capabilities
    set_capabilities(())
    prctl(PR_SET_NO_NEW_PRIVS, 1)
    prctl(PR_SET_PDEATHSIG, signal.SIGKILL)  # a change of user cleared it
    if status_fields("CapEff")["CapEff"].strip("0"):
        raise RuntimeError("capabilities left after the drop")
    seccomp.fresh_session_keyring()  # not the grader's; the kernel's user owns no key
    if request.get("seccomp"):
        seccomp.install()  # from here on, everything the kernel runs or forks is filtered
    limits = request["limits"]
    # the address space a cold kernel would have, plus what priming added (the notebook's
    # room is a cold kernel's)
    address_space = limits["memory_mb"] * 2**20 + request["primed"]
    for which, value in ((resource.RLIMIT_AS, address_space),
                         (resource.RLIMIT_CPU, limits["cpu_seconds"]),
                         (resource.RLIMIT_FSIZE, limits["file_mb"] * 2**20),
                         (resource.RLIMIT_NOFILE, limits.get("files", 256))):
        resource.setrlimit(which, (value, value))
    if uid is not None:  # counted per user: only where the kernel has a user of its own
        resource.setrlimit(resource.RLIMIT_NPROC, (limits["processes"], limits["processes"]))
    _fill(request["files"], request["work"])
    os.environ.clear()
    os.environ.update(request["env"])
    _reseed(request["threads"])
    argv = ["-f", request["connection_file"], *request["argv"]]
    sys.argv = [sys.executable, "-m", "ipykernel_launcher", *argv]
    from ipykernel.kernelapp import IPKernelApp

    app = IPKernelApp.instance()
    app.initialize(argv)
    app.start()


def _fill(files: str, work: str) -> None:
    """The working folder: a copy of the submission's other files, the kernel user's own (as
    ``cp -R`` makes it in a cold kernel; a file that cannot be copied is left out)."""
    import shutil

    for top, folders, names in os.walk(files):
        rel = os.path.relpath(top, files)
        target = os.path.normpath(os.path.join(work, rel))
        for folder in folders:
            with contextlib.suppress(OSError):
                os.makedirs(os.path.join(target, folder), exist_ok=True)
        for name in names:
            with contextlib.suppress(OSError):
                shutil.copyfile(os.path.join(top, name), os.path.join(target, name),
                                follow_symlinks=False)


def _reseed(threads: int) -> None:
    """Generators seeded from the operating system's entropy, as a fresh process's are (no
    two kernels share the parent's state); torch's thread count as the grader asks."""
    import numpy
    import torch

    random.seed(os.urandom(32))
    numpy.random.seed(int.from_bytes(os.urandom(4), "little"))
    torch.manual_seed(int.from_bytes(os.urandom(8), "little"))
    torch.set_num_threads(threads)


if __name__ == "__main__":
    main()
