"""How long each person waits for a verdict: a learner's check, an instructor's idle run.

    .venv/bin/python benchmarks/time_to_verdict.py [--assignment 01_gradients] [--repeats 3]
                                                   [--submissions 5] [--jobs 2]

In one run, on the same notebook (the assignment's student version with the reference answers
filled in) and the same course (the assignment released, a synthetic class of
``--submissions`` graded once before timing), each row's command runs ``--repeats`` times as a
fresh process, the rows in turn:

- ``nbgrader validate`` on the notebook (the visible tests, as nbgrader's Validate runs them);
- ``autograd-course check``, cold: the hidden tests, a new process each time (its prepared
  course is built before timing, as a learner's first check builds it; that is printed apart);
- ``autograd-course --help``: the command's own start-up;
- ``autograd-course grade`` with nothing to grade: the last run's stamp says nothing changed
  (autograd_course/grading/idle.py), and without it (the run decides submission by
  submission, as every run did before the stamp).

:data:`ROWS` lists them; the rows issue 33's warm check will add (the check warm, first and
later, and the check cell in JupyterLab as a learner sees it) are there, not measured yet. It
prints the median and the fastest of each, against ``nbgrader validate``, then what ``--help``
and an idle ``grade`` import (``python -X importtime``: the top-level imports' cumulative
time, one run), which depends less on the machine's load than wall time does. Figures, not a
test: run it on an idle machine.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import nbformat
from grade_class import timed

from autograd_course.grading import idle
from autograd_course.grading.prepared import CACHE
from autograd_course.testkit import classes, synthetic

ROOT = Path(__file__).resolve().parent.parent
HERE = [sys.executable, "-m"]


@dataclass
class Setting:
    """What the rows run on: the course (its class graded once), the notebook, ``--jobs``."""

    course: Path
    notebook: Path
    jobs: int


@dataclass(frozen=True)
class Row:
    """One row of the table: what a person waits for, and one timed run of it (None: a row
    that is not measured yet)."""

    label: str
    run: Callable[[Setting], float] | None


def validate(s: Setting) -> float:
    return timed(HERE + ["nbgrader", "validate", s.notebook.name], s.notebook.parent)


def check_cold(s: Setting) -> float:
    return timed(HERE + ["autograd_course", "--course", str(s.course), "check", "--student",
                         "bench", s.notebook.name], s.notebook.parent)


def help_text(s: Setting) -> float:
    return timed(HERE + ["autograd_course", "--help"], s.course)


def idle_grade(s: Setting) -> float:
    return timed(HERE + ["autograd_course", "grade", "--jobs", str(s.jobs)], s.course)


def idle_grade_in_full(s: Setting) -> float:
    (s.course / CACHE / idle.STAMP_FILE).unlink(missing_ok=True)
    return idle_grade(s)  # (which leaves the stamp again)


#: The table's rows, in order; the first is what the others are compared with.
ROWS = [
    Row("nbgrader validate (visible tests)", validate),
    Row("autograd-course check, cold (a new process)", check_cold),
    Row("autograd-course check, warm, first check", None),  # issue 33, point 1
    Row("autograd-course check, warm, later checks", None),  # issue 33, point 1
    Row("the check cell in JupyterLab, as a learner sees it", None),  # issue 33, point 1
    Row("autograd-course --help", help_text),
    Row("autograd-course grade, nothing to grade", idle_grade),
    Row("autograd-course grade, nothing to grade, no stamp (in full)", idle_grade_in_full),
]


def build(base: Path, assignment: str, submissions: int, jobs: int) -> tuple[Setting, float]:
    """The course with its class graded once, and the filled-in notebook; the seconds the
    grading took (not counted)."""
    course = classes.make_course(base / "course", ROOT, [assignment])
    classes.submit_class(course, assignment, synthetic.cycle_profiles(submissions))
    graded = timed(HERE + ["autograd_course", "grade", "--jobs", str(jobs)], course)
    answers = classes.reference_answers(course / "source" / assignment / f"{assignment}.ipynb")
    notebook = base / "learner" / f"{assignment}.ipynb"
    notebook.parent.mkdir()
    nbformat.write(classes.fill(course / "release" / assignment / f"{assignment}.ipynb",
                                answers), notebook)
    return Setting(course, notebook, jobs), graded


def top_imports(args: list[str], cwd: Path, count: int) -> list[tuple[float, str]]:
    """The ``count`` top-level imports of ``python -X importtime ARGS`` that took longest
    (cumulative seconds), and their total as ``("total", ...)`` first."""
    done = subprocess.run([sys.executable, "-X", "importtime", *args], cwd=cwd,
                          capture_output=True, text=True, env=dict(os.environ))
    found = [(int(m[1]) / 1e6, m[2]) for m in re.finditer(
        r"^import time:\s+\d+ \|\s+(\d+) \| (\S+)$", done.stderr, re.MULTILINE)]
    return [(sum(s for s, _ in found), "total"), *sorted(found, reverse=True)[:count]]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--assignment", default="01_gradients")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--submissions", type=int, default=5)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="verdict-bench-") as tmp:
        setting, graded = build(Path(tmp), args.assignment, args.submissions, args.jobs)
        first_check = check_cold(setting)  # builds the prepared course: not counted
        idle_grade(setting)  # the run after grading: the stamp of a run with nothing to do
        measured = [row for row in ROWS if row.run is not None]
        times: dict[str, list[float]] = {row.label: [] for row in measured}
        for _ in range(args.repeats):
            for row in measured:
                times[row.label].append(row.run(setting))
        imports = {what: top_imports(["-m", "autograd_course", *command], setting.course, 5)
                   for what, command in (("--help", ["--help"]),
                                         ("grade (nothing to grade)", ["grade"]))}
    print(f"machine: {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}; notebook: "
          f"{args.assignment} (reference answers); a class of {args.submissions}, graded once "
          f"in {graded:.1f} s; --jobs {args.jobs}; {args.repeats} runs of each, a new process "
          f"each (the first check, which prepares the course, took {first_check:.2f} s)\n")
    base = statistics.median(times[ROWS[0].label])
    print("| what | median | fastest | vs nbgrader validate |\n|---|---:|---:|---:|")
    for row in ROWS:
        if row.run is None:
            print(f"| {row.label} | not measured yet | | |")
            continue
        median = statistics.median(times[row.label])
        print(f"| {row.label} | {median:.2f} s | {min(times[row.label]):.2f} s | "
              f"{median / base:.2f}x |")
    for what, found in imports.items():
        print(f"\npython -X importtime -m autograd_course {what} (cumulative, one run): "
              + "; ".join(f"{name} {seconds:.3f} s" for seconds, name in found))


if __name__ == "__main__":
    started = time.perf_counter()
    main()
    print(f"\n(the benchmark took {time.perf_counter() - started:.0f} s)")
