"""The sandbox a student's kernel runs in while it is graded: bubblewrap, and limits.

:func:`kernel_command` returns the command line of a grading kernel. With bubblewrap
(Debian's ``bubblewrap``; ``make`` installs it as root) the kernel sees:

- the system and the Python installation read-only (``--ro-bind / /``);
- no course: the course root (source/, the gradebook, submitted/, autograded/), the
  exchange, the grader's temporary folders, home directories, ``/run`` (service sockets)
  and ``/var/lib`` are hidden under empty file systems; only the Python environment is
  bound back, read-only;
- of this package, only its kernel side (:data:`KERNEL_SIDE`): the agent that answers the
  judge, the checks and hints the notebooks import, the lessons' display helpers. The
  grader (``grading/``: the judge, the tests' checks and reference computations), the test
  kit, and the lesson tools that do part of what an assignment asks (``cost``,
  ``engine_pictures``, ``training``) are not there;
- a private writable working folder (a copy of the submission's other files) and a private
  ``/tmp`` of limited size;
- no network (``--unshare-net``): it talks to the grader over IPC sockets in a folder of
  its own; its own PID, IPC and UTS namespaces; it dies with the grader;
- a clean environment (``--clearenv``): no grader credentials in its variables;
- when the grader runs as root, an unprivileged user (uid/gid 65534) with no capabilities
  and ``no_new_privs``; otherwise the grader's user in a user namespace without capabilities;
- limits from ``prlimit``: address space, CPU seconds, file size.

Where bubblewrap is missing or cannot start (macOS, a container without user namespaces),
the kernel runs unsandboxed with the same environment and limits, and every grade record
says "not sandboxed"; with ``require`` set, grading refuses to run instead. There an honest
kernel whose grader dies is killed too (``setpriv --pdeathsig``, where util-linux has it),
but that is no defence: the kernel can undo it, and processes it starts may outlive grading
with the grader's rights.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from dataclasses import dataclass
from pathlib import Path

import autograd_course

NOBODY = 65534
#: What of this package a grading kernel sees: everything else in it is the grader's.
KERNEL_SIDE = ("__init__.py", "agent.py", "wire.py", "checks.py", "hints", "lessons.py",
               "graphs.py", "plots.py")
PACKAGE = Path(autograd_course.__file__).resolve().parent
# Where data lives on a Unix system: hidden from the kernel unless bound back.
HIDDEN = ("/home", "/root", "/srv", "/mnt", "/media", "/run", "/var/lib", "/var/log",
          "/var/spool", "/var/mail", "/var/tmp")


class SandboxUnavailable(RuntimeError):
    """Grading must be sandboxed (``require``), and bubblewrap cannot run here."""


@dataclass(frozen=True)
class Limits:
    """Resource limits of one grading kernel."""

    memory_mb: int = 4096
    cpu_seconds: int = 1800
    file_mb: int = 512
    tmp_mb: int = 256


@functools.cache
def bubblewrap() -> str | None:
    """The path of a working ``bwrap``, or None (missing, or no namespaces allowed here)."""
    path = shutil.which("bwrap")
    if path is None:
        return None
    probe = [path, "--ro-bind", "/", "/", "--unshare-net", "--unshare-pid", "--as-pid-1"]
    if os.geteuid() != 0:
        probe += ["--unshare-user", "--cap-drop", "ALL"]
    try:
        done = subprocess.run([*probe, "true"], capture_output=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return path if done.returncode == 0 else None


def _ancestors(path: Path, below: Path) -> list[Path]:
    """The folders between ``below`` (excluded) and ``path`` (excluded), outermost first."""
    parents = [p for p in path.parents if p != below and below in p.parents]
    return sorted(parents, key=lambda p: len(p.parts))


def _inside(path: Path, roots) -> Path | None:
    for root in roots:
        if path == root or root in path.parents:
            return root
    return None


def _python_paths() -> list[Path]:
    """What the kernel's Python needs to read: its installation and its import path.

    An import-path folder that holds this package (the grader's working directory when it is
    the package's checkout, e.g. ``python -m pytest`` there) is left out: the package is
    bound on its own, kernel side only, and the rest of the checkout is not the kernel's.
    """
    paths = {Path(sys.prefix), Path(sys.base_prefix), Path(sys.exec_prefix),
             Path(os.path.realpath(sys.executable)).parent.parent}
    for name in ("stdlib", "platstdlib", "purelib", "platlib"):
        paths.add(Path(sysconfig.get_paths()[name]))
    paths = {p.resolve() for p in paths if p.exists()}
    paths.update(p for p in (Path(e).resolve() for e in sys.path if e and os.path.isdir(e))
                 if p != PACKAGE and p not in PACKAGE.parents)
    return sorted(paths - {PACKAGE}, key=lambda p: len(p.parts))


def _environment(work: Path) -> dict[str, str]:
    env = {
        "PATH": os.pathsep.join([str(Path(sys.executable).parent), "/usr/local/bin", "/usr/bin",
                                 "/bin"]),
        "HOME": str(work), "TMPDIR": "/tmp", "LANG": "C.UTF-8",
        "IPYTHONDIR": str(work / ".ipython"), "MPLCONFIGDIR": str(work / ".matplotlib"),
        "JUPYTER_RUNTIME_DIR": str(work / ".jupyter"), "JUPYTER_CONFIG_DIR": str(work / ".jupyter"),
        "NBGRADER_EXECUTION": "autograde", "PYTHONNOUSERSITE": "1",
    }
    for name in ("PYTHONPATH", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        if os.environ.get(name):
            env[name] = os.environ[name]
    return env


def _limits_prefix(limits: Limits) -> list[str]:
    prlimit = shutil.which("prlimit")
    if prlimit is None:
        return []
    return [prlimit, f"--as={limits.memory_mb * 2**20}", f"--cpu={limits.cpu_seconds}",
            f"--fsize={limits.file_mb * 2**20}", "--"]


def _die_with_parent() -> list[str]:
    """Without bubblewrap's ``--die-with-parent``: a kernel that outlives its grader is killed
    too, by ``setpriv --pdeathsig`` (Linux's util-linux). Tidiness, not a defence: the kernel
    can undo it."""
    setpriv = shutil.which("setpriv")
    return [setpriv, "--pdeathsig", "KILL", "--"] if setpriv else []


def kernel_command(work: Path, ipc: Path, hide: list[Path], limits: Limits,
                   *, use_sandbox: bool = True, require: bool = False) -> tuple[list[str], bool]:
    """The argv of a grading kernel (``{connection_file}`` left for jupyter_client).

    ``work`` is the kernel's working folder, ``ipc`` the folder of its sockets and
    connection file; ``hide`` lists further folders the kernel must not see (the course
    root, the exchange, the gradebook's folder). Returns the argv and whether it is
    sandboxed. Raises :class:`SandboxUnavailable` when ``require`` and no bubblewrap works.
    """
    python = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    bwrap = bubblewrap() if use_sandbox else None
    if bwrap is None:
        if require:
            raise SandboxUnavailable(
                "grading requires the sandbox, but bubblewrap (bwrap) is missing or cannot "
                "create namespaces here: install Debian's bubblewrap, or run where user "
                "namespaces are allowed")
        env = ["env", "-i", *(f"{k}={v}" for k, v in _environment(work).items())]
        return [*env, *_die_with_parent(), *_limits_prefix(limits), *python], False
    hidden = [Path(p) for p in HIDDEN] + [Path(tempfile.gettempdir()), Path("/tmp")]
    hidden += [Path(p).resolve() for p in hide]
    hidden = sorted({p for p in hidden if p.exists()}, key=lambda p: len(p.parts))
    argv = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    for path in hidden:
        if path == Path("/tmp"):
            argv += ["--perms", "1777", "--size", str(limits.tmp_mb * 2**20), "--tmpfs", "/tmp"]
        else:
            argv += ["--tmpfs", str(path)]
    made: set[Path] = set()

    def bind(path: Path, *, writable: bool) -> None:
        root = _inside(path, hidden)
        if root is None and not writable:
            return  # visible (read-only) already
        for folder in _ancestors(path, root) if root else []:
            if folder not in made:
                argv.extend(["--perms", "0755", "--dir", str(folder)])
                made.add(folder)
        argv.extend(["--bind" if writable else "--ro-bind", str(path), str(path)])
        made.add(path)

    secret_roots = [Path(p).resolve() for p in hide]
    for path in _python_paths():
        if any(path == r or path in r.parents for r in secret_roots):
            continue  # never bind back a folder that holds the course (or is above it)
        bind(path, writable=False)
    # The package: an empty folder with only its kernel side bound in (no __pycache__: its
    # compiled modules would carry the rest).
    root = _inside(PACKAGE, hidden)
    for folder in _ancestors(PACKAGE, root) if root else []:
        if folder not in made:
            argv.extend(["--perms", "0755", "--dir", str(folder)])
            made.add(folder)
    argv += ["--perms", "0755", "--tmpfs", str(PACKAGE)]
    for name in KERNEL_SIDE:
        if (PACKAGE / name).exists():
            argv += ["--ro-bind", str(PACKAGE / name), str(PACKAGE / name)]
    bind(work, writable=True)
    bind(ipc, writable=True)
    argv += ["--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
             "--die-with-parent", "--clearenv", "--chdir", str(work)]
    for name, value in _environment(work).items():
        argv += ["--setenv", name, value]
    if os.geteuid() == 0:
        drop = [shutil.which("setpriv") or "setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}",
                "--clear-groups", "--inh-caps=-all", "--bounding-set=-all", "--no-new-privs",
                "--"]
    else:
        argv += ["--unshare-user", "--cap-drop", "ALL"]
        drop = []
    return [*argv, *drop, *_limits_prefix(limits), *python], True


def prepare_folders(base: Path) -> tuple[Path, Path]:
    """Make the kernel's working and socket folders under ``base``, writable by the kernel."""
    work, ipc = base / "work", base / "ipc"
    for folder in (work, ipc):
        folder.mkdir(parents=True)
        if os.geteuid() == 0:
            os.chown(folder, NOBODY, NOBODY)
    if os.geteuid() == 0:
        os.chmod(base, 0o755)
    return work, ipc
