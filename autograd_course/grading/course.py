"""The course as nbgrader is configured for it: one object every command and worker uses.

:meth:`Course.load` reads the course's ``nbgrader_config.py`` the way nbgrader does, and
everything else follows from nbgrader's own :class:`~nbgrader.coursedir.CourseDirectory`:
the root and the directory names (``submitted``, ``autograded``... or whatever the config
renames them to, and its ``directory_structure``), the gradebook's ``db_url`` (SQLite
``gradebook.db`` in the root by default; any SQLAlchemy URL nbgrader accepts, such as
``postgresql+psycopg://...``), the course id, and the assignments and students found on disk.
"""

from __future__ import annotations

import contextlib
import functools
import os
import secrets
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from traitlets.config import Config

CONFIG_FILE = "nbgrader_config.py"
SECRET_FILE = ".grader-secret"


class CourseError(Exception):
    """The course cannot be used as it is (no config, an unknown assignment...)."""


def read_secret(root: str | Path) -> str:
    """The grader's secret of the course at ``root`` (``.grader-secret``), made on first use.

    It seeds the hidden tests' inputs: with it, a submission is always graded on the same
    inputs (so a regrade or a self-check agrees with the grade), and it never leaves the
    grader (the sandbox hides the course root from the kernel).
    """
    path = Path(root) / SECRET_FILE
    if not path.exists():
        # written whole, then linked into place: a process that starts meanwhile reads either
        # no file (and links its own, or fails to and reads the winner's) or the whole secret
        with tempfile.NamedTemporaryFile("w", dir=path.parent, prefix=".grader-secret-",
                                         delete=False) as f:
            f.write(secrets.token_hex(32) + "\n")
        os.chmod(f.name, 0o600)
        try:
            os.link(f.name, path)
        except FileExistsError:
            pass
        except OSError:  # a file system without hard links: the last writer wins
            if not path.exists():
                os.replace(f.name, path)
        finally:
            if os.path.exists(f.name):
                os.unlink(f.name)
    return path.read_text().strip()


def tools_on_path() -> None:
    """Put this environment's bin/ first on PATH: nbgrader runs ``alembic`` from PATH when it
    creates a gradebook, and kernels are started with this Python."""
    bin_dir = str(Path(sys.executable).parent)
    if os.environ.get("PATH", "").split(os.pathsep)[:1] != [bin_dir]:
        os.environ["PATH"] = os.pathsep.join([bin_dir, os.environ.get("PATH", "")])


@dataclass(frozen=True, order=True)
class Submission:
    """One student's submitted assignment."""

    student: str
    assignment: str


