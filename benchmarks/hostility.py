"""What one hostile student costs a class: its wall time with each cost attack, and without.

    .venv/bin/python benchmarks/hostility.py [--honest 8] [--jobs 2]

A toy class (tests/fixtures/make_toy.py) of ``--honest`` right answers is graded by
`autograd-course grade --jobs N` with the course's own nbgrader_config.py (its real limits:
Execute.timeout 60 s, notebook_seconds 110 s...), once alone and once with each attacker of
tests/fixtures/hostile_class.py that spends the grader's time, memory or processes, in one
run. Prints, per attack, the class's wall time, the extra time the attacker cost, how long
its own notebook took (its grade record's ``seconds``), the grading process's own CPU
seconds, and whether every honest student kept full marks.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from support.toy import hostile_class, make_toy  # noqa: E402

from autograd_course.testkit import classes  # noqa: E402

ATTACKS = ["attack_sleeping", "attack_forged_reply", "attack_structure_flood",
           "attack_process_flood", "attack_fill_disk", "attack_output_flood", "many_cells",
           "attack_module_records", "attack_socket_memory", "attack_ansi_output",
           "attack_keyring", "attack_live_pages"]


def make(folder: Path, students: list[str]) -> Path:
    """A toy course with the course's own config (no test limits) and these students."""
    import nbformat

    (folder / "source" / "toy").mkdir(parents=True)
    nbformat.write(make_toy.toy_notebook(), folder / "source" / "toy" / "toy.ipynb")
    classes.make_course(folder, folder, ["toy"], config=(ROOT / "nbgrader_config.py").read_text())
    release = folder / "release" / "toy" / "toy.ipynb"
    for student in students:
        case = "right" if student.startswith("honest") else student
        hostile_class.write(folder / "submitted" / student / "toy", case,
                            lambda a: classes.fill(release, a))
    return folder


def _grader_cpu(process: psutil.Process) -> float:
    """CPU seconds of the grading processes so far: the main one and its workers, not the
    students' kernels (nor the sandbox's launchers)."""
    total = 0.0
    for p in [process, *process.children(recursive=True)]:
        try:
            if any(k in " ".join(p.cmdline()) for k in ("ipykernel", "bwrap", "setpriv")):
                continue
            times = p.cpu_times()
            total += times.user + times.system
        except psutil.Error:
            pass
    return total


def grade(course: Path, jobs: int) -> tuple[float, float]:
    """Wall seconds of `autograd-course grade`, and the grading processes' CPU seconds (the
    main process and its workers, not the students' kernels)."""
    env = dict(os.environ, PATH=os.pathsep.join([str(Path(sys.executable).parent),
                                                 os.environ["PATH"]]))
    start = time.perf_counter()
    process = subprocess.Popen([sys.executable, "-m", "autograd_course", "grade", "--jobs",
                                str(jobs)], cwd=course, env=env, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    watched, cpu = psutil.Process(process.pid), 0.0
    while process.poll() is None:
        cpu = max(cpu, _grader_cpu(watched))
        time.sleep(0.2)
    return time.perf_counter() - start, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--honest", type=int, default=8)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args()
    honest = [f"honest{i:02d}" for i in range(args.honest)]
    print(f"machine: {os.cpu_count()} cores; --jobs {args.jobs}; {args.honest} honest students "
          "(toy assignment, 4 points); the course's own limits")
    print(f"{'class':<24} {'wall s':>7} {'extra s':>8} {'its notebook s':>15} "
          f"{'grader CPU s':>13}  honest full marks")
    with tempfile.TemporaryDirectory(prefix="hostility-") as tmp:
        baseline = None
        for attack in [None, *ATTACKS]:
            students = honest + ([attack] if attack else [])
            course = make(Path(tmp) / (attack or "honest"), students)
            wall, cpu = grade(course, args.jobs)
            scores = classes.gradebook_scores(course, "toy")
            kept = all(scores.get(s) == 4 for s in honest)
            own = (classes.grade_record(course, attack, "toy").seconds if attack else None)
            baseline = wall if attack is None else baseline
            extra = "" if attack is None else f"{wall - baseline:+.1f}"
            print(f"{attack or 'honest students only':<24} {wall:7.1f} {extra:>8} "
                  f"{'' if own is None else f'{own:.1f}':>15} {cpu:13.1f}  "
                  f"{'yes' if kept else 'NO'}", flush=True)


if __name__ == "__main__":
    main()
