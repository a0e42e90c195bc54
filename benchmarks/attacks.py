"""Grade the hostile class with the grader of a checkout: points per attack, two graders.

    .venv/bin/python benchmarks/attacks.py                     # this checkout
    .venv/bin/python benchmarks/attacks.py --checkout /tmp/old # e.g. a worktree of an old main

The class is tests/fixtures/hostile_class.py on the toy assignment (4 points); every attack
computes no right answer. Each student is graded on its own, in a fresh copy of the course, by
plain ``nbgrader autograde`` and by ``autograd-course grade``, with the checkout's package
and config (``PYTHONPATH``), and the checkout's package is restored from git after each one,
so that one attack's damage is not credited to the next. Prints, per case, the score the
course means to give (``honest``) and the score under each grader ("-" where the grader
could not grade it, e.g. because the submission killed it).

Warning: an old, unsandboxed grader really runs the attacks: they write into that checkout's
package and into any ``gradebook.db`` they can find under /tmp and /work. Run it on a
throwaway worktree, with nothing else grading on the machine.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "fixtures"))

import hostile_class  # noqa: E402
import make_toy  # noqa: E402

from autograd_course.testkit.classes import fill, gradebook_scores  # noqa: E402

LIMITS = {"JudgedExecute": "\nc.Execute.timeout = 8\nc.JudgedExecute.memory_limit_mb = 1500\n",
          "GuardedExecute": "\nc.Execute.timeout = 8\nc.GuardedExecute.memory_limit_mb = 1500\n"}


def run(args: list[str], cwd: Path, checkout: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(checkout), PYTHONWARNINGS="ignore",
               PATH=os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]]))
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=600)


def course(folder: Path, checkout: Path, student: str) -> Path:
    """A fresh toy course graded by ``checkout``'s config, with ``student``'s submission."""
    config = (checkout / "nbgrader_config.py").read_text()
    config += LIMITS["JudgedExecute" if "JudgedExecute" in config else "GuardedExecute"]
    (folder / "source" / "toy").mkdir(parents=True)
    nbformat.write(make_toy.toy_notebook(), folder / "source" / "toy" / "toy.ipynb")
    (folder / "nbgrader_config.py").write_text(config)
    run(["-m", "nbgrader", "generate_assignment", "toy", "--force"], folder, checkout)
    hostile_class.write(folder / "submitted" / student / "toy", student,
                        lambda a: fill(folder / "release" / "toy" / "toy.ipynb", a))
    return folder


def score(folder: Path, student: str) -> str:
    try:
        value = gradebook_scores(folder, "toy").get(student)
    except Exception:  # noqa: BLE001 - no gradebook row: the grader did not finish
        return "-"
    return "-" if value is None else f"{value:g}"


def restore(checkout: Path) -> None:
    subprocess.run(["git", "-C", str(checkout), "checkout", "--", "autograd_course"],
                   capture_output=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkout", type=Path, default=ROOT)
    args = parser.parse_args()
    checkout = args.checkout.resolve()
    print(f"grader: {checkout}")
    print(f"{'case':<28} {'kind':<7} {'honest':>6} {'nbgrader':>9} {'grade':>6}")
    for student, case in hostile_class.CASES.items():
        with tempfile.TemporaryDirectory(prefix="attacks-") as tmp:
            plain = course(Path(tmp) / "plain", checkout, student)
            run(["-m", "nbgrader", "autograde", "toy", "--force"], plain, checkout)
            restore(checkout)
            by_cli = course(Path(tmp) / "cli", checkout, student)
            run(["-m", "autograd_course", "grade", "toy", "--jobs", "1"], by_cli, checkout)
            restore(checkout)
            print(f"{student:<28} {case.kind:<7} {case.score:>6g} {score(plain, student):>9} "
                  f"{score(by_cli, student):>6}", flush=True)


if __name__ == "__main__":
    main()
