"""Grade records: what the grader decided for each notebook, in a store the course owns.

A record says, for one student's notebook, each test cell's points, score, diagnostic message
and diagnosis code, the notes on what the grader repaired (deleted or edited cells, a broken
file) and whether the kernel was sandboxed, the code scan's flags for review, the errors the
student's own cells raised, why grading stopped early if it did, how long it took, and how
late the submission was with the late penalty nbgrader gave the notebook.

Records live in the **store**, ``records/ASSIGNMENT/STUDENT/NOTEBOOK.json`` under the course
root (:func:`store`): a folder only the grading process writes, outside every folder a
submission's files reach (nbgrader copies those into ``autograded/`` and ``feedback/``). Only
the grader writes it (:meth:`Store.write`); the class report, the summary and ``check`` read
it (:meth:`Store.read`), and never a file of a submission, wherever it lands. A record that
fails validation, or that does not match the student, assignment and notebook it is filed
under, is skipped with a warning and never stops its reader. (Before this store, records
were written beside the notebook as ``autograded/STUDENT/ASSIGNMENT/NOTEBOOK.grading.json``;
such files are no longer read, whoever wrote them.)
"""

from __future__ import annotations

import json
import math
import os
import re
import tempfile
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

STORE = "records"
MAX_RECORD_BYTES = 2**20  # a record larger than this is neither written nor read
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
#: What a name in the store may be: the ids nbgrader gives students, assignments, notebooks.
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@+-]{0,127}$")
QUESTION_KEYS = {"question": str, "points": (int, float), "score": (int, float, type(None)),
                 "passed": bool, "message": str, "diagnosis": str}


class RecordError(ValueError):
    """A record that is not one: malformed, or filed under another student's name."""


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
    seconds: float | None = None  # how long the grader took over the notebook
    seconds_late: float | None = None  # nbgrader's total_seconds_late (None: not known)
    late_penalty: float | None = None  # the notebook's late_submission_penalty (nbgrader's)

    @property
    def score(self) -> float:
        return sum(q["score"] or 0 for q in self.questions)

    @property
    def max_score(self) -> float:
        return sum(q["points"] for q in self.questions)

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=1, sort_keys=True) + "\n"

    @classmethod
    def from_json(cls, text: str | bytes) -> GradeRecord:
        """A record from its JSON, validated: every field of the right type, nothing else."""
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise RecordError(f"not JSON ({exc})") from None
        if not isinstance(data, dict):
            raise RecordError("not a JSON object")
        known = {f.name for f in fields(cls)}
        if set(data) - known:
            raise RecordError(f"unknown keys {sorted(set(data) - known)}")
        for name in ("student", "assignment", "notebook"):
            if not isinstance(data.get(name), str):
                raise RecordError(f"no {name}")
        _check_list(data, "flags", str)
        _check_list(data, "notes", str)
        _check_list(data, "errors", str)
        _check_list(data, "questions", dict)
        for question in data.get("questions", []):
            if set(question) != set(QUESTION_KEYS):
                raise RecordError("a question with other keys than " + ", ".join(QUESTION_KEYS))
            for key, kind in QUESTION_KEYS.items():
                value = question[key]
                if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
                    raise RecordError(f"a question whose {key} is not a {kind}")
                if isinstance(value, float) and not math.isfinite(value):
                    raise RecordError(f"a question whose {key} is not finite")
        if not isinstance(data.get("failure"), str | type(None)):
            raise RecordError("a failure that is not text")
        if not isinstance(data.get("sandboxed", False), bool):
            raise RecordError("a sandboxed flag that is not a boolean")
        for key in ("seconds", "seconds_late", "late_penalty"):
            value = data.get(key)
            if not isinstance(value, int | float | type(None)) or isinstance(value, bool) or (
                    isinstance(value, float) and not math.isfinite(value)):
                raise RecordError(f"{key} that are not a number")
        return cls(**data)


