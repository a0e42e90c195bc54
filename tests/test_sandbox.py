"""The student's kernel while it is graded: what it can see, write, reach and use.

A probe notebook runs through the course's own executor (JudgedExecute, as nbgrader runs it):
its cells try what a hostile student would, and print what happened. bubblewrap is required
here: ``make`` installs it as root, and grading a class without it is not what CI checks.
"""

from __future__ import annotations

import json
import os
import socket
import sys
from pathlib import Path

import nbformat
import pytest
from traitlets.config import Config

import autograd_course
from autograd_course.grading import sandbox
from autograd_course.grading.preprocessors import NOT_SANDBOXED, JudgedExecute

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
    "write_work": attempt(lambda: write("own.txt")),
    "write_tmp": attempt(lambda: write("/tmp/own.txt")),
    "course_listing": attempt(lambda: os.listdir(COURSE)),
    "grader_tmp_visible": os.path.exists(GRADER_TMP),
    "home_listing": attempt(lambda: os.listdir("/root") + os.listdir("/home")),
    "shadow": attempt(lambda: open("/etc/shadow").read()),
    "grader_port": attempt(lambda: connect(PORT)),
    "internet": attempt(lambda: connect(80, "1.1.1.1")),
    "processes": len([p for p in os.listdir("/proc") if p.isdigit()]),
    "kill_parent": attempt(lambda: os.kill(os.getppid(), 9)),
    "extra_file": attempt(lambda: open("data.txt").read()),
    "kernel_side": [attempt(lambda m=m: __import__(m) and m) for m in KERNEL_SIDE],
    "grader_side": [attempt(lambda m=m: __import__(m) and m) for m in GRADER_SIDE],
    "package_listing": attempt(lambda: sorted(os.listdir(PACKAGE))),
  })
