"""The grader's failures are never the students': a course copied with its own package, kernels
that cannot start, a Ctrl-C, and messages that never land on the progress bar's line."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import nbformat
import psutil
import pytest
from distributed import LocalCluster

import autograd_course
from autograd_course.grading import gradebook
from autograd_course.grading.bounded import descendants
from autograd_course.grading.course import Course
from autograd_course.testkit import classes as course

pytestmark = pytest.mark.class_grading

ASSIGNMENT = "01_gradients"
NOTEBOOK = f"{ASSIGNMENT}.ipynb"
FULL = course.full_marks(Path(__file__).parent.parent / "source" / ASSIGNMENT / NOTEBOOK)
#: The environment's own command, as an instructor runs it (not ``python -m``, which would put
#: the current folder, the course, first on the grader's path).
COMMAND = str(Path(sys.executable).parent / "autograd-course")
#: Kernels that cannot start: an address-space limit no Python starts under (the instructor's
#: mistake in the config, not any student's).
NO_KERNEL = "\nc.JudgedExecute.memory_limit_mb = 8\n"
ENV = {**os.environ, "OMP_NUM_THREADS": "1"}


def grade(root: Path, *args: str, command=(COMMAND,)) -> subprocess.CompletedProcess:
    return subprocess.run([*command, *args], cwd=root, capture_output=True, text=True,
                          env=ENV, timeout=900)


def class_course(dest: Path, root: Path, students: list[tuple[str, str]]) -> Path:
    made = course.make_course(dest, root, [ASSIGNMENT])
    course.submit_class(made, ASSIGNMENT, students)
    return made


def one_line(stderr: str) -> str:
    """The command's own last word (on stderr), checked to be one line with no traceback."""
    assert "Traceback" not in stderr, stderr[-3000:]
    return stderr.strip().splitlines()[-1]


def kill_own_kernel(made: Path, student: str) -> None:
    """A student whose notebook ends its own kernel in the middle of the run."""
    nb = course.fill(made / "release" / ASSIGNMENT / NOTEBOOK, {})
    nb.cells.insert(2, nbformat.v4.new_code_cell("import os\nos._exit(3)"))
    course.submit(made, student, ASSIGNMENT, ASSIGNMENT, nb)


# -- a copy of the course with its own autograd_course/, graded with this environment -------
@pytest.fixture(scope="module")
def copied(tmp_path_factory, root):
    """A course holding its own copy of the package (a checkout cloned for a new term), while
    this environment's install is the package of another folder (this checkout)."""
    made = class_course(tmp_path_factory.mktemp("copied") / "course", root,
                        [("ada", "right"), ("carl", "blank")])
    shutil.copytree(Path(autograd_course.__file__).parent, made / "autograd_course",
                    ignore=shutil.ignore_patterns("__pycache__"))
    kill_own_kernel(made, "mallory")
    return made, grade(made, "grade", ASSIGNMENT, "--jobs", "2")


def test_a_copied_course_is_graded_by_the_environments_package(copied):
    made, graded = copied
    assert graded.returncode == 0, graded.stderr[-3000:]
    scores = course.gradebook_scores(made, ASSIGNMENT)
    assert scores == {"ada": FULL, "carl": 0, "mallory": 0}
    assert "graded with a problem" in graded.stdout and "kernel_info" not in graded.stdout


def test_a_notebook_that_kills_its_own_kernel_is_still_its_own_failure(copied):
    made, graded = copied
    assert graded.returncode == 0
    found = course.grade_record(made, "mallory", ASSIGNMENT)
    assert "the kernel died" in found.failure
    assert gradebook.graded(Course.load(made), ASSIGNMENT).keys() == {"ada", "carl", "mallory"}


@pytest.mark.parametrize("command", [(COMMAND,), (sys.executable, "-m", "autograd_course")],
                         ids=["installed command", "python -m in the course"])
def test_check_in_a_copied_course_agrees(copied, command):
    """``python -m`` in the course imports the course's own copy as the grader: its kernels
    import that copy too, not the environment's install."""
    made, _ = copied
    checked = grade(made, "check", f"submitted/ada/{ASSIGNMENT}/{NOTEBOOK}", command=command)
    assert checked.returncode == 0, checked.stdout[-2000:] + checked.stderr[-2000:]
    assert f"total: {FULL:g}/{FULL:g}" in checked.stdout


# -- kernels that cannot start: the grader's failure ----------------------------------------
@pytest.fixture(scope="module")
def no_kernels(tmp_path_factory, root):
    """A class graded under a config whose kernels cannot start, then under a working one."""
    made = class_course(tmp_path_factory.mktemp("nokernel") / "course", root,
                        [("ada", "right"), ("carl", "blank")])
    config = made / "nbgrader_config.py"
    working = config.read_text()
    config.write_text(working + NO_KERNEL)
    broken = grade(made, "grade", ASSIGNMENT, "--jobs", "2")
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                      dashboard_address=None, memory_limit=0) as cluster:
        on_cluster = grade(made, "grade", ASSIGNMENT, "--scheduler", cluster.scheduler_address)
    checked = grade(made, "check", f"submitted/ada/{ASSIGNMENT}/{NOTEBOOK}")
    left = dict(markers=gradebook.graded(Course.load(made), ASSIGNMENT),
                scores=course.gradebook_scores(made, ASSIGNMENT),
                files=sorted(str(p.relative_to(made)) for folder in ("autograded", "feedback",
                                                                     "records")
                             for p in (made / folder).rglob("*") if p.is_file()))
    config.write_text(working)
    fixed = grade(made, "grade", ASSIGNMENT, "--jobs", "2")
    return dict(course=made, broken=broken, on_cluster=on_cluster, checked=checked, left=left,
                fixed=fixed)


