"""Grade one synthetic class every way the course can, and time each against plain nbgrader.

    .venv/bin/python benchmarks/grade_class.py [--submissions 100] [--jobs 2] [--workers 2]

The class has ``--submissions`` synthetic submissions spread over every assignment (profiles
right, mistakes, blank, mixed, tamper in turn). In one run, copies of the same course (same
secret, so the same hidden inputs) are graded:

- by plain serial nbgrader: for each assignment `nbgrader autograde` + `generate_feedback`,
  then one `nbgrader export`, with the course's nbgrader_config.py (the same judge and
  sandbox): the baseline of every ratio;
- by `autograd-course grade --jobs N` (local processes) into SQLite;
- by `autograd-course grade --scheduler` on a Dask LocalCluster of ``--workers`` worker
  processes, into SQLite;
- by `autograd-course grade --jobs N` into a PostgreSQL server (Debian's, started here with
  fsync on, as in production).

Every way must give the serial scores. Then it measures the per-submission cost of the
cluster path (the task's and the outcome's serialisation, the scheduler round trip with the
task's payload), the main process's merge of one graded submission into each gradebook, and
a worker's time to grade one submission; and extrapolates these to a MOOC.
"""

from __future__ import annotations

import argparse
import math
import os
import pickle
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import cloudpickle

from autograd_course.grading import gradebook, runner, tasks
from autograd_course.grading.course import Course, Submission
from autograd_course.grading.record import STORE
from autograd_course.testkit import classes, synthetic
from autograd_course.testkit.postgres import Postgres

ROOT = Path(__file__).resolve().parent.parent
UNITS = Course.load(ROOT).assignments()
MOOC_STUDENTS, MOOC_ASSIGNMENTS = 10_000, 8


def floor(repeats: int = 3) -> float:
    """Seconds to start a sandboxed grading kernel, import torch in it and stop it."""
    from jupyter_client.kernelspec import KernelSpec
    from jupyter_core.utils import run_sync

    from autograd_course.grading import kernel, sandbox

    times = []
    for _ in range(repeats):
        with tempfile.TemporaryDirectory() as tmp:
            work, ipc = sandbox.prepare_folders(Path(tmp))
            argv, _ = sandbox.kernel_command(work, ipc, [ROOT], sandbox.Limits())
            spec = KernelSpec(argv=argv, language="python", interrupt_mode="message")
            start = time.perf_counter()
            manager = kernel.GradingKernelManager(
                kernel_name="k", kernel_spec_manager=kernel.OneKernelSpec(spec),
                transport="ipc", ip=str(ipc / "kernel"), connection_file=str(ipc / "k.json"))
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
    done = subprocess.run(args, cwd=cwd, capture_output=True, text=True,
                          env=dict(os.environ, PATH=path))
    if done.returncode:
        sys.exit(f"{' '.join(args[2:])} failed in {cwd}:\n{done.stderr[-3000:]}")
    return time.perf_counter() - start


def build(base: Path, submissions: int) -> Path:
    """A course with every assignment and ``submissions`` submissions spread over them."""
    serial = classes.make_course(base / "serial", ROOT, list(UNITS))
    per_unit = math.ceil(submissions / len(UNITS))
    for index, unit in enumerate(UNITS):
        count = max(0, min(per_unit, submissions - index * per_unit))
        classes.submit_class(serial, unit, synthetic.cycle_profiles(count), seed=index)
    return serial


def scores(course: Path) -> dict:
    return {unit: classes.gradebook_scores(course, unit) for unit in UNITS}


# -- the parts of one submission's cost --------------------------------------------------------
def outcome_of(course: Course, submission: Submission) -> tasks.Outcome:
    """A graded submission as a worker returns it, rebuilt from a graded course."""
    outcome = tasks.Outcome(submission, True, tasks.make_task(course, submission).digest)
    with course.gradebook() as gb:
        found = gb.find_submission(submission.assignment, submission.student)
        for notebook in found.notebooks:
            outcome.grades += [dict(notebook=notebook.name, cell=g.name, auto_score=g.auto_score,
                                    needs_manual_grade=g.needs_manual_grade)
                               for g in notebook.grades]
            outcome.comments += [dict(notebook=notebook.name, cell=c.name,
                                      auto_comment=c.auto_comment) for c in notebook.comments]
    outcome.autograded = tasks.read_files(course.directory(
        "autograded", submission.student, submission.assignment))
    outcome.feedback = tasks.read_files(course.directory(
        "feedback", submission.student, submission.assignment))
    return outcome


