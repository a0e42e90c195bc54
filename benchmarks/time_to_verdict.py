"""How long each person waits for a verdict: a learner's check, an instructor's idle run.

    .venv/bin/python benchmarks/time_to_verdict.py [--assignment 01_gradients] [--repeats 3]
                                                   [--submissions 5] [--jobs 2]

In one run, on the same notebook (the assignment's student version with the reference answers
filled in) and the same course (the assignment released, a synthetic class of
``--submissions`` graded once before timing), each row's command runs ``--repeats`` times as a
fresh process, the rows in turn:

- ``nbgrader validate`` on the notebook (the visible tests, as nbgrader's Validate runs them);
- ``autograd-course check``, cold (``--cold``): the hidden tests, a new process each time (its
  prepared course is built before timing, as a learner's first check builds it; that is
  printed apart);
- ``autograd-course check`` answered by the warm check (autograd_course/warmcheck.py): its
  service started anew as JupyterLab starts it, then the first check, a second asked at once,
  and a later one, :data:`BETWEEN` seconds after the last as a learner edits between checks
  (each a new ``check`` process that asks the service);
- the check cell in JupyterLab as a learner sees it (JupyterLab at the course root, headless
  Chromium, Shift+Enter to the cell's return): its first check, then ``--repeats`` more;
  ``--no-lab`` leaves these rows out;
- ``autograd-course --help``: the command's own start-up;
- ``autograd-course grade`` with nothing to grade: the last run's stamp says nothing changed
  (autograd_course/grading/idle.py), and without it (the run decides submission by
  submission, as every run did before the stamp).

:data:`ROWS` lists them. It prints the median and the fastest of each, against ``nbgrader
validate``, then what ``--help`` and an idle ``grade`` import (``python -X importtime``: the
top-level imports' cumulative time, one run), which depends less on the machine's load than
wall time does. Figures, not a test: run it on an idle machine.
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

from autograd_course import warmcheck
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
    service: warmcheck.Service | None = None


@dataclass(frozen=True)
class Row:
    """One row of the table: what a person waits for, and one timed run of it (None: a row
    that is not measured yet)."""

    label: str
    run: Callable[[Setting], float] | None


def validate(s: Setting) -> float:
    return timed(HERE + ["nbgrader", "validate", s.notebook.name], s.notebook.parent)


def check(s: Setting, *options: str) -> float:
    return timed(HERE + ["autograd_course", "--course", str(s.course), "check", *options,
                         "--student", "bench", s.notebook.name], s.notebook.parent)


def check_cold(s: Setting) -> float:
    return check(s, "--cold")


def check_warm_first(s: Setting) -> float:
    """The first check a service answers: the service started anew (not timed), as
    JupyterLab starts it for the course."""
    if s.service is not None:
        s.service.stop()
    s.service = warmcheck.Service(s.course)
    before = s.service.answered()  # the course's log holds the earlier services' answers too
    if not (s.service.start() and s.service.listening(60)):
        sys.exit(f"the warm check's service did not start: see {s.service.address}.log")
    took = check(s)
    if s.service.answered() != before + 1:
        log = s.service.address.with_suffix(".log")
        sys.exit(f"the warm check's service did not answer the check; its log, {log}:\n"
                 + log.read_text(errors="replace")[-3000:])
    return took


def check_warm(s: Setting) -> float:
    return check(s)


#: Seconds between two checks in the "later checks" row: a learner edits and saves between
#: checks (a check asked at once may still wait for the zygote the first check started).
BETWEEN = 5.0


def check_warm_later(s: Setting) -> float:
    time.sleep(BETWEEN)  # not timed
    return check(s)


def help_text(s: Setting) -> float:
    return timed(HERE + ["autograd_course", "--help"], s.course)


def idle_grade(s: Setting) -> float:
    return timed(HERE + ["autograd_course", "grade", "--jobs", str(s.jobs)], s.course)


def idle_grade_in_full(s: Setting) -> float:
    (s.course / CACHE / idle.STAMP_FILE).unlink(missing_ok=True)
    return idle_grade(s)  # (which leaves the stamp again)


#: The rows measured in JupyterLab (:func:`in_jupyterlab`), after the others.
CELL_FIRST = "the check cell in JupyterLab, first check (key to report, in Chromium)"
CELL_LATER = f"the check cell in JupyterLab, later checks ({BETWEEN:g} s after the last)"


def in_jupyterlab(s: Setting, runs: int, log: Path) -> dict[str, list[float]]:
    """The check cell's seconds as a learner sees them: JupyterLab started at the course root
    (as `make lab` starts it, with the course's warm check), the notebook copied to work/,
    opened in headless Chromium, its check cell run ``runs`` times with Shift+Enter (from
    the key to the cell's return: tests/support/lab.py's lab_check)."""
    sys.path.insert(0, str(ROOT / "tests"))
    from support.browser import chromium
    from support.lab import TOKEN, lab_check, running_lab

    if s.service is not None:  # JupyterLab starts the course's own
        s.service.stop()
        s.service = None
    assignment = s.notebook.stem
    place = f"work/{assignment}/{assignment}.ipynb"
    (s.course / place).parent.mkdir(parents=True, exist_ok=True)
    (s.course / place).write_bytes(s.notebook.read_bytes())
    with running_lab(s.course, log) as lab, chromium() as browser:
        browser.visit(f"{lab.base}/api/status?token={TOKEN}", settle_ms=0)  # the login
        text, seconds = lab_check(browser, lab, place, log.with_suffix(".png"), runs=runs,
                                  pause=BETWEEN)
    if "total: " not in text:
        sys.exit(f"the check cell printed no report:\n{text}")
    return {CELL_FIRST: seconds[:1], CELL_LATER: seconds[1:]}


#: The table's rows, in order; the first is what the others are compared with.
ROWS = [
    Row("nbgrader validate (visible tests)", validate),
    Row("autograd-course check, cold (a new process)", check_cold),
    Row("autograd-course check, warm, first check (the service just started)",
        check_warm_first),
    Row("autograd-course check, warm, a second check asked at once", check_warm),
    Row(f"autograd-course check, warm, later checks ({BETWEEN:g} s after the last)",
        check_warm_later),
    Row(CELL_FIRST, None),  # measured apart: in_jupyterlab()
    Row(CELL_LATER, None),
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
    parser.add_argument("--no-lab", action="store_true",
                        help="leave out the rows measured in JupyterLab (Chromium)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="verdict-bench-") as tmp:
        runtime = Path(tmp) / "runtime"  # the warm check's socket, apart from a real lab's
        runtime.mkdir(mode=0o700)
        os.environ["JUPYTER_RUNTIME_DIR"] = str(runtime)
        setting, graded = build(Path(tmp), args.assignment, args.submissions, args.jobs)
        first_check = check_cold(setting)  # builds the prepared course: not counted
        idle_grade(setting)  # the run after grading: the stamp of a run with nothing to do
        measured = [row for row in ROWS if row.run is not None]
        times: dict[str, list[float]] = {row.label: [] for row in measured}
        try:
            for _ in range(args.repeats):
                for row in measured:
                    times[row.label].append(row.run(setting))
            if not args.no_lab:
                times |= in_jupyterlab(setting, args.repeats + 1, Path(tmp) / "lab.log")
        finally:
            if setting.service is not None:
                setting.service.stop()
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
        if not times.get(row.label):
            print(f"| {row.label} | not measured (--no-lab) | | |")
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
