"""Time plain serial nbgrader against `autograd-course grade` on one synthetic class.

    .venv/bin/python benchmarks/grade_class.py [--submissions 30] [--jobs 2]

The class has ``--submissions`` synthetic submissions spread over every assignment (profiles
right, mistakes, blank, mixed, tamper in turn). The course is copied twice and, in one run:
- serial: for each assignment, `nbgrader autograde` + `nbgrader generate_feedback`, then one
  `nbgrader export`, with the course's nbgrader_config.py (the same judge and sandbox);
- parallel: one `autograd-course grade --jobs N` (autograde, feedback, grades.csv, report).
Both must give identical scores. Prints the wall time of each, per submission and in all,
their ratio, and the floor: starting a sandboxed kernel and importing torch in it.
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from autograd_course.assignments import UNITS
from autograd_course.grading import course, demo

ROOT = Path(__file__).resolve().parent.parent


def floor(repeats: int = 3) -> float:
    """Seconds to start a sandboxed grading kernel, import torch in it and stop it."""
    from jupyter_client.kernelspec import KernelSpec

    from autograd_course.grading import preprocessors, sandbox

    times = []
    for _ in range(repeats):
        with tempfile.TemporaryDirectory() as tmp:
            work, ipc = sandbox.prepare_folders(Path(tmp))
            argv, _ = sandbox.kernel_command(work, ipc, [ROOT], sandbox.Limits())
            spec = KernelSpec(argv=argv, language="python", interrupt_mode="message")
            start = time.perf_counter()
            manager = preprocessors._GradingKernelManager(
                kernel_name="k", kernel_spec_manager=preprocessors._OneKernelSpec(spec),
                transport="ipc", ip=str(ipc / "kernel"), connection_file=str(ipc / "k.json"))
            from jupyter_core.utils import run_sync

            run_sync(manager.start_kernel)(stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            client = manager.blocking_client()
            client.start_channels()
            client.wait_for_ready(timeout=60)
            client.execute_interactive("import torch", timeout=120)
            client.stop_channels()
            run_sync(manager.shutdown_kernel)(now=True)
            times.append(time.perf_counter() - start)
    return statistics.median(times)


def timed(args: list[str], cwd: Path) -> float:
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    start = time.perf_counter()
    subprocess.run(args, cwd=cwd, check=True, capture_output=True, env=dict(os.environ, PATH=path))
    return time.perf_counter() - start


def build(base: Path, submissions: int) -> Path:
    """A course with every assignment and ``submissions`` submissions spread over them."""
    serial = course.make_course(base / "serial", ROOT, list(UNITS))
    per_unit = math.ceil(submissions / len(UNITS))
    for index, unit in enumerate(UNITS):
        count = min(per_unit, submissions - index * per_unit)
        notebooks = demo.synthetic_class(
            serial / "source" / unit / f"{unit}.ipynb", serial / "release" / unit / f"{unit}.ipynb",
            unit, demo.cycle_profiles(count), seed=index)
        for student, nb in notebooks.items():
            course.submit(serial, student, unit, unit, nb)
    return serial


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--submissions", type=int, default=30)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args()
    kernel_floor = floor()
    with tempfile.TemporaryDirectory(prefix="grade-bench-") as tmp:
        serial = build(Path(tmp), args.submissions)
        fast = Path(tmp) / "parallel"
        shutil.copytree(serial, fast)
        nbgrader = [sys.executable, "-m", "nbgrader"]
        t_serial = sum(timed(nbgrader + [step, unit, "--force"], serial)
                       for unit in UNITS for step in ("autograde", "generate_feedback"))
        t_serial += timed(nbgrader + ["export"], serial)
        t_parallel = timed([sys.executable, "-m", "autograd_course", "grade",
                            "--jobs", str(args.jobs)], fast)
        same = all(course.gradebook_scores(serial, u) == course.gradebook_scores(fast, u)
                   for u in UNITS)
    n = args.submissions
    print(f"machine: {os.cpu_count()} cores; jobs: {args.jobs}; {n} submissions over "
          f"{len(UNITS)} assignments")
    print(f"floor (start a sandboxed kernel + import torch): {kernel_floor:.2f} s")
    print(f"serial nbgrader (autograde + feedback + export): {t_serial:7.1f} s "
          f"({t_serial / n:.2f} s/submission)")
    print(f"autograd-course grade --jobs {args.jobs}:            {t_parallel:7.1f} s "
          f"({t_parallel / n:.2f} s/submission)")
    print(f"ratio serial/parallel: {t_serial / t_parallel:.2f}x; scores "
          f"{'identical' if same else 'DIFFERENT'}")


if __name__ == "__main__":
    main()