@dataclass(frozen=True, eq=False)
class Course:
    """A course root with its nbgrader configuration."""

    root: Path
    config: Config

    @classmethod
    def load(cls, root: str | Path, **overrides) -> Course:
        """Read ``root``'s nbgrader_config.py as nbgrader does. ``overrides`` are extra
        settings, e.g. ``{"JudgedExecute": {"require_sandbox": True}}``."""
        course = cls.load_config(root, **overrides)
        if not course.directory("source").is_dir():
            raise CourseError(f"{course.root} is not a course root (no {CONFIG_FILE} and "
                              "source/ there); run from the course root or pass --course DIR")
        return course

    @classmethod
    def load_config(cls, root: str | Path, **overrides) -> Course:
        """Like :meth:`load`, for a folder that only has the config so far."""
        from nbgrader.apps.baseapp import NbGrader

        root = Path(root).resolve()
        if not (root / CONFIG_FILE).is_file():
            raise CourseError(f"{root} is not a course root (no {CONFIG_FILE} there); run "
                              "from the course root or pass --course DIR")
        tools_on_path()
        app = NbGrader()
        with contextlib.chdir(root):  # exactly as `nbgrader` run in the course root reads it
            app.load_config_file()
        config = Config(app.config)
        config.CourseDirectory.root = str(root)
        for section, values in overrides.items():
            for name, value in values.items():
                setattr(getattr(config, section), name, value)
        return cls(root, config)

    @functools.cached_property
    def coursedir(self):
        """nbgrader's CourseDirectory for this config (nbgrader is imported when needed:
        importing it takes a second and a half, which ``--help`` need not wait for)."""
        from nbgrader.coursedir import CourseDirectory

        return CourseDirectory(config=self.config)

    @property
    def course_id(self) -> str:
        return self.coursedir.course_id or "default_course"

    @property
    def db_url(self) -> str:
        return self.coursedir.db_url

    def directory(self, step: str, student: str = ".", assignment: str = ".") -> Path:
        """The folder of a step ("source", "release", "submitted", "autograded", "feedback")
        for a student and an assignment, as nbgrader lays it out."""
        name = getattr(self.coursedir, f"{step}_directory")
        return Path(self.coursedir.format_path(name, student, assignment)).resolve()

    def assignments(self) -> list[str]:
        """The assignments of source/ (a folder holding a notebook of its own name)."""
        folder = self.directory("source")
        return sorted(p.name for p in folder.iterdir()
                      if (p / f"{p.name}.ipynb").is_file()) if folder.is_dir() else []

    def check_assignments(self, names: list[str]) -> list[str]:
        """``names`` (every assignment when empty), each checked to exist in source/."""
        known = self.assignments()
        for name in names:
            if name not in known:
                raise CourseError(f"no assignment '{name}' in {self.directory('source')} "
                                  f"(known: {', '.join(known)})")
        return list(names) or known

    def submissions(self, assignments: list[str], students: list[str] = (),
                    problems: list[str] | None = None) -> list[Submission]:
        """The submissions on disk for ``assignments`` (and ``students``, when given). A folder
        whose name is not a student id the course accepts is left out, with a line in
        ``problems``; so is a folder named as one of ``assignments`` only up to case
        (``submitted/tess/01_Gradients``), with the right spelling."""
        from autograd_course.grading.record import NAME

        wanted = set(students)
        found = []
        for assignment in assignments:
            folder = self.directory("submitted", "*", assignment)
            for path in sorted(folder.parent.parent.glob(f"*/{assignment}")):
                if not path.is_dir() or (wanted and path.parent.name not in wanted):
                    continue
                if not NAME.match(path.parent.name):
                    if problems is not None:
                        problems.append(f"{path}: {path.parent.name!r} is not a student id "
                                        "(letters, digits and . _ @ + -); not graded")
                    continue
                found.append(Submission(path.parent.name, assignment))
        if problems is not None:
            problems += self.misspelled(assignments, students)
        return found

    def misspelled(self, assignments: list[str], students: list[str] = ()) -> list[str]:
        """A line for each folder ``submitted/STUDENT/NAME`` that is one of ``assignments``
        only up to case, where the right spelling is not there too (never graded)."""
        folded = {a.casefold(): a for a in assignments}
        root = self.directory("submitted")
        lines = []
        if not root.is_dir():
            return lines
        for student in sorted(p for p in root.iterdir() if p.is_dir()):
            if students and student.name not in students:
                continue
            for path in sorted(p for p in student.iterdir() if p.is_dir()):
                right = folded.get(path.name.casefold())
                if right and right != path.name and not (student / right).is_dir():
                    lines.append(f"{path}: the assignment is spelled {right} (not "
                                 f"{path.name[:128]!r}); not graded until the folder is "
                                 "renamed")
        return lines

    def unknown_students(self, assignments: list[str], students: list[str]) -> list[str]:
        """The ``students`` with no folder ``submitted/STUDENT/ASSIGNMENT`` for any of
        ``assignments`` (a typo in ``--student``, most likely)."""
        return [s for s in dict.fromkeys(students)
                if not any(self.directory("submitted", s, a).is_dir() for a in assignments)]

    def notebooks_of(self, assignment: str) -> list[str]:
        """The notebook files of ``assignment`` (``NAME.ipynb``, as in source/)."""
        return sorted(p.name for p in self.directory("source", ".", assignment).glob("*.ipynb"))

    def dates(self, submissions: list[Submission]) -> dict[Submission, tuple]:
        """What the course's gradebook says of each submission's dates, for nbgrader's late
        penalty: (the assignment's due date, the student's extension in seconds, the
        submission's stored timestamp), dates as ISO text, naive UTC as nbgrader stores them
        (None where there is none). Submissions of an assignment the gradebook does not know
        are left out; no gradebook file is created to read them."""
        import warnings

        from nbgrader.api import MissingEntry

        sqlite = self.sqlite_path()
        if sqlite is not None and not sqlite.exists():
            return {}
        found = {}
        with warnings.catch_warnings(), self.gradebook() as gb:
            warnings.simplefilter("ignore")  # SQLAlchemy's notes on nbgrader's own queries
            for assignment in sorted({s.assignment for s in submissions}):
                try:
                    record = gb.find_assignment(assignment)
                except MissingEntry:
                    continue
                due = record.duedate.isoformat() if record.duedate else None
                stored = {s.student.id: s for s in record.submissions}
                for submission in submissions:
                    if submission.assignment != assignment:
                        continue
                    row = stored.get(submission.student)
                    extension = (row.extension.total_seconds() if row is not None
                                 and row.extension is not None else None)
                    timestamp = (row.timestamp.isoformat() if row is not None and row.timestamp
                                 else None)
                    found[submission] = (due, extension, timestamp)
        return found

    def secret(self) -> str:
        """The course's grading secret (seeds hidden inputs; see JudgedExecute.secret)."""
        configured = self.config.JudgedExecute.get("secret")
        return configured or read_secret(self.root)

    def gradebook(self):
        """nbgrader's Gradebook of this course (close it: use it as a context manager)."""
        from nbgrader.api import Gradebook

        return Gradebook(self.db_url, course_id=self.course_id)

    def sqlite_path(self) -> Path | None:
        """The file of a SQLite gradebook, None for a server database."""
        url = self.db_url
        return Path(url.removeprefix("sqlite:///")) if url.startswith("sqlite:///") else None
