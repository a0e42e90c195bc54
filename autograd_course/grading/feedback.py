"""Feedback pages that can be released, and that show the grades the gradebook holds now.

Why, and what nbgrader expects: docs/design.md#autograd_coursegradingfeedbackpy. Rules:

- every graded submission's ``autograded/`` and ``feedback/`` folders hold the
  ``submission_secret.txt`` and ``timestamp.txt`` that ``nbgrader release_feedback`` reads
  (:func:`nbgrader_files`): the submission's own; else a secret made for it,
  ``HMAC-SHA512(course secret, "feedback\\0ASSIGNMENT\\0STUDENT")`` in hex, and its timestamp
  in the gradebook or, without one, the time it was graded;
- a page's **state** (:func:`state`) is a digest of what it shows from the gradebook (scores,
  comments, late penalty), recorded in the course's table :data:`PAGES` for each page made;
- :func:`refresh` (``grade`` after merging, and ``autograd-course feedback``) makes again, with
  nbgrader's GenerateFeedback and the course's config, in this process, exactly the pages whose
  state differs from the gradebook's or was never recorded, and leaves every other page alone.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import warnings
from dataclasses import dataclass, field
from datetime import UTC, datetime

from autograd_course.grading.course import Course
from autograd_course.grading.digests import DigestTable
from autograd_course.grading.intake import write_files

#: nbgrader's files in a feedback folder.
SECRET_FILE, TIMESTAMP_FILE = "submission_secret.txt", "timestamp.txt"
#: nbgrader's timestamp format (its exchange's ``timestamp_format``).
TIMESTAMP_FORMAT = "%Y-%m-%d %H:%M:%S.%f %Z"

#: What each feedback page shows of the gradebook (:func:`state`), per submission.
PAGES = DigestTable("autograd_course_feedback", "state", "made_at")


def made_secret(course_secret: str, student: str, assignment: str) -> str:
    """The ``submission_secret.txt`` of a submission that has none (see the module)."""
    message = f"feedback\0{assignment}\0{student}".encode()
    return hmac.new(course_secret.encode(), message, hashlib.sha512).hexdigest()


def nbgrader_files(files: dict[str, bytes], course_secret: str, student: str,
                   assignment: str, timestamp: str | None) -> dict[str, bytes]:
    """The files among nbgrader's two (:data:`SECRET_FILE`, :data:`TIMESTAMP_FILE`) that
    ``files`` (a folder's, by relative name) lacks, made as the module says. A name that
    ``files`` holds as a folder (``timestamp.txt/x``, a student's) counts as present: a file
    of that name could not be written beside it."""
    def present(name: str) -> bool:
        return name in files or any(key.startswith(name + "/") for key in files)

    added = {}
    if not present(SECRET_FILE):
        added[SECRET_FILE] = made_secret(course_secret, student, assignment).encode()
    if not present(TIMESTAMP_FILE):
        when = datetime.fromisoformat(timestamp) if timestamp else datetime.now(UTC)
        if when.tzinfo is None:  # the gradebook's timestamps are UTC, without a zone
            when = when.replace(tzinfo=UTC)
        added[TIMESTAMP_FILE] = when.strftime(TIMESTAMP_FORMAT).encode()
    return added


def state(submission) -> str:
    """The digest of what a submission's feedback page shows from the gradebook (nbgrader's
    SubmittedAssignment): each notebook's grades (automatic, manual, extra credit), comments
    (automatic, manual) and late penalty. The same in a worker's gradebook and the course's."""
    def number(value):
        return None if value is None else float(value)

    shown = []
    for notebook in sorted(submission.notebooks, key=lambda nb: nb.name):
        shown.append([
            notebook.name, number(notebook.late_submission_penalty),
            sorted([g.name, number(g.auto_score), number(g.manual_score),
                    number(g.extra_credit)] for g in notebook.grades),
            sorted([c.name, c.auto_comment, c.manual_comment] for c in notebook.comments),
        ])
    return hashlib.sha256(json.dumps(shown).encode()).hexdigest()


def mark(gb, assignment: str, student: str, digest: str) -> None:
    """Record, in ``gb``'s open transaction, that the page of ``student``'s ``assignment``
    was made from the state ``digest`` (the caller commits)."""
    PAGES.write(gb, assignment, student, digest)


def recorded(course: Course, assignment: str) -> dict[str, str]:
    """The students of ``assignment`` whose page has a recorded state, with it."""
    return PAGES.read(course.db_url, assignment)


@dataclass
class Refreshed:
    """What :func:`refresh` did: the pages made again, and those that could not be."""

    made: list[tuple[str, str]] = field(default_factory=list)  # (assignment, student)
    failed: list[tuple[str, str, str]] = field(default_factory=list)  # ... and why


def stale(course: Course, assignments: list[str], students: list[str] | None = None
          ) -> list[tuple[str, str, str]]:
    """(assignment, student, state now) of each autograded submission whose page was made
    from another state, or has none recorded."""
    from nbgrader.api import MissingEntry

    found = []
    with warnings.catch_warnings(), course.gradebook() as gb:
        warnings.simplefilter("ignore")  # SQLAlchemy's notes on nbgrader's own queries
        for name in assignments:
            try:
                submissions = gb.find_assignment(name).submissions
            except MissingEntry:
                continue
            made = recorded(course, name)
            for submission in submissions:
                student = submission.student.id
                if students and student not in students:
                    continue
                folder = course.directory("autograded", student, name)
                if not any(folder.glob("*.ipynb")):
                    continue
                now = state(submission)
                if made.get(student) != now:
                    found.append((name, student, now))
    return found


def refresh(course: Course, assignments: list[str], students: list[str] | None = None
            ) -> Refreshed:
    """Make again the feedback pages of ``assignments`` (of ``students``, default all) whose
    gradebook state changed since they were made (see the module), in this process."""
    from nbgrader.apps import NbGraderAPI

    done = Refreshed()
    todo = stale(course, assignments, students)
    if not todo:
        return done
    api = NbGraderAPI(config=course.config)
    secret = course.secret()
    for assignment, student, now in todo:
        autograded = course.directory("autograded", student, assignment)
        # a name taken by anything (a student's folder too) is left as it is
        present = {p.name: b"" for p in autograded.iterdir()}
        with warnings.catch_warnings(), course.gradebook() as gb:
            warnings.simplefilter("ignore")
            when = gb.find_submission(assignment, student).timestamp
        try:
            write_files(autograded, nbgrader_files(
                present, secret, student, assignment, when.isoformat() if when else None))
        except OSError as exc:
            done.failed.append((assignment, student, f"{type(exc).__name__}: {exc}"))
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = api.generate_feedback(assignment, student, force=True)
        if not result.get("success"):
            lines = (result.get("error") or result.get("log") or "").strip().splitlines()
            done.failed.append((assignment, student, lines[-1] if lines else "no message"))
            continue
        with warnings.catch_warnings(), course.gradebook() as gb:
            warnings.simplefilter("ignore")
            mark(gb, assignment, student, now)
            gb.db.commit()
        done.made.append((assignment, student))
    return done
