"""Grade records: one JSON file per graded notebook, beside it in autograded/.

A record says, for one student's notebook, each test cell's points, score, diagnostic message
and diagnosis code, the notes on what the grader repaired (deleted or edited cells, a broken
file) and whether the kernel was sandboxed, the code scan's flags for review, the errors the
student's own cells raised, and why grading stopped early if it did.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path

SUFFIX = ".grading.json"
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


@dataclass
class GradeRecord:
    """What the grader decided for one notebook of one student."""

    student: str
    assignment: str
    notebook: str
    questions: list[dict] = field(default_factory=list)
    flags: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    failure: str | None = None
    sandboxed: bool = False
    errors: list[str] = field(default_factory=list)  # errors the student's own cells raised

    @property
    def score(self) -> float:
        return sum(q["score"] or 0 for q in self.questions)

    @property
    def max_score(self) -> float:
        return sum(q["points"] for q in self.questions)

    def write(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(asdict(self), indent=1, sort_keys=True) + "\n")

    @classmethod
    def read(cls, path: Path) -> GradeRecord:
        return cls(**json.loads(Path(path).read_text()))


def shorten(text: str, limit: int) -> str:
    """``text`` on one line, cut to ``limit`` characters (with an ellipsis when cut)."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def strip_ansi(text: str) -> str:
    """``text`` without terminal colour codes."""
    return _ANSI.sub("", text)


def diagnostic(outputs) -> str:
    """The message that explains a test cell's result: its first error, or stderr, or ''."""
    for output in outputs:
        if output.get("output_type") == "error":
            value = _ANSI.sub("", str(output.get("evalue", ""))).strip()
            return f"{output.get('ename')}: {value}" if value else str(output.get("ename"))
    for output in outputs:
        if output.get("output_type") == "stream" and output.get("name") == "stderr":
            return (
                "wrote to stderr (nbgrader scores such a test 0): " + output["text"][:200].strip()
            )
    return ""

