"""Grade the hostile class with the grader of a checkout: points and harm per attack, two graders.

    .venv/bin/python benchmarks/attacks.py                     # this checkout
    .venv/bin/python benchmarks/attacks.py --checkout /tmp/old # e.g. a worktree of an old main
    .venv/bin/python benchmarks/attacks.py --only attack_scripts attack_records

The class is tests/fixtures/hostile_class.py on the toy assignment (4 points); every attack
computes no right answer. Each student is graded on its own, in a fresh copy of the course, by
plain ``nbgrader autograde`` (then ``generate_feedback``) and by ``autograd-course grade``,
with the checkout's package and config (``PYTHONPATH``), and the checkout's package is
put back after each one from a copy taken at the start (uncommitted changes included; git is
never used to restore it), so that one attack's damage is not credited to the next.
Prints, per case, the score the course means to give (``honest``) and the score under each
grader ("-" where the grader could not grade it, e.g. because the submission killed it), and
the harm it did under each: the seconds it held the grader and the grading processes' own CPU
seconds, the payloads live in formgrader's view and the feedback (``live``), the extra rows
forged records put into the class report (``forged``), escape codes that reached the
terminal (``esc``).

Warning: an old, unsandboxed grader really runs the attacks: they write into that checkout's
package and into any ``gradebook.db`` they can find under /tmp and /work. Run it on a
throwaway worktree, with nothing else grading on the machine.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import nbformat
import psutil

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "fixtures"))
sys.path.insert(0, str(ROOT / "tests"))

import hostile_class  # noqa: E402
import make_toy  # noqa: E402
import payloads  # noqa: E402
from hostility import _grader_cpu  # noqa: E402
from support.pages import formgrader_html, live_marks  # noqa: E402

from autograd_course.testkit.classes import fill, gradebook_scores  # noqa: E402

LIMITS = {"JudgedExecute": "\nc.Execute.timeout = 8\nc.JudgedExecute.memory_limit_mb = 1500\n",
          "GuardedExecute": "\nc.Execute.timeout = 8\nc.GuardedExecute.memory_limit_mb = 1500\n"}


@dataclass
class Run:
    """One grader's run: its output, seconds and the grading processes' CPU seconds."""

    out: str = ""
    seconds: float = 0.0
    cpu: float = 0.0


def run(args: list[str], cwd: Path, checkout: Path) -> Run:
    env = dict(os.environ, PYTHONPATH=str(checkout), PYTHONWARNINGS="ignore",
               PATH=os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]]))
    start = time.perf_counter()
    with tempfile.TemporaryFile("w+") as output:
        process = subprocess.Popen([sys.executable, *args], cwd=cwd, env=env, stdout=output,
                                   stderr=subprocess.STDOUT, text=True)
        watched, cpu = psutil.Process(process.pid), 0.0
        while process.poll() is None and time.perf_counter() - start < 3600:
            cpu = max(cpu, _grader_cpu(watched))
            time.sleep(0.2)
        if process.poll() is None:
            process.kill()
        output.seek(0)
        return Run(output.read(), time.perf_counter() - start, cpu)


def harm(folder: Path, student: str, graded: Run) -> dict:
    """What the case did besides its points, once graded."""
    live = 0
    notebook = folder / "autograded" / student / "toy" / "toy.ipynb"
    if notebook.exists():
        with contextlib.suppress(Exception):
            live += len(live_marks(formgrader_html(notebook), payloads.MARK))
    page = folder / "feedback" / student / "toy" / "toy.html"
    if page.exists():
        live += len(live_marks(page.read_text(errors="replace"), payloads.MARK))
    report = folder / "reports" / "toy" / "report.csv"
    forged = ""
    if report.exists():
        rows = list(csv.DictReader(report.open()))
        forged = max((int(r["students"]) for r in rows), default=1) - 1
    return {"s": graded.seconds, "cpu": graded.cpu, "live": live, "forged": forged,
            "esc": "\x1b" in graded.out}


def course(folder: Path, checkout: Path, student: str) -> Path:
    """A fresh toy course graded by ``checkout``'s config, with ``student``'s submission."""
    config = (checkout / "nbgrader_config.py").read_text()
    config += LIMITS["JudgedExecute" if "JudgedExecute" in config else "GuardedExecute"]
    (folder / "source" / "toy").mkdir(parents=True)
    nbformat.write(make_toy.toy_notebook(), folder / "source" / "toy" / "toy.ipynb")
    (folder / "nbgrader_config.py").write_text(config)
    made = run(["-m", "nbgrader", "generate_assignment", "toy", "--force"], folder, checkout)
    if not (folder / "release" / "toy" / "toy.ipynb").exists():
        sys.exit(f"{folder}: generate_assignment made no release:\n{made.out[-3000:]}")
    hostile_class.write(folder / "submitted" / student / "toy", student,
                        lambda a: fill(folder / "release" / "toy" / "toy.ipynb", a))
    return folder


def score(folder: Path, student: str) -> str:
    try:
        value = gradebook_scores(folder, "toy").get(student)
    except Exception:  # noqa: BLE001 - no gradebook row: the grader did not finish
        return "-"
    return "-" if value is None else f"{value:g}"


def restore(package: Path, saved: Path) -> None:
    """Undo what an attack wrote into ``package``: each file that differs from ``saved`` (a
    copy taken before any attack ran) is written back, each file it added is removed."""
    for path in package.rglob("*"):
        kept = saved / path.relative_to(package)
        if path.is_file() and "__pycache__" not in path.parts and not kept.exists():
            path.unlink()
    for kept in saved.rglob("*"):
        path = package / kept.relative_to(saved)
        if kept.is_file() and (not path.is_file() or path.read_bytes() != kept.read_bytes()):
            path.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(kept, path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkout", type=Path, default=ROOT)
    parser.add_argument("--only", nargs="*", default=[], metavar="CASE")
    args = parser.parse_args()
    checkout = args.checkout.resolve()
    print(f"grader: {checkout}")
    package = checkout / "autograd_course"
    saved_in = tempfile.TemporaryDirectory(prefix="attacks-package-")
    saved = Path(saved_in.name) / "autograd_course"
    shutil.copytree(package, saved, symlinks=True,
                    ignore=shutil.ignore_patterns("__pycache__"))
    print(f"{'case':<26} {'kind':<7} {'honest':>6} | {'nbgrader':>8} {'s':>5} {'cpu':>5} "
          f"{'live':>4} | {'grade':>5} {'s':>5} {'cpu':>5} {'live':>4} {'forged':>6} {'esc':>3}")
    for student, case in hostile_class.CASES.items():
        if args.only and student not in args.only:
            continue
        with tempfile.TemporaryDirectory(prefix="attacks-") as tmp:
            plain = course(Path(tmp) / "plain", checkout, student)
            graded = run(["-m", "nbgrader", "autograde", "toy", "--force"], plain, checkout)
            feedback = run(["-m", "nbgrader", "generate_feedback", "toy", "--force"], plain,
                           checkout)
            graded.seconds += feedback.seconds
            first = harm(plain, student, graded)
            restore(package, saved)
            by_cli = course(Path(tmp) / "cli", checkout, student)
            second = harm(by_cli, student, run(["-m", "autograd_course", "grade", "toy",
                                                "--jobs", "1"], by_cli, checkout))
            restore(package, saved)
            print(f"{student:<26} {case.kind:<7} {case.score:>6g} | {score(plain, student):>8} "
                  f"{first['s']:5.0f} {first['cpu']:5.0f} {first['live']:>4} | "
                  f"{score(by_cli, student):>5} {second['s']:5.0f} {second['cpu']:5.0f} "
                  f"{second['live']:>4} {second['forged']:>6} "
                  f"{'yes' if second['esc'] else '-':>3}", flush=True)


if __name__ == "__main__":
    main()