@pytest.mark.parametrize("where", ["broken", "on_cluster"])
def test_kernels_that_cannot_start_stop_the_run_with_the_reason(no_kernels, where):
    broken = no_kernels[where]
    assert broken.returncode != 0
    said = one_line(broken.stderr)
    assert said.startswith("autograd-course grade: the grader could not start a kernel: ")
    # how a kernel fails to start under the bad limit depends on the path (a cold kernel
    # never answers kernel_info; a warm one may not enter its cgroup): both are the grader's
    assert "no score was written for 2 submissions" in said, said
    assert "kernel_info" in said or "ZygoteError" in said, said


def test_no_score_or_marker_is_written_when_kernels_cannot_start(no_kernels):
    assert no_kernels["left"] == dict(markers={}, scores={}, files=[])


def test_the_next_run_with_a_working_config_grades_them(no_kernels):
    fixed = no_kernels["fixed"]
    assert fixed.returncode == 0, fixed.stderr[-3000:]
    assert "graded before" not in fixed.stdout
    assert course.gradebook_scores(no_kernels["course"], ASSIGNMENT) == {"ada": FULL, "carl": 0}


def test_check_says_the_grader_could_not_start_a_kernel(no_kernels):
    checked = no_kernels["checked"]
    assert checked.returncode != 0
    assert "the grader could not start a kernel: " in one_line(checked.stderr)
    assert "total:" not in checked.stdout


def test_a_waiting_message_never_shares_the_progress_bars_line(no_kernels):
    """Another run holds the gradebook: the message waits on a line of its own, whatever
    the bar (on stderr) has drawn, in one stream as a terminal shows both."""
    made = no_kernels["course"]
    message = "another grading run holds this gradebook: waiting for it to finish..."
    with gradebook.exclusive(Course.load(made)):
        run = subprocess.Popen([COMMAND, "grade", ASSIGNMENT], cwd=made, env=ENV,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        out = Reader(run)
        assert out.wait_for(message.encode(), 120), out.text()
    assert run.wait(300) == 0, out.text()
    shown = [segment.strip() for line in out.text().split("\n") for segment in line.split("\r")]
    assert message in shown, out.text()
    assert sum(message in segment for segment in shown) == 1


# -- Ctrl-C ---------------------------------------------------------------------------------
class Reader:
    """What a process writes on its stdout, read as it comes (in a thread)."""

    def __init__(self, process: subprocess.Popen):
        self.chunks: list[bytes] = []
        self.thread = threading.Thread(target=self._read, args=(process.stdout,), daemon=True)
        self.thread.start()

    def _read(self, stream) -> None:
        while chunk := stream.read1(4096):
            self.chunks.append(chunk)

    def text(self) -> str:
        return b"".join(self.chunks).decode(errors="replace")

    def wait_for(self, data: bytes, seconds: float) -> bool:
        deadline = time.monotonic() + seconds
        while data not in b"".join(self.chunks) and time.monotonic() < deadline:
            if not self.thread.is_alive():
                return data in b"".join(self.chunks)
            time.sleep(0.1)
        return data in b"".join(self.chunks)


def test_ctrl_c_stops_grade_at_once_and_keeps_what_was_merged(tmp_path, root):
    made = class_course(tmp_path / "course", root, [(f"s{i}", "right") for i in range(5)])
    # its own process group, sent SIGINT as a terminal's Ctrl-C is sent: to the whole group
    run = subprocess.Popen([COMMAND, "grade", ASSIGNMENT, "--jobs", "2"], cwd=made, env=ENV,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           start_new_session=True)
    out = Reader(run)
    try:
        assert out.wait_for(b" 1/5 ", 600), out.text()
        processes = [psutil.Process(pid) for pid in descendants(run.pid)]
        os.killpg(run.pid, signal.SIGINT)
        run.wait(60)
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
    text = out.text()
    assert run.returncode == 130, text
    assert "Traceback" not in text and "KeyboardInterrupt" not in text, text
    said = [line for line in text.splitlines() if "interrupted" in line]
    assert len(said) == 1, text
    found = re.fullmatch(r"autograd-course grade: interrupted; (\d+) submissions merged, "
                         r"(\d+) not graded \(run grade again to go on\)", said[0].strip())
    assert found, said
    merged, left = int(found[1]), int(found[2])
    assert merged >= 1 and merged + left == 5
    markers = gradebook.graded(Course.load(made), ASSIGNMENT)
    assert len(markers) == merged
    assert course.gradebook_scores(made, ASSIGNMENT) == dict.fromkeys(markers, FULL)
    deadline = time.monotonic() + 30
    while (alive := [p for p in processes if _running(p)]) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not alive, [(p.pid, p.cmdline()) for p in alive]
    # and the next run grades the rest, keeping what was merged
    again = grade(made, "grade", ASSIGNMENT, "--jobs", "2")
    assert again.returncode == 0, again.stderr[-3000:]
    assert f"{merged} submissions were graded before" in again.stdout
    assert course.gradebook_scores(made, ASSIGNMENT) == {f"s{i}": FULL for i in range(5)}


def _running(process: psutil.Process) -> bool:
    try:
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