def merge_seconds(graded: Course, into: Course, sample: list[Submission]) -> float:
    """Median seconds for the main process to merge one graded submission into ``into``."""
    outcomes = [outcome_of(graded, s) for s in sample]
    times = []
    with gradebook.Writer(into) as writer:
        for outcome in outcomes:
            start = time.perf_counter()
            writer.merge(outcome)
            times.append(time.perf_counter() - start)
    return statistics.median(times)


def _payload(task: tasks.Task, bundle: tasks.Bundle) -> int:
    return len(task.files) + len(bundle.archive)


def _grade_timed(task: tasks.Task, bundle: tasks.Bundle) -> tuple[tasks.Outcome, float]:
    start = time.perf_counter()
    outcome = tasks.grade(task, bundle)
    return outcome, time.perf_counter() - start


def cluster_costs(course: Course, address: str, sample: list[Submission]) -> dict:
    """The cluster path's cost per submission, and a worker's seconds to grade one."""
    from distributed import Client, wait

    todo = [tasks.make_task(course, s) for s in sample]
    started = time.perf_counter()
    assignments = sorted({s.assignment for s in sample})
    bundle = runner.bundle_for(course, assignments, {})
    prepare = time.perf_counter() - started
    dumps, loads = [], []
    for task in todo:
        start = time.perf_counter()
        data = cloudpickle.dumps(task)
        dumps.append(time.perf_counter() - start)
        start = time.perf_counter()
        pickle.loads(data)
        loads.append(time.perf_counter() - start)
    with Client(address) as client:
        shipped = client.scatter(bundle, broadcast=True, hash=False)
        empty = []
        for _ in range(20):
            start = time.perf_counter()
            client.submit(len, "", pure=False).result()
            empty.append(time.perf_counter() - start)
        trips = []
        for task in todo * 2:  # the task's files travel; the bundle is on the worker already
            start = time.perf_counter()
            client.submit(_payload, task, shipped, pure=False).result()
            trips.append(time.perf_counter() - start)
        graded = [client.submit(_grade_timed, t, shipped, pure=False) for t in todo]
        wait(graded)
        results = [f.result() for f in graded]
    outcome_bytes = [len(cloudpickle.dumps(o)) for o, _ in results]
    return dict(
        prepare=prepare, assignments=len(assignments), bundle_kib=len(bundle.archive) / 1024,
        task_kib=statistics.median(len(cloudpickle.dumps(t)) for t in todo) / 1024,
        outcome_kib=statistics.median(outcome_bytes) / 1024, dumps=statistics.median(dumps),
        loads=statistics.median(loads), empty_trip=statistics.median(empty),
        task_trip=statistics.median(trips), worker=statistics.median(s for _, s in results))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--submissions", type=int, default=100)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--workers", type=int, default=2, help="Dask LocalCluster workers")
    args = parser.parse_args()
    from distributed import LocalCluster

    n, here = args.submissions, [sys.executable, "-m"]
    kernel_floor = floor()
    with tempfile.TemporaryDirectory(prefix="grade-bench-") as tmp:
        base = Path(tmp)
        serial = build(base, n)
        local = classes.copy_course(serial, base / "local")
        on_cluster = classes.copy_course(serial, base / "dask")
        wall = {}
        start = time.perf_counter()
        for unit in UNITS:
            for step in ("autograde", "generate_feedback"):
                timed(here + ["nbgrader", step, unit, "--force"], serial)
        timed(here + ["nbgrader", "export"], serial)
        wall["serial"] = time.perf_counter() - start
        reference = scores(serial)
        wall["local"] = timed(here + ["autograd_course", "grade", "--jobs", str(args.jobs)], local)
        with LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                          dashboard_address=None, memory_limit=0) as cluster:
            wall["dask"] = timed(here + ["autograd_course", "grade", "--scheduler",
                                         cluster.scheduler_address], on_cluster)
            sample = [Submission(s.student, s.assignment) for s in
                      Course.load(serial).submissions(UNITS)][::max(1, n // 16)][:16]
            costs = cluster_costs(Course.load(serial), cluster.scheduler_address, sample)
        with Postgres(durable=True) as server:
            url = server.create_database("bench")
            postgres = classes.copy_course(serial, base / "postgres",
                                   f'\nc.CourseDirectory.db_url = "{url}"\n')
            wall["postgres"] = timed(here + ["autograd_course", "grade", "--jobs",
                                             str(args.jobs)], postgres)
            same = {way: scores(course) == reference for way, course in
                    (("local", local), ("dask", on_cluster), ("postgres", postgres))}
            merge_url = server.create_database("merge")
            merge_pg = classes.copy_course(serial, base / "merge_pg",
                                   f'\nc.CourseDirectory.db_url = "{merge_url}"\n')
            for unit in UNITS:
                gradebook.register(Course.load(merge_pg), unit, gradebook.cells(
                    Course.load(serial).db_url, unit))
            merge = {"postgres": merge_seconds(Course.load(serial), Course.load(merge_pg), sample)}
        merge_sqlite = classes.copy_course(serial, base / "merge_sqlite")
        for unit in UNITS:
            gradebook.register(Course.load(merge_sqlite), unit,
                               gradebook.cells(Course.load(serial).db_url, unit))
        merge["sqlite"] = merge_seconds(Course.load(serial), Course.load(merge_sqlite), sample)
        records = len(list((serial / STORE).glob("*/*/*.json")))

    print(f"machine: {os.cpu_count()} cores; {n} submissions over {len(UNITS)} assignments "
          f"({records} graded notebooks); --jobs {args.jobs}; {args.workers} Dask workers")
    print(f"floor (start a sandboxed kernel + import torch): {kernel_floor:.2f} s\n")
    print(f"{'how':58} {'wall':>8} {'per sub':>8} {'vs nbgrader':>11}  scores")
    rows = [("serial", "plain nbgrader, serial (autograde + feedback + export)"),
            ("local", f"autograd-course grade --jobs {args.jobs}, SQLite"),
            ("dask", f"autograd-course grade --scheduler ({args.workers} workers), SQLite"),
            ("postgres", f"autograd-course grade --jobs {args.jobs}, PostgreSQL (fsync on)")]
    for way, label in rows:
        verdict = "reference" if way == "serial" else (
            "same" if same[way] else "DIFFERENT")
        print(f"{label:58} {wall[way]:7.1f}s {wall[way] / n:7.2f}s "
              f"{wall['serial'] / wall[way]:10.2f}x  {verdict}")
    c = costs
    print("\nper submission, the cluster path (medians):")
    print(f"  task (the submission's files) pickled: {c['task_kib']:.1f} KiB, dumps "
          f"{c['dumps'] * 1e3:.2f} ms + loads {c['loads'] * 1e3:.2f} ms")
    print(f"  outcome (grades, autograded/, feedback/) pickled: {c['outcome_kib']:.1f} KiB")
    print(f"  scheduler round trip: empty task {c['empty_trip'] * 1e3:.1f} ms; with the "
          f"task's files {c['task_trip'] * 1e3:.1f} ms")
    print(f"  once per run: prepare its bundle ({c['assignments']} assignments) "
          f"{c['prepare']:.2f} s, {c['bundle_kib']:.0f} KiB sent to every worker once")
    print(f"  a worker grades one submission in {c['worker']:.2f} s (one core)")
    print(f"  the main process merges one: SQLite {merge['sqlite'] * 1e3:.0f} ms, "
          f"PostgreSQL {merge['postgres'] * 1e3:.0f} ms")

    total = MOOC_STUDENTS * MOOC_ASSIGNMENTS
    main_cost = merge["postgres"] + c["dumps"] + c["loads"]  # serial, in the main process
    limit = c["worker"] / main_cost
    print(f"\nextrapolation: {MOOC_STUDENTS:,} students x {MOOC_ASSIGNMENTS} assignments = "
          f"{total:,} submissions, PostgreSQL, N one-core workers")
    print(f"  time ~ {total:,} x max({c['worker']:.2f} s / N, {main_cost * 1e3:.0f} ms in the "
          f"main process); the main process is the limit beyond N ~ {limit:.0f}")
    for workers in (2, 16, 64, 256, 1024):
        hours = total * max(c["worker"] / workers, main_cost) / 3600
        print(f"  N = {workers:5d}: {hours:7.1f} h")


if __name__ == "__main__":
    main()
