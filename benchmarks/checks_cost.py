"""What the grader's defences cost per submission: this checkout's grader against another's.

    .venv/bin/python benchmarks/checks_cost.py --before /tmp/before [--submissions 24]

``--before`` is a checkout of an earlier grader (a worktree: ``git worktree add /tmp/before
COMMIT``). The same class, of reference and blank submissions of assignments 01, 03, 06 and 07
taken from the earlier checkout's source/ (so both graders grade the same questions), is
graded by `autograd-course grade --jobs N` with each checkout's package and config
(``PYTHONPATH``), in ``--rounds`` interleaved rounds on this machine. Prints each grader's
median seconds per submission and their ratio; the scores must be the same.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from autograd_course.testkit import classes

ROOT = Path(__file__).resolve().parent.parent
UNITS = ["01_gradients", "03_accumulation", "06_cost", "07_engine"]


def course(folder: Path, checkout: Path, before: Path, n: int) -> Path:
    """The class, with ``checkout``'s config and ``before``'s assignments."""
    import shutil

    (folder / "source").mkdir(parents=True)
    for unit in UNITS:
        shutil.copytree(before / "source" / unit, folder / "source" / unit)
    config = (checkout / "nbgrader_config.py").read_text()
    classes.make_course(folder, folder, UNITS, config=config)
    for i in range(n):
        unit = UNITS[i % len(UNITS)]
        source = folder / "source" / unit / f"{unit}.ipynb"
        release = folder / "release" / unit / f"{unit}.ipynb"
        answers = classes.reference_answers(source) if i % 2 == 0 else {}
        classes.submit(folder, f"s{i:03d}", unit, unit, classes.fill(release, answers))
    return folder


def run(args: list[str], cwd: Path, checkout: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(checkout), PYTHONWARNINGS="ignore",
               PATH=os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]]))
    done = subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True,
                          text=True)
    if done.returncode != 0:
        raise SystemExit(f"{args} failed in {cwd}:\n{done.stderr[-2000:]}")
    return done


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, required=True)
    parser.add_argument("--submissions", type=int, default=24)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args()
    graders = {"before": args.before.resolve(), "after": ROOT}
    times: dict[str, list[float]] = {name: [] for name in graders}
    scores: dict[str, dict] = {}
    with tempfile.TemporaryDirectory(prefix="checks-cost-") as tmp:
        for r in range(args.rounds):
            order = list(graders) if r % 2 == 0 else list(reversed(graders))
            for name in order:
                folder = course(Path(tmp) / f"{name}{r}", graders[name], graders["before"],
                                args.submissions)
                start = time.perf_counter()
                run(["-m", "autograd_course", "grade", "--jobs", str(args.jobs)], folder,
                    graders[name])
                times[name].append((time.perf_counter() - start) / args.submissions)
                scores[name] = {unit: classes.gradebook_scores(folder, unit) for unit in UNITS}
    print(f"machine: {os.cpu_count()} cores; --jobs {args.jobs}; {args.submissions} "
          f"submissions over {', '.join(UNITS)}; {args.rounds} interleaved rounds")
    for name, checkout in graders.items():
        print(f"{name:>6} ({checkout}): {statistics.median(times[name]):.2f} s per submission "
              f"(rounds: {', '.join(f'{t:.2f}' for t in times[name])})")
    ratio = statistics.median(times["after"]) / statistics.median(times["before"])
    same = "identical" if scores["after"] == scores["before"] else "DIFFER"
    print(f"after / before: {ratio:.2f}; scores {same}")


if __name__ == "__main__":
    main()