print(json.dumps(report))
'''


# What a notebook may import while it is graded, and what it may not (the grader, its test
# kit, and the lesson tools that do part of what an assignment asks).
KERNEL_MODULES = ["autograd_course.checks", "autograd_course.hints", "autograd_course.agent",
                  "autograd_course.graphs", "autograd_course.plots", "autograd_course.lessons"]
GRADER_MODULES = ["autograd_course.grading.judge", "autograd_course.grading.units.u08_training",
                  "autograd_course.testkit", "autograd_course.cost",
                  "autograd_course.engine_pictures", "autograd_course.training"]


def _probe_notebook(course: Path, grader_tmp: Path, port: int, hostile: bool
                    ) -> nbformat.NotebookNode:
    constants = (f"PACKAGE = {str(Path(autograd_course.__file__).parent)!r}\n"
                 f"KERNEL_SIDE = {KERNEL_MODULES!r}\nGRADER_SIDE = {GRADER_MODULES!r}\n"
                 f"COURSE = {str(course)!r}\nGRADER_TMP = {str(grader_tmp)!r}\nPORT = {port}\n"
                 f"HOSTILE = {hostile}\n")
    memory = ("try:\n    hog = bytearray(3 * 2**30)\n    print('allocated')\n"
              "except MemoryError:\n    print('MemoryError')")
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(constants + PROBE),
                                         nbformat.v4.new_code_cell(memory)])
    nb.metadata.kernelspec = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return nb


def _run(tmp_path, **settings):
    course = tmp_path / "course"
    submission = course / "autograded" / "s" / "a"
    submission.mkdir(parents=True)
    (course / "secret.txt").write_text("the gradebook and source/ live here")
    (submission / "data.txt").write_text("a file the student submitted")
    grader_tmp = tmp_path / "grader-scratch"
    grader_tmp.mkdir()
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
                         hostile=settings.get("sandbox", True))
    os.environ["AUTOGRAD_COURSE_TEST_TOKEN"] = "grader-only"
    try:
        nb, resources = JudgedExecute(config=config).preprocess(nb, resources)
    finally:
        del os.environ["AUTOGRAD_COURSE_TEST_TOKEN"]
        server.close()
    report = json.loads(nb.cells[0].outputs[-1]["text"])
    memory = nb.cells[1].outputs[-1]["text"].strip()
    return report, memory, resources["autograd_course"]


@pytest.fixture(scope="module")
def sandboxed(tmp_path_factory):
    assert sandbox.bubblewrap(), ("bubblewrap (bwrap) is required to test the sandbox: "
                                  "`make test` installs Debian's bubblewrap when run as root")
    return _run(tmp_path_factory.mktemp("sandbox"))


def test_the_package_is_read_only_and_the_course_is_hidden(sandboxed):
    report, _, state = sandboxed
    assert state["sandboxed"] is True
    assert report["write_package"] in ("OSError", "PermissionError")  # read-only, not theirs
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
    assert set(listing) == set(sandbox.KERNEL_SIDE)  # no __pycache__, no grading/


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


@pytest.mark.skipif(os.geteuid() != 0, reason="the kernel drops to uid 65534 only when the "
                    "grader is root (CI is); otherwise it keeps the grader's uid in a namespace")
def test_as_root_the_kernel_is_an_unprivileged_user(sandboxed):
    report, _, _ = sandboxed
    assert report["uid"] == sandbox.NOBODY
    assert report["shadow"] == "PermissionError"


def test_memory_is_limited(sandboxed):
    _, memory, _ = sandboxed
    assert memory == "MemoryError"


def test_without_the_sandbox_grading_says_so_or_refuses(tmp_path):
    report, _, state = _run(tmp_path / "plain", sandbox=False)
    assert state["sandboxed"] is False and NOT_SANDBOXED in state["notes"]
    assert report["course_visible"] is True  # what the sandbox prevents
    with pytest.raises(sandbox.SandboxUnavailable, match="requires the sandbox"):
        _run(tmp_path / "refused", sandbox=False, require_sandbox=True)


def test_the_sandbox_command_hides_and_binds_what_it_should(tmp_path):
    work, ipc = sandbox.prepare_folders(tmp_path / "k")
    course = tmp_path / "course"
    course.mkdir()
    argv, sandboxed = sandbox.kernel_command(work, ipc, [course], sandbox.Limits())
    assert sandboxed and argv[0].endswith("bwrap")
    text = " ".join(argv)
    assert f"--tmpfs {course}" in text and f"--bind {work} {work}" in text
    assert "--unshare-net" in text and "--clearenv" in text and "--die-with-parent" in text
    # the checkout that holds the package is not bound whole, even when it is on sys.path
    # (the current folder under `python -m pytest`): its folders may be private (mode 0700)
    checkout = sandbox.PACKAGE.parent
    sys.path.insert(0, str(checkout))
    try:
        assert checkout not in sandbox._python_paths()
    finally:
        sys.path.remove(str(checkout))
    assert argv[-5:] == [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]


def _kernel_side_modules() -> dict[str, Path]:
    """The kernel side of the package (sandbox.KERNEL_SIDE), by module name."""
    modules = {}
    for name in sandbox.KERNEL_SIDE:
        path = sandbox.PACKAGE / name
        for file in sorted(path.rglob("*.py")) if path.is_dir() else [path]:
            parts = file.relative_to(sandbox.PACKAGE.parent).with_suffix("").parts
            modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = file
    return modules


def _package_imports(name: str, file: Path) -> set[str]:
    """The modules of this package that a module imports, anywhere in it (in functions too,
    and by name in a string, as importlib would)."""
    import ast

    package = name if file.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(file.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{anchor}.{base}" if base else anchor
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            found.update(word.strip("'\"`()[],.:") for word in node.value.split()
                         if word.startswith("autograd_course."))
    return {m for m in found if m == "autograd_course" or m.startswith("autograd_course.")}


def _kernel_side_violations() -> list[str]:
    kernel_side = _kernel_side_modules()
    # what the package's own __init__ defines (from autograd_course import __version__)
    import ast

    top = {t.id for node in ast.parse((sandbox.PACKAGE / "__init__.py").read_text()).body
           if isinstance(node, ast.Assign) for t in node.targets if isinstance(t, ast.Name)}
    allowed = set(kernel_side) | {f"autograd_course.{name}" for name in top}
    violations = []
    for name, file in kernel_side.items():
        for imported in _package_imports(name, file):
            # a name imported from a kernel-side module (from .wire import Encoder) is fine
            owner = imported
            while owner not in allowed and owner.count(".") > 1:
                owner = owner.rpartition(".")[0]
            if owner not in allowed:
                violations.append(f"{file.relative_to(sandbox.PACKAGE)} imports {imported}")
    return violations


def test_the_kernel_side_imports_only_the_kernel_side(monkeypatch):
    assert {"autograd_course", "autograd_course.agent", "autograd_course.wire",
            "autograd_course.checks", "autograd_course.hints"} <= set(_kernel_side_modules())
    assert _kernel_side_violations() == [], "the grading kernel does not have these modules"
    # the check itself finds a grader module imported by a kernel-side one
    monkeypatch.setattr(sandbox, "KERNEL_SIDE", (*sandbox.KERNEL_SIDE, "cli.py"))
    assert any("cli.py imports autograd_course.grading" in v for v in _kernel_side_violations())
