"""The course's units, in order: the assignments of source/ (each has a lesson of its name)."""

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
UNITS = sorted(p.name for p in (ROOT / "source").iterdir() if (p / f"{p.name}.ipynb").is_file())
