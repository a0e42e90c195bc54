"""Time plain serial nbgrader against `autograd-course grade` on the same synthetic class.

    .venv/bin/python benchmarks/grade_class.py [--sizes 10 100] [--assignment 01_gradients]

For each class size N it builds N synthetic submissions (profiles right, mistakes, blank,
mixed, tamper in turn), copies the course twice, and in one run times:
- serial: `nbgrader autograde` + `nbgrader generate_feedback` + `nbgrader export`, with the
  course's nbgrader_config.py (the same defences, so the same scores);
- parallel: `autograd-course grade` (autograde + feedback + grades.csv + class report).
It checks that both give identical scores, and prints the per-submission wall time of each,
their ratio, and the floor: starting a kernel and importing torch.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

from autograd_course.grading import course, demo  # noqa: E402


def floor(repeats: int = 3) -> float:
    """Seconds to start a Python kernel, import torch and shut the kernel down."""
    from jupyter_client.manager import start_new_kernel

    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        manager, client = start_new_kernel(kernel_name="python3")
        client.execute_interactive("import torch", timeout=120)
        client.stop_channels()
        manager.shutdown_kernel(now=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def timed(args: list[str], cwd: Path) -> float:
    start = time.perf_counter()
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    subprocess.run(args, cwd=cwd, check=True, capture_output=True, env=dict(os.environ, PATH=path))
    return time.perf_counter() - start


def one_size(n: int, assignment: str, jobs: int, base: Path) -> dict:
    serial = course.make_course(base / f"serial{n}", ROOT, [assignment])
    notebooks = demo.synthetic_class(
        serial / "source" / assignment / f"{assignment}.ipynb",
        serial / "release" / assignment / f"{assignment}.ipynb", assignment,
        demo.cycle_profiles(n), seed=n)
    for student, nb in notebooks.items():
        course.submit(serial, student, assignment, assignment, nb)
    fast = base / f"parallel{n}"
    shutil.copytree(serial, fast)
    nbgrader = [sys.executable, "-m", "nbgrader"]
    t_serial = sum(timed(nbgrader + step, serial) for step in (
        ["autograde", assignment, "--force"], ["generate_feedback", assignment, "--force"],
        ["export"]))
    t_parallel = timed([sys.executable, "-m", "autograd_course", "grade", assignment,
                        "--jobs", str(jobs)], fast)
    same = course.gradebook_scores(serial, assignment) == course.gradebook_scores(fast, assignment)
    return dict(n=n, serial=t_serial / n, parallel=t_parallel / n, same=same)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10, 100])
    parser.add_argument("--assignment", default="01_gradients")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args()
    kernel_floor = floor()
    print(f"machine: {os.cpu_count()} cores; jobs: {args.jobs}; assignment: {args.assignment}")
    print(f"floor (start a kernel + import torch): {kernel_floor:.2f} s")
    print(f"{'N':>5} {'serial s/sub':>13} {'parallel s/sub':>15} {'ratio':>6} "
          f"{'floor/serial':>13}  scores")
    with tempfile.TemporaryDirectory(prefix="grade-bench-") as tmp:
        for n in args.sizes:
            row = one_size(n, args.assignment, args.jobs, Path(tmp))
            print(f"{row['n']:>5} {row['serial']:>13.2f} {row['parallel']:>15.2f} "
                  f"{row['serial'] / row['parallel']:>5.2f}x {kernel_floor / row['serial']:>12.0%}"
                  f"  {'identical' if row['same'] else 'DIFFERENT'}", flush=True)


if __name__ == "__main__":
    main()
