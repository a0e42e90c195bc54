"""Time `autograd-course check` against `nbgrader validate` on the same notebooks, in one run.

    .venv/bin/python benchmarks/check_vs_validate.py [--assignment 01_gradients] [--repeats 3]
                                                     [--several 4]

The notebook is the assignment's student version with the reference answers filled in. Each
command runs ``--repeats`` times, alternating, as a fresh process (what a learner runs), on
one notebook and on ``--several`` copies of it given at once (one process for all: there
``check`` forks every kernel after the first from a warm zygote, while one notebook never
starts one). The check's prepared course is built once before timing (it is cached by the
source's hash, so only a learner's first check pays for it, and that is printed too). Prints
the median wall time of each and their ratio.
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

import nbformat

from autograd_course.testkit.classes import fill, reference_answers

ROOT = Path(__file__).resolve().parent.parent


def timed(args: list[str], cwd: Path) -> float:
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    start = time.perf_counter()
    subprocess.run(args, cwd=cwd, check=True, capture_output=True, env=dict(os.environ, PATH=path))
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--assignment", default="01_gradients")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--several", type=int, default=4)
    args = parser.parse_args()
    name = args.assignment
    with tempfile.TemporaryDirectory(prefix="check-bench-") as tmp:
        folder = Path(tmp)
        answers = reference_answers(ROOT / "source" / name / f"{name}.ipynb")
        notebooks = []
        for index in range(args.several):
            (folder / str(index)).mkdir()
            notebooks.append(folder / str(index) / f"{name}.ipynb")
            nbformat.write(fill(ROOT / "release" / name / f"{name}.ipynb", answers),
                           notebooks[-1])
        shutil.rmtree(ROOT / ".autograd-course-cache", ignore_errors=True)
        check = [sys.executable, "-m", "autograd_course", "--course", str(ROOT), "check",
                 "--student", "bench"]
        validate = [sys.executable, "-m", "nbgrader", "validate"]
        first = timed(check + [str(notebooks[0])], folder)
        times: dict[tuple[str, int], list[float]] = {}
        for _ in range(args.repeats):
            for count in (1, args.several):
                chosen = [str(n) for n in notebooks[:count]]
                for label, command in (("validate", validate), ("check", check)):
                    times.setdefault((label, count), []).append(timed(command + chosen, folder))
    print(f"notebook: {name} (reference answers); {args.repeats} runs each, median wall time")
    for count in (1, args.several):
        check_s, validate_s = (statistics.median(times[(k, count)])
                               for k in ("check", "validate"))
        print(f"{count} notebook(s) in one command:")
        print(f"  nbgrader validate      {validate_s:6.2f} s   {times[('validate', count)]}")
        print(f"  autograd-course check  {check_s:6.2f} s   {times[('check', count)]}")
        print(f"  ratio check/validate   {check_s / validate_s:6.2f}x")
    print(f"(a first check, which prepares the course, took {first:.2f} s)")

if __name__ == "__main__":
    main()
