"""Grade the hostile toy class under nbgrader's defaults and under the course config.

    .venv/bin/python benchmarks/defences.py

Prints one row per case: the total score (of 3) each configuration gives, and the reason the
course's grade record states. "error" means nbgrader could not grade that submission at all.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "fixtures"))

import hostile_class  # noqa: E402
import make_toy  # noqa: E402

from autograd_course.grading import course, record  # noqa: E402

LIMITS = "\nc.Execute.timeout = 8\nc.GuardedExecute.memory_limit_mb = 1500\n"
DEFAULTS = "c = get_config()\nc.CourseDirectory.course_id = 'toy'\nc.Execute.timeout = 8\n"


def grade(config: str, workdir: Path) -> tuple[dict[str, float], Path]:
    (workdir / "source" / "toy").mkdir(parents=True)
    nbformat.write(make_toy.toy_notebook(), workdir / "source" / "toy" / "toy.ipynb")
    course.make_course(workdir, workdir, ["toy"], config=config)
    release = workdir / "release" / "toy" / "toy.ipynb"
    for student in hostile_class.CASES:
        course.submit(workdir, student, "toy", "toy",
                      hostile_class.build(student, lambda a: course.fill(release, a)))
    course.nbgrader(workdir, "autograde", "toy", "--force")
    return course.gradebook_scores(workdir, "toy"), workdir


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        plain, _ = grade(DEFAULTS, Path(tmp) / "defaults")
        guarded, where = grade((ROOT / "nbgrader_config.py").read_text() + LIMITS,
                               Path(tmp) / "course")
        print(f"{'case':<20} {'expected':>8} {'defaults':>8} {'course':>7}  reason (course)")
        for student, (_, expected, _) in hostile_class.CASES.items():
            path = where / "autograded" / student / "toy" / f"toy{record.SUFFIX}"
            rec = record.GradeRecord.read(path)
            reason = (rec.flags[:1] or rec.notes[:1] or [rec.failure or ""]
                      or [""])[0] or next((q["message"] for q in rec.questions if q["message"]),
                                          "")
            shown = plain.get(student)
            print(f"{student:<20} {expected:>8} {'error' if shown is None else shown:>8} "
                  f"{guarded.get(student, 'error'):>7}  {reason[:90]}")


if __name__ == "__main__":
    main()
