"""Grade one synthetic class every way the course can, and time each against plain nbgrader.

    .venv/bin/python benchmarks/grade_class.py [--submissions 100] [--units 01-08|all]
                                               [--jobs 2] [--workers 2]
                                               [--ways default serial cold local dask postgres]

The class has ``--submissions`` synthetic submissions spread evenly over ``--units``:
assignments 01-08 by default (so that new units do not move the baseline), or ``all`` of them
(a class over every unit with a few submissions each: 72 gives six per unit); profiles right,
mistakes, blank, mixed, tamper in turn. Each way's wall time is printed with the machine's
load average (1 min) before and after it: on a shared machine a ratio is only as good as
the load was even.
In one run, copies of the same course (same secret, so the same hidden inputs) are graded:

- ``default``: by plain serial nbgrader with nbgrader's DEFAULT pipeline (a config that only
  names the course: the tests run in the student's kernel, no judge, no sandbox): for each
  assignment `nbgrader autograde` + `generate_feedback`, then one `nbgrader export`;
- ``serial_cold``: the same commands with the course's nbgrader_config.py (the same judge and
  sandbox as every other way) with warm kernels off: a cold kernel per notebook, as the
  course graded before warm kernels;
- ``serial``: the same with the course's nbgrader_config.py as it is (warm kernels from each
  command's second notebook on);
- ``cold``: by `autograd-course grade --jobs N` with warm kernels off
  (``c.JudgedExecute.warm_kernels = False``), into SQLite;
- ``local``: by `autograd-course grade --jobs N` (warm kernels: the course's default), into
  SQLite;
- ``dask``: by `autograd-course grade --scheduler` on a Dask LocalCluster of ``--workers``
  worker processes, into SQLite;
- ``postgres``: by `autograd-course grade --jobs N` into a PostgreSQL server (Debian's,
  started here with fsync on, as in production).

Each way starts from a course whose gradebook knows the assignments (plain nbgrader's by
``nbgrader generate_assignment``, the others' as ``autograd-course release`` leaves it), not
timed; what ``grade`` prepares for its workers (:func:`.runner.bundle_for`) is timed.

Every way must give the same scores as ``serial``; ``default`` (whose tests a tampering
student can fool) must give them for the right and the blank students. With ``dask`` it then
measures the per-submission cost of the cluster path (the task's and the outcome's
serialisation, the scheduler round trip with the task's payload), the main process's merge of
one graded submission into each gradebook, and a worker's time to grade one submission; and
extrapolates these to a MOOC. Where one submission's time goes, and the floor, are
``benchmarks/grade_stages.py``'s.
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
ALL_UNITS = Course.load(ROOT).assignments()
UNIT_SETS = {"01-08": [u for u in ALL_UNITS if u[:2] <= "08"], "all": ALL_UNITS}
MOOC_STUDENTS, MOOC_ASSIGNMENTS = 10_000, 8
WAYS = ("default", "serial_cold", "serial", "cold", "local", "dask", "postgres")
#: nbgrader's own pipeline: a config that names the course and its exchange, nothing else.
DEFAULT_CONFIG = """c = get_config()
c.CourseDirectory.course_id = "autograd-course"
c.Exchange.root = {exchange!r}
"""


def timed(args: list[str], cwd: Path) -> float:
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    start = time.perf_counter()
    done = subprocess.run(args, cwd=cwd, capture_output=True, text=True,
                          env=dict(os.environ, PATH=path))
    if done.returncode:
        sys.exit(f"{' '.join(args[2:])} failed in {cwd}:\n{done.stderr[-3000:]}")
    return time.perf_counter() - start


def build(base: Path, submissions: int, units: list[str]) -> Path:
    """A course with ``units`` and ``submissions`` submissions spread over them."""
    serial = classes.make_course(base / "serial", ROOT, list(units))
    per_unit = math.ceil(submissions / len(units))
    for index, unit in enumerate(units):
        count = max(0, min(per_unit, submissions - index * per_unit))
        classes.submit_class(serial, unit, synthetic.cycle_profiles(count), seed=index)
    return serial


def submitted(course: Path) -> list[str]:
    """The assignments the class handed in (a small class may leave some out)."""
    return [u for u in ALL_UNITS if list(course.glob(f"submitted/*/{u}"))]


def scores(course: Path, students: set[str] | None = None) -> dict:
    """Each assignment's scores by student (only ``students``, if given)."""
    return {unit: {s: v for s, v in classes.gradebook_scores(course, unit).items()
                   if students is None or s in students} for unit in submitted(course)}


