"""Where one submission's grading time goes, by stage, with cold kernels and with warm ones.

    .venv/bin/python benchmarks/grade_stages.py [--per-unit 3] [--units 01_gradients ...]

One process grades the same submissions (``--per-unit`` of each assignment 01-08, profiles
right, mistakes, blank... in turn) twice, as one grading worker does (``tasks.grade``): with
``c.JudgedExecute.warm_kernels`` off (a new sandboxed Python per notebook) and on (a kernel
forked from the worker's zygote), interleaved submission by submission. Each stage is timed
by wrapping the method that does it:

- kernel start: nbclient's start of the kernel, to its first reply (``kernel_info``);
- first cell: the notebook's first code cell (``import torch`` and the course's helpers);
- other cells: every other cell that runs in the kernel (the answers, the student's own);
- judge calls: the test cells and the locked cells, run by the judge, with its calls into
  the kernel, and the reading back of the files the notebook wrote;
- feedback: ``generate_feedback`` (nbgrader's second pass and the HTML);
- nbgrader and the rest: what ``tasks.grade`` spends otherwise (nbgrader's own steps, the
  gradebook, the course's sanitisers, reading the results).

It prints the mean seconds per submission of each stage, its share, and the floor: the
kernel's own stages with warm kernels (fork, sandbox and cells), which no grader of a
sandboxed kernel per notebook avoids. The zygote's own start, once per worker, is printed
apart. Figures, not a test: run it on an idle machine.
"""

from __future__ import annotations

import argparse
import functools
import inspect
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from autograd_course.grading import runner, tasks
from autograd_course.grading.boundary import judge, warm
from autograd_course.grading.course import Course, Submission
from autograd_course.grading.preprocessors import JudgedExecute
from autograd_course.testkit import classes, synthetic

ROOT = Path(__file__).resolve().parent.parent
UNITS = [u for u in Course.load(ROOT).assignments() if u[:2] <= "08"]
STAGES = ("kernel start", "first cell", "other cells", "judge calls", "feedback",
          "nbgrader and the rest")

_spent: dict[str, float] = defaultdict(float)
_first_cell_done: list[bool] = [False]


def _timed(stage, method):
    """``method`` wrapped to add its seconds to ``stage`` (a name, or a function of the call's
    arguments that gives one)."""
    def account(args, seconds):
        name = stage(*args) if callable(stage) else stage
        _spent[name] += seconds

    if inspect.iscoroutinefunction(method):
        @functools.wraps(method)
        async def wrapper(*args, **kwargs):
            start = time.perf_counter()
            try:
                return await method(*args, **kwargs)
            finally:
                account(args, time.perf_counter() - start)
    else:
        @functools.wraps(method)
        def wrapper(*args, **kwargs):
            start = time.perf_counter()
            try:
                return method(*args, **kwargs)
            finally:
                account(args, time.perf_counter() - start)
    return wrapper


def _cell_stage(self, cell, resources, index) -> str:
    if cell.cell_type != "code" or _first_cell_done[0]:
        return "other cells"
    _first_cell_done[0] = True
    return "first cell"


def instrument() -> None:
    """Wrap the methods that do each stage (in this process only)."""
    from nbgrader.apps import NbGraderAPI
    from nbgrader.preprocessors import Execute

    for name in ("start_new_kernel", "start_new_kernel_client"):  # what nbconvert calls
        setattr(JudgedExecute, name, _timed("kernel start", getattr(JudgedExecute, name)))
    for name in ("run_test", "run_locked", "files"):  # the judge, and its calls to the kernel
        setattr(judge.Session, name, _timed("judge calls", getattr(judge.Session, name)))
    # nbclient's running of one cell (the judge's test cells never reach it)
    Execute.preprocess_cell = _timed(_cell_stage, Execute.preprocess_cell)
    NbGraderAPI.generate_feedback = _timed("feedback", NbGraderAPI.generate_feedback)


def build(base: Path, per_unit: int, units: list[str]) -> tuple[Path, list[Submission]]:
    course = classes.make_course(base / "course", ROOT, units)
    for index, unit in enumerate(units):
        classes.submit_class(course, unit, synthetic.cycle_profiles(per_unit), seed=index)
    return course, [Submission(s.student, s.assignment)
                    for s in Course.load(course).submissions(units)]


def grade_one(task: tasks.Task, bundle: tasks.Bundle) -> dict[str, float]:
    """One submission graded as a worker does; the seconds of each stage."""
    _spent.clear()
    _first_cell_done[0] = False
    start = time.perf_counter()
    outcome = tasks.grade(task, bundle)
    total = time.perf_counter() - start
    if not outcome.ok:
        sys.exit(f"{task.submission} could not be graded: {outcome.error[-2000:]}")
    stages = dict.fromkeys(STAGES, 0.0) | _spent
    stages["nbgrader and the rest"] = total - sum(_spent.values())
    stages["total"] = total
    return stages


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-unit", type=int, default=3)
    parser.add_argument("--units", nargs="*", default=UNITS)
    args = parser.parse_args()
    instrument()
    with tempfile.TemporaryDirectory(prefix="grade-stages-") as tmp:
        course_path, submissions = build(Path(tmp), args.per_unit, args.units)
        course = Course.load(course_path)
        bundles = {warm_on: runner.bundle_for(course, args.units, {"warm_kernels": warm_on})
                   for warm_on in (False, True)}
        todo = [tasks.make_task(course, s) for s in submissions]
        # the first of each way warms the process (imports, the judge's thread, the zygote's
        # start): not counted
        for warm_on in (False, True):
            grade_one(todo[0], bundles[warm_on])
        if not warm._zygotes:
            sys.exit(f"no warm kernels here: {warm._unavailable}")
        [zygote] = warm._zygotes.values()
        rows: dict[bool, list[dict[str, float]]] = {False: [], True: []}
        for task in todo:
            for warm_on in (False, True):
                rows[warm_on].append(grade_one(task, bundles[warm_on]))
        warm.close_all()

    mean = {w: {k: statistics.mean(r[k] for r in rows[w]) for k in (*STAGES, "total")}
            for w in rows}
    print(f"{len(todo)} submissions over {len(args.units)} assignments, graded one at a time "
          f"in one process, cold and warm interleaved; mean seconds per submission")
    print(f"the zygote started (bubblewrap, imports, torch primed) in "
          f"{zygote.ready['wall']:.2f} s, once per worker\n")
    print("| stage | cold | share | warm | share |\n|---|---:|---:|---:|---:|")
    for stage in (*STAGES, "total"):
        cells = []
        for w in (False, True):
            cells += [f"{mean[w][stage]:.3f} s", f"{mean[w][stage] / mean[w]['total']:.0%}"]
        print(f"| {stage} | " + " | ".join(cells) + " |")
    kernel = ("kernel start", "first cell", "other cells", "judge calls")
    floor = sum(mean[True][k] for k in kernel)
    print(f"\nfloor (a warm kernel's own stages: fork, sandbox, cells, judge calls): "
          f"{floor:.3f} s per submission; the whole of grading one, warm: "
          f"{mean[True]['total']:.3f} s ({mean[True]['total'] / floor:.2f}x the floor); cold: "
          f"{mean[False]['total']:.3f} s")
    for unit in args.units:
        mine = [i for i, t in enumerate(todo) if t.submission.assignment == unit]
        cold, hot = (statistics.mean(rows[w][i]["total"] for i in mine) for w in (False, True))
        print(f"  {unit:20} cold {cold:6.2f} s   warm {hot:6.2f} s")

if __name__ == "__main__":
    main()