def _check_list(data: dict, key: str, kind: type) -> None:
    value = data.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, kind) for v in value):
        raise RecordError(f"{key} that is not a list of {kind.__name__}")


@dataclass(frozen=True)
class Store:
    """The grade records of a course (:data:`STORE` under its root)."""

    root: Path

    def folder(self, assignment: str, student: str) -> Path:
        """Where the records of one submission are (names checked: never outside the store)."""
        for name in (assignment, student):
            if not NAME.match(name):
                raise RecordError(f"{name!r} cannot name a record")
        return Path(self.root) / assignment / student

    def path(self, assignment: str, student: str, notebook: str) -> Path:
        if not NAME.match(notebook):
            raise RecordError(f"{notebook!r} cannot name a record")
        return self.folder(assignment, student) / f"{notebook}.json"

    def write(self, record: GradeRecord) -> Path:
        """Write one record (whole, then moved into place)."""
        path = self.path(record.assignment, record.student, record.notebook)
        data = record.to_json()
        if len(data.encode()) > MAX_RECORD_BYTES:  # what read() would skip is never written
            raise RecordError(f"the record of {record.student}/{record.assignment}/"
                              f"{record.notebook} is larger than 1 MiB")
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("w", dir=path.parent, suffix=".tmp",
                                         delete=False) as f:
            f.write(data)
        os.replace(f.name, path)
        return path

    def clear(self, assignment: str, student: str) -> None:
        """Remove the records of one submission (before a new grading of it is filed)."""
        folder = self.folder(assignment, student)
        if folder.is_dir():
            for path in folder.glob("*.json"):
                path.unlink()

    def read(self, assignment: str, student: str) -> tuple[list[GradeRecord], list[str]]:
        """The records of one submission, and a warning for each file that was skipped."""
        records, warnings = [], []
        try:
            folder = self.folder(assignment, student)
        except RecordError as exc:
            return records, [f"no grade records for {assignment}/{student}: {exc}"]
        if not folder.is_dir():
            return records, warnings
        for path in sorted(folder.glob("*.json")):
            try:
                if path.is_symlink() or not path.is_file():
                    raise RecordError("not a regular file")
                if path.stat().st_size > MAX_RECORD_BYTES:
                    raise RecordError("larger than 1 MiB")
                found = GradeRecord.from_json(path.read_bytes())
                if (found.assignment, found.student, found.notebook) != (
                        assignment, student, path.stem):
                    raise RecordError(f"it is the record of {found.student}/{found.assignment}/"
                                      f"{found.notebook}")
            except (RecordError, OSError) as exc:
                warnings.append(f"skipped the grade record {path}: {exc}")
                continue
            records.append(found)
        return records, warnings


def store(root: str | Path) -> Store:
    """The grade records of the course at ``root``."""
    return Store(Path(root) / STORE)


def shorten(text: str, limit: int) -> str:
    """``text`` on one line, cut to ``limit`` characters (with an ellipsis when cut)."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def strip_ansi(text: str) -> str:
    """``text`` without terminal colour codes."""
    return _ANSI.sub("", text)


def diagnostic(outputs) -> str:
    """The message that explains a test cell's result: its first error, or stderr, or the
    judge's notes (diagnoses that cost no points), or ''."""
    from autograd_course.kernel.checks import NOTE

    for output in outputs:
        if output.get("output_type") == "error":
            value = _ANSI.sub("", str(output.get("evalue", ""))).strip()
            return f"{output.get('ename')}: {value}" if value else str(output.get("ename"))
    for output in outputs:
        if output.get("output_type") == "stream" and output.get("name") == "stderr":
            return (
                "wrote to stderr (nbgrader scores such a test 0): " + output["text"][:200].strip()
            )
    notes = [line for output in outputs if output.get("output_type") == "stream"
             for line in output.get("text", "").splitlines() if line.startswith(NOTE)]
    return " ".join(notes)