def plain_nbgrader(course: Path) -> float:
    """Seconds for serial nbgrader to autograde, give feedback on, and export the class."""
    here = [sys.executable, "-m"]
    start = time.perf_counter()
    for unit in submitted(course):
        for step in ("autograde", "generate_feedback"):
            timed(here + ["nbgrader", step, unit, "--force"], course)
    timed(here + ["nbgrader", "export"], course)
    return time.perf_counter() - start


def released_course(serial: Path, dest: Path, units: list[str], extra: str = "") -> Path:
    """A copy of the class for ``autograd-course grade`` (``extra`` added to its config) whose
    gradebook knows its assignments, as a course that released them does (not timed, as
    plain nbgrader's ``generate_assignment``; ``grade`` would do it in a course that did
    not)."""
    course = classes.copy_course(serial, dest, extra)
    for unit in units:
        gradebook.register(Course.load(course), unit,
                           gradebook.cells(Course.load(serial).db_url, unit))
    return course


def plain_course(serial: Path, dest: Path, units: list[str], config: str | None = None,
                 extra: str = "") -> Path:
    """A copy of the class for plain nbgrader, with its nbgrader_config.py replaced by
    ``config`` or added ``extra``, and its assignments generated into its gradebook (not
    timed)."""
    course = classes.copy_course(serial, dest, extra)
    if config is not None:
        (course / "nbgrader_config.py").write_text(config)
    for unit in units:
        timed([sys.executable, "-m", "nbgrader", "generate_assignment", unit, "--force"], course)
    return course


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
    parser.add_argument("--units", choices=UNIT_SETS, default="01-08",
                        help="the assignments the class is spread over")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--workers", type=int, default=2, help="Dask LocalCluster workers")
    parser.add_argument("--ways", nargs="+", choices=WAYS, default=list(WAYS))
    args = parser.parse_args()
    ways = ["serial", *[w for w in WAYS if w in args.ways and w != "serial"]]
    n, here, units = args.submissions, [sys.executable, "-m"], UNIT_SETS[args.units]
    grade = here + ["autograd_course", "grade", "--jobs", str(args.jobs)]
    with tempfile.TemporaryDirectory(prefix="grade-bench-") as tmp:
        base = Path(tmp)
        serial = build(base, n, units)
        profiles = dict(synthetic.cycle_profiles(n))
        plain_students = {s for s, p in profiles.items() if p in ("right", "blank")}
        courses = {"serial": serial}
        wall, same = {}, {}
        for way in ways[1:]:
            cold = "\nc.JudgedExecute.warm_kernels = False\n"
            if way == "default":
                (base / "exchange").mkdir()
                courses[way] = plain_course(serial, base / way, units, DEFAULT_CONFIG.format(
                    exchange=str(base / "exchange")))
            elif way == "serial_cold":
                courses[way] = plain_course(serial, base / way, units, extra=cold)
            else:
                courses[way] = released_course(serial, base / way, units,
                                               cold if way == "cold" else "")
        load = {}  # way -> the load average (1 min) before and after it

        def measured(way: str, run) -> None:
            before = os.getloadavg()[0]
            wall[way] = run()
            load[way] = (before, os.getloadavg()[0])

        measured("serial", lambda: plain_nbgrader(serial))
        reference = scores(serial)
        if "serial_cold" in ways:
            measured("serial_cold", lambda: plain_nbgrader(courses["serial_cold"]))
            same["serial_cold"] = scores(courses["serial_cold"]) == reference
        if "default" in ways:
            measured("default", lambda: plain_nbgrader(courses["default"]))
            same["default"] = scores(courses["default"], plain_students) == scores(
                serial, plain_students)
        for way in ("cold", "local"):
            if way in ways:
                measured(way, lambda way=way: timed(grade, courses[way]))
        costs = merge = None
        if "dask" in ways:
            from distributed import LocalCluster

            with LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                              dashboard_address=None, memory_limit=0) as cluster:
                measured("dask", lambda: timed(here + ["autograd_course", "grade", "--scheduler",
                                                       cluster.scheduler_address],
                                               courses["dask"]))
                sample = [Submission(s.student, s.assignment) for s in
                          Course.load(serial).submissions(units)][::max(1, n // 16)][:16]
                costs = cluster_costs(Course.load(serial), cluster.scheduler_address, sample)
            merge = merge_costs(serial, base, sample, units)
        if "postgres" in ways:
            with Postgres(durable=True) as server:
                url = server.create_database("bench")
                courses["postgres"] = released_course(
                    serial, base / "postgres-course", units,
                    f'\nc.CourseDirectory.db_url = "{url}"\n')
                measured("postgres", lambda: timed(grade, courses["postgres"]))
                same["postgres"] = scores(courses["postgres"]) == reference
        for way in ("cold", "local", "dask"):
            if way in ways:
                same[way] = scores(courses[way]) == reference
        records = len(list((serial / STORE).glob("*/*/*.json")))

    print(f"machine: {os.cpu_count()} cores; {n} submissions over {len(units)} assignments "
          f"({units[0]} to {units[-1]}; {records} graded notebooks); --jobs {args.jobs}; "
          f"{args.workers} Dask workers\n")
    labels = {
        "default": "plain nbgrader, nbgrader's DEFAULT pipeline, serial",
        "serial_cold": "plain nbgrader, the course's config, cold kernels, serial",
        "serial": "plain nbgrader, the course's config (warm kernels), serial",
        "cold": f"autograd-course grade --jobs {args.jobs}, cold kernels",
        "local": f"autograd-course grade --jobs {args.jobs}, warm kernels",
        "dask": f"autograd-course grade --scheduler ({args.workers} workers), warm",
        "postgres": f"autograd-course grade --jobs {args.jobs}, PostgreSQL (fsync on)"}
    bases = [b for b in ("default", "serial_cold", "serial") if b in wall]
    print("| how | wall | per submission | " + " | ".join(f"vs {b}" for b in bases)
          + " | scores | load before, after |\n|---|---:|---:|" + "---:|" * len(bases)
          + "---|---|")
    for way in [w for w in WAYS if w in wall]:
        verdict = "reference" if way == "serial" else (
            "same for right and blank" if way == "default" and same[way] else
            "same" if same[way] else "DIFFERENT")
        ratios = " | ".join(f"{wall[b] / wall[way]:.2f}x" for b in bases)
        print(f"| {labels[way]} | {wall[way]:.1f} s | {wall[way] / n:.2f} s | {ratios} | "
              f"{verdict} | {load[way][0]:.1f}, {load[way][1]:.1f} |")
    if costs:
        report_costs(costs, merge)


def merge_costs(serial: Path, base: Path, sample: list[Submission], units: list[str]) -> dict:
    """The main process's seconds to merge one graded submission, into SQLite and into
    PostgreSQL."""
    merge = {}
    with Postgres(durable=True) as server:
        merge_url = server.create_database("merge")
        merge_pg = released_course(serial, base / "merge_pg", units,
                                   f'\nc.CourseDirectory.db_url = "{merge_url}"\n')
        merge["postgres"] = merge_seconds(Course.load(serial), Course.load(merge_pg), sample)
    merge_sqlite = released_course(serial, base / "merge_sqlite", units)
    merge["sqlite"] = merge_seconds(Course.load(serial), Course.load(merge_sqlite), sample)
    return merge


def report_costs(c: dict, merge: dict) -> None:
    """The cluster path's costs per submission, and the MOOC extrapolation."""
    print("\nper submission, the cluster path (medians):")
    print(f"  task (the submission's files) pickled: {c['task_kib']:.1f} KiB, dumps "
          f"{c['dumps'] * 1e3:.2f} ms + loads {c['loads'] * 1e3:.2f} ms")
    print(f"  outcome (grades, autograded/, feedback/) pickled: {c['outcome_kib']:.1f} KiB")
    print(f"  scheduler round trip: empty task {c['empty_trip'] * 1e3:.1f} ms; with the "
          f"task's files {c['task_trip'] * 1e3:.1f} ms")
    print(f"  once per run: prepare its bundle ({c['assignments']} assignments) "
          f"{c['prepare']:.2f} s, {c['bundle_kib']:.0f} KiB sent to every worker once")
    print(f"  a worker grades one submission in {c['worker']:.2f} s (one core, warm)")
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
