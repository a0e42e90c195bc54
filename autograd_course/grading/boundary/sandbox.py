"""The command line of a grading kernel: bubblewrap's allowlist, environment and limits.

:func:`kernel_command` builds a cold kernel's, :func:`zygote_command` the warm kernels'
parent's (:mod:`autograd_course.kernel.zygote`). Rules (the reasons: docs/security.md):

- the file system is an allowlist (:func:`allowlist`): read-only :data:`SYSTEM`, :data:`ETC`,
  :data:`SYS`, Python (:func:`python_paths`) and of this package only :data:`PACKAGE_MOUNTS`;
  writable only the working folder, ``/tmp`` and ``/dev/shm`` (each a tmpfs with a size,
  :class:`Limits`) and the socket folder; ``/`` and ``/dev`` read-only;
- no network; its own PID, IPC and UTS namespaces; dead with the grader; a clean environment
  (:func:`kernel_environment`) that imports this package from :data:`PACKAGE`
  (:func:`package_environment`); ``python -P`` (:func:`kernel_python`); the system-call filter
  where :func:`seccomp_on` (else every grade record says :data:`SECCOMP_OFF`);
- as root, a user of its own (:mod:`.folders`) without capabilities, with ``no_new_privs``;
  otherwise a user namespace without capabilities; ``prlimit``'s limits; its cgroup entered
  before bubblewrap starts (:func:`enter_cgroup`);
- without a working bubblewrap (:func:`bubblewrap`), unsandboxed with the same environment and
  limits, or :class:`SandboxUnavailable` where the sandbox is required.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import autograd_course
from autograd_course.grading.boundary.folders import NOBODY, Folders

#: What of this package a kernel sees: its ``__init__.py`` and the ``kernel/`` folder, by name
#: (whatever is put in ``kernel/`` becomes visible to students: tests/test_layout.py guards it).
PACKAGE_MOUNTS = ("__init__.py", "kernel")
PACKAGE = Path(autograd_course.__file__).resolve().parent
#: The system's programs and libraries, read-only (a link, as in merged-/usr systems, is made
#: as the same link).
SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
#: What of /etc a kernel needs: the dynamic linker's cache, Debian's alternatives (links
#: under /usr/bin point there), name-service and mime settings, fonts (Graphviz draws text),
#: the time zone.
ETC = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "alternatives", "nsswitch.conf",
       "mime.types", "fonts", "localtime", "timezone")
#: What of /sys a kernel reads: the CPU topology (torch sizes its thread pools with it).
SYS = ("/sys/devices/system/cpu",)
SHM_MB = 16


class SandboxUnavailable(RuntimeError):
    """Grading must be sandboxed (``require``), and bubblewrap cannot run here."""


@dataclass(frozen=True)
class Limits:
    """Resource limits of one grading kernel."""

    memory_mb: int = 4096
    cpu_seconds: int = 1800
    file_mb: int = 64
    tmp_mb: int = 128
    work_mb: int = 128
    processes: int = 256
    #: Open descriptors (``RLIMIT_NOFILE``): a kernel that ran lessons 06 to 10 (torch,
    #: matplotlib, Graphviz) held at most 72; each descriptor can hold a socket's buffers.
    files: int = 256
    #: Cores of CPU time (the cgroup's CPU limit, where there is one).
    cpus: float = 1.0

    def cgroup_bytes(self) -> int:
        """The kernel's cgroup memory limit: its memory and its file systems in memory
        (working folder, ``/tmp``, ``/dev/shm``), whose files the cgroup counts too."""
        return (self.memory_mb + self.work_mb + self.tmp_mb + SHM_MB) * 2**20




@functools.cache
def bubblewrap() -> str | None:
    """The path of a working ``bwrap``, or None (missing, or no namespaces allowed here)."""
    path = shutil.which("bwrap")
    if path is None:
        return None
    probe = [path, *_system(), "--unshare-net", "--unshare-pid", "--as-pid-1"]
    if os.geteuid() != 0:
        probe += ["--unshare-user", "--cap-drop", "ALL"]
    try:
        done = subprocess.run([*probe, "true"], capture_output=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return path if done.returncode == 0 else None


def _system() -> list[str]:
    argv = []
    for name in SYSTEM:
        path = Path(name)
        if path.is_symlink():
            argv += ["--symlink", os.readlink(path), name]
        elif path.is_dir():
            argv += ["--ro-bind", name, name]
    return argv


def _within(path: Path, roots: Sequence[Path]) -> bool:
    return any(path == root or root in path.parents for root in roots)


def python_paths(private: Sequence[Path] = ()) -> list[Path]:
    """What the kernel's Python needs to read: its installation, the environment's
    site-packages and the rest of its import path, outermost first.

    An import-path folder that holds this package or a ``private`` folder (the course root
    when it is the checkout, e.g. ``python -m pytest`` run there), or lies inside a private
    folder (a test's fixtures), is left out: the package is bound on its own, kernel side
    only; the environment's own folders are bound even inside the course (a venv there).
    """
    # the temporary folder too: a script run from there puts it on the import path, and it
    # holds other kernels' folders (the environment's own folders are bound wherever they lie)
    private = [Path(p).resolve() for p in [*private, tempfile.gettempdir()]]
    installed = {Path(sys.prefix), Path(sys.base_prefix), Path(sys.exec_prefix),
                 Path(os.path.realpath(sys.executable)).parent.parent}
    for name in ("stdlib", "platstdlib", "purelib", "platlib"):
        installed.add(Path(sysconfig.get_paths()[name]))
    installed = {p.resolve() for p in installed if p.exists()}
    others = {Path(e).resolve() for e in sys.path if e and os.path.isdir(e)}
    others = {p for p in others - installed if not _within(p, private)}
    paths = {p for p in installed | others
             if p != PACKAGE and p not in PACKAGE.parents
             and not any(p == r or p in r.parents for r in private)}
    return sorted(paths, key=lambda p: len(p.parts))


def allowlist(private: Sequence[Path] = ()) -> dict[str, list[str]]:
    """Everything of the host a sandboxed kernel sees, by kind (for the docs and tests)."""
    return {
        "system (read-only)": [n for n in SYSTEM if Path(n).exists()],
        "/etc (read-only)": [f"/etc/{n}" for n in ETC if (Path("/etc") / n).exists()],
        "/sys (read-only)": [n for n in SYS if Path(n).exists()],
        "Python (read-only)": [str(p) for p in python_paths(private)
                               if not _within(p, [Path(n) for n in SYSTEM])],
        "this package (read-only)": [str(PACKAGE / n) for n in PACKAGE_MOUNTS
                                     if (PACKAGE / n).exists()],
    }


def _environment(home: Path) -> dict[str, str]:
    """The kernel's environment. Its home and settings folders (IPython's, Jupyter's,
    matplotlib's) are in ``home``, an empty folder, never in the working folder: a submission
    that brings ``.ipython/profile_default/startup/`` or ``.jupyter/`` files would have them
    run when the kernel starts."""
    env = {
        "PATH": os.pathsep.join([str(Path(sys.executable).parent), "/usr/local/bin", "/usr/bin",
                                 "/bin"]),
        "HOME": str(home), "TMPDIR": "/tmp", "LANG": "C.UTF-8",
        "IPYTHONDIR": str(home / ".ipython"), "MPLCONFIGDIR": str(home / ".matplotlib"),
        "JUPYTER_RUNTIME_DIR": str(home / ".jupyter"), "JUPYTER_CONFIG_DIR": str(home / ".jupyter"),
        "NBGRADER_EXECUTION": "autograde", "PYTHONNOUSERSITE": "1",
    }
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        if os.environ.get(name):
            env[name] = os.environ[name]
    return {**env, **package_environment()}


def package_environment() -> dict[str, str]:
    """The ``PYTHONPATH`` under which a new Python of this environment, started with ``-P``
    (no current folder on its path), imports this package from :data:`PACKAGE`: the grader's
    own ``PYTHONPATH``, with :data:`PACKAGE`'s folder first where that Python would otherwise
    find the package elsewhere (:func:`_found_elsewhere`). Empty when neither is needed."""
    paths = [str(PACKAGE.parent)] if _found_elsewhere() else []
    paths += [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    return {"PYTHONPATH": os.pathsep.join(dict.fromkeys(paths))} if paths else {}


@functools.cache
def _found_elsewhere() -> bool:
    """Whether this environment's Python, started as a kernel is (``-P``, no user site, the
    grader's ``PYTHONPATH``), would import ``autograd_course`` from another folder than
    :data:`PACKAGE`, or find none (asked once per process: one Python started)."""
    probe = ("import importlib.util as u; s = u.find_spec('autograd_course'); "
             "print(s.origin if s and s.origin else '')")
    env = {**os.environ, "PYTHONNOUSERSITE": "1"}
    env.pop("PYTHONSAFEPATH", None)
    try:
        done = subprocess.run([sys.executable, "-P", "-c", probe], capture_output=True,
                              text=True, timeout=60, cwd="/", env=env)
    except (OSError, subprocess.TimeoutExpired):
        return True  # a folder too many on the path is harmless; a missing one is not
    found = done.stdout.strip()
    return not found or Path(found).resolve().parent != PACKAGE


def _limits_prefix(limits: Limits, *, processes: bool) -> list[str]:
    prlimit = shutil.which("prlimit")
    if prlimit is None:
        return []
    argv = [prlimit, f"--as={limits.memory_mb * 2**20}", f"--cpu={limits.cpu_seconds}",
            f"--fsize={limits.file_mb * 2**20}", f"--nofile={limits.files}"]
    if processes:  # counted per user: only where the kernel has a user of its own
        argv.append(f"--nproc={limits.processes}")
    return [*argv, "--"]


def enter_cgroup(procs: Sequence[Path]) -> list[str]:
    """The start of a command line that runs the rest in a cgroup: a shell (run by the
    grader, before any sandbox) writes its own pid into each ``cgroup.procs`` file, then
    execs the rest, so that every process of the kernel starts inside. It stops with status
    125 if a write fails."""
    script = ('while [ "$1" != -- ]; do echo $$ > "$1" || exit 125; shift; done; shift; '
              'exec "$@"')
    return ["/bin/sh", "-c", script, "enter-cgroup", *map(str, procs), "--"]


def _die_with_parent() -> list[str]:
    """Without bubblewrap's ``--die-with-parent``: a kernel that outlives its grader is killed
    too, by ``setpriv --pdeathsig`` (Linux's util-linux). Tidiness, not a defence: the kernel
    can undo it."""
    setpriv = shutil.which("setpriv")
    return [setpriv, "--pdeathsig", "KILL", "--"] if setpriv else []


def _accounts(folders: Folders, uid: int) -> list[str]:
    """An /etc/passwd and /etc/group that name only root, nobody and the kernel's user."""
    users = {0: "root", NOBODY: "nobody", uid: "student"}
    passwd = "".join(f"{name}:x:{n}:{n}:{name}:{folders.work}:/bin/sh\n"
                     for n, name in sorted(users.items()))
    group = "".join(f"{name}:x:{n}:\n" for n, name in sorted(users.items()))
    argv = []
    for name, text in (("passwd", passwd), ("group", group)):
        path = folders.base / name
        path.write_text(text)
        path.chmod(0o644)
        argv += ["--ro-bind", str(path), f"/etc/{name}"]
    return argv


def kernel_python() -> list[str]:
    """The kernel's own command line. ``-P`` keeps the working folder (the submission's files)
    off the import path while the kernel starts, so that a submitted ``ipykernel_launcher.py``,
    ``IPython/`` or ``zmq/`` is not what starts; once the kernel runs, the folder is put first
    on the path, as in Jupyter, for the student's own modules. Its stdout and stderr send
    what a cell prints in messages of a bounded size (:mod:`autograd_course.kernel.streams`)."""
    return [sys.executable, "-P", "-m", "ipykernel_launcher", "-f", "{connection_file}",
            *kernel_options()]


#: ipykernel's options of a grading kernel (see :func:`kernel_python`).
def kernel_options() -> tuple[str, ...]:
    """ipykernel's options of every grading kernel: before the notebook, the working folder on
    the import path; outputs in chunks. (Its own session keyring it joined before the
    system-call filter: :func:`seccomp_launcher`, :mod:`autograd_course.kernel.zygote`.)"""
    start = "__import__('sys').path.insert(0, '')"
    return (f"--IPKernelApp.exec_lines={start}",
            "--IPKernelApp.outstream_class=autograd_course.kernel.streams.ChunkedOutStream")


def kernel_environment() -> dict[str, str]:
    """A sandboxed kernel's environment (its home is its own ``/tmp``)."""
    return _environment(Path("/tmp"))


def kernel_command(folders: Folders, limits: Limits, *, private: Sequence[Path] = (),
                   uid: int | None = None, use_sandbox: bool = True, require: bool = False
                   ) -> tuple[list[str], bool]:
    """The argv of a grading kernel (``{connection_file}`` left for jupyter_client).

    ``private`` lists folders whose contents the kernel must not see even where they hold a
    folder of its import path (the course root, the exchange, the gradebook's folder); ``uid``
    is the kernel's own user (:func:`.folders.kernel_user`; as root only). Returns the argv and
    whether it is sandboxed. Raises :class:`SandboxUnavailable` when ``require`` and no
    bubblewrap works.
    """
    python = [*seccomp_launcher(), *kernel_python()]
    bwrap = bubblewrap() if use_sandbox else None
    if bwrap is None:
        if require:
            raise SandboxUnavailable(
                "grading requires the sandbox, but bubblewrap (bwrap) is missing or cannot "
                "create namespaces here: install Debian's bubblewrap, or run where user "
                "namespaces are allowed")
        env = ["env", "-i", *(f"{k}={v}" for k, v in _environment(folders.home).items())]
        return [*env, *_die_with_parent(), *_limits_prefix(limits, processes=False),
                *python], False
    tree = _Tree([bwrap, *_system()])
    tree.fixed_part(private, limits.tmp_mb)
    argv, folder, bind = tree.argv, tree.folder, tree.bind
    if os.geteuid() == 0:
        argv += _accounts(folders, uid if uid is not None else NOBODY)
    # The working folder: a file system of its own, with a size, filled from a read-only
    # copy of the submission's other files when the kernel starts.
    folder(folders.work.parent)
    argv += ["--ro-bind", str(folders.files), str(folders.files),
             "--perms", "0777", "--size", str(limits.work_mb * 2**20), "--tmpfs",
             str(folders.work)]
    bind(folders.ipc, "--bind")
    # its home: its own /tmp, empty at start
    argv += [*_sealed(), "--chdir", str(folders.work), *_setenv(kernel_environment())]
    if os.geteuid() == 0:
        user = uid if uid is not None else NOBODY
        drop = [shutil.which("setpriv") or "setpriv", f"--reuid={user}", f"--regid={user}",
                "--clear-groups", "--inh-caps=-all", "--bounding-set=-all", "--no-new-privs",
                "--"]
    else:
        argv += ["--unshare-user", "--cap-drop", "ALL"]
        drop = []
    fill = ["/bin/sh", "-c", 'cp -R -- "$0"/. . 2>/dev/null; exec "$@"', str(folders.files)]
    command = [*argv, *_filter_option(folders), *drop, *fill,
               *_limits_prefix(limits, processes=uid is not None), *python]
    return [*_with_filter(folders), *command], True


#: The descriptor bubblewrap reads the system-call filter from (:func:`_filter_option`).
FILTER_FD = 9


def _filter_option(folders: Folders) -> list[str]:
    """bubblewrap's ``--seccomp``, where the filter is on: bubblewrap installs it on every
    process of the sandbox, its own PID 1 included (which, without a user of the pool, runs
    as the kernel's user: unfiltered, the kernel could write its memory through /proc/1/mem).
    The program is a file of the grader's (``base``, never bound into the sandbox)."""
    if not seccomp_on():
        return []
    from autograd_course.kernel import seccomp

    folders.filter.write_bytes(seccomp.assemble())
    return ["--seccomp", str(FILTER_FD)]


def _with_filter(folders: Folders) -> list[str]:
    """The start of a command line that opens the filter's file on :data:`FILTER_FD` for
    bubblewrap (a command a kernel manager starts cannot be handed a descriptor)."""
    if not seccomp_on():
        return []
    return ["/bin/sh", "-c", f'exec {FILTER_FD}<"$0" && exec "$@"', str(folders.filter)]


SECCOMP_OFF = ("seccomp off: the student's kernel ran without the system-call filter "
               "(keyrings, ptrace, bpf, mount and new namespaces were not refused)")


@functools.cache
def seccomp_on() -> bool:
    """Whether grading kernels run under the system-call filter here: a process installs it
    and checks that it refuses keyctl (``python -m autograd_course.kernel.seccomp --probe``)."""
    try:
        done = subprocess.run([sys.executable, "-P", "-m", "autograd_course.kernel.seccomp",
                               "--probe"], capture_output=True, timeout=30,
                              env={**os.environ, **package_environment()})
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def seccomp_launcher() -> list[str]:
    """The start of a cold kernel's command line: a small Python that joins a session keyring
    of its own, installs the filter (where :func:`seccomp_on`; it stops if that fails) and
    execs the rest, ipykernel, under it."""
    return [sys.executable, "-P", "-m", "autograd_course.kernel.seccomp",
            *(["--filter"] if seccomp_on() else []), "--"]


#: The environment variables that size thread pools: one thread in a zygote, which must fork.
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def zygote_command(spool: Path, *, private: Sequence[Path] = ()) -> list[str] | None:
    """The argv of a zygote (:mod:`autograd_course.kernel.zygote`): the fixed part of every kernel's
    sandbox, with ``spool`` (where each kernel's folders are made, under ``/tmp``) bound in at
    its own path; one thread per pool. None where bubblewrap cannot run.

    As root, the zygote keeps only the capabilities a child needs to mount its own file
    systems and become the kernel's user; otherwise it is the grader's user in a user
    namespace, and each child makes a user namespace of its own."""
    bwrap = bubblewrap()
    if bwrap is None:
        return None
    tree = _Tree([bwrap, *_system()])
    tree.fixed_part(private, SHM_MB)
    argv = tree.argv
    if os.geteuid() == 0:  # stand-ins, covered by each child's own
        for name, text in (("passwd", "root:x:0:0:root:/:/bin/sh\n"), ("group", "root:x:0:\n")):
            (spool / f"{name}.zygote").write_text(text)
            argv += ["--ro-bind", str(spool / f"{name}.zygote"), f"/etc/{name}"]
    tree.bind(spool, "--bind")
    env = {**kernel_environment(), **{name: "1" for name in THREAD_VARIABLES}}
    argv += [*_sealed(), "--chdir", "/", *_setenv(env)]
    if os.geteuid() != 0:
        argv += ["--unshare-user", "--cap-drop", "ALL"]
    return [*argv, sys.executable, "-P", "-m", "autograd_course.kernel.zygote",
            *(["--seccomp"] if seccomp_on() else [])]


def _setenv(env: dict[str, str]) -> list[str]:
    """bubblewrap's options that set ``env`` (after ``--clearenv``)."""
    return [arg for name, value in env.items() for arg in ("--setenv", name, value)]


def _sealed() -> list[str]:
    """The end of every sandbox's bubblewrap options: read-only, no network, namespaces of
    its own, dead with its parent, a clean environment."""
    return ["--remount-ro", "/dev", "--remount-ro", "/",
            "--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
            "--die-with-parent", "--clearenv"]


class _Tree:
    """bubblewrap's options for a sandbox's file system, folder by folder: each folder made
    readable by the kernel's user, parents included, once."""

    def __init__(self, argv: list[str]):
        self.argv = argv
        self.made: set[Path] = {Path("/")}

    def folder(self, path: Path) -> None:
        for p in [*reversed(path.parents), path]:
            if p not in self.made:
                self.argv.extend(["--perms", "0755", "--dir", str(p)])
                self.made.add(p)

    def bind(self, path: Path, flag: str = "--ro-bind") -> None:
        self.folder(path.parent)
        self.argv.extend([flag, str(path), str(path)])
        self.made.add(path)

    def fixed_part(self, private: Sequence[Path], tmp_mb: int) -> None:
        """What every kernel sees alike: /etc's few files, the CPU topology, /dev, /proc, a
        /tmp of ``tmp_mb``, Python and this package's kernel side (the allowlist)."""
        argv = self.argv
        self.folder(Path("/etc"))
        for name in ETC:
            if (Path("/etc") / name).exists():
                argv += ["--ro-bind", f"/etc/{name}", f"/etc/{name}"]
        for name in SYS:
            if Path(name).exists():
                self.bind(Path(name))
        argv += ["--dev", "/dev", "--perms", "1777", "--size", str(SHM_MB * 2**20), "--tmpfs",
                 "/dev/shm", "--proc", "/proc",
                 "--perms", "1777", "--size", str(tmp_mb * 2**20), "--tmpfs", "/tmp"]
        system = [Path(n) for n in SYSTEM]
        bound: list[Path] = []
        for path in python_paths(private):
            if not _within(path, system + bound):
                self.bind(path)
                bound.append(path)
        # The package: an empty folder with its __init__.py and kernel/ bound in (not the
        # package's own __pycache__: its compiled modules would carry the rest).
        self.folder(PACKAGE.parent)
        argv += ["--perms", "0755", "--tmpfs", str(PACKAGE)]
        for name in PACKAGE_MOUNTS:
            if (PACKAGE / name).exists():
                argv += ["--ro-bind", str(PACKAGE / name), str(PACKAGE / name)]
        argv += ["--remount-ro", str(PACKAGE)]  # not even a zygote's root writes there
