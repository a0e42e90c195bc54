"""Digests kept per submission in the gradebook's own database, beside nbgrader's tables.

A :class:`DigestTable` maps (assignment, student) to a digest and the time it was written: the
course keeps two, what a merged grade was computed from (:data:`.gradebook.MARKERS`) and what a
feedback page shows (:data:`.feedback.PAGES`). A table is created on first use, in any
database nbgrader's gradebook uses; :meth:`~DigestTable.write` runs in the caller's open
transaction, so a digest is committed with the grades it describes or not at all.

SQLAlchemy is imported when a table is first used, not with this module: the modules that
name the tables are imported by ``grade``'s start-up, which has nothing to read from them when
nothing changed (:mod:`.idle`).
"""

from __future__ import annotations

import functools
from datetime import UTC, datetime


class DigestTable:
    """One table ``name`` of (assignment, student) -> the column ``digest``, with the time it
    was written in the column ``written``."""

    def __init__(self, name: str, digest: str, written: str):
        self.name, self.digest, self.written = name, digest, written

    @functools.cached_property
    def table(self):
        """The SQLAlchemy table."""
        from sqlalchemy import Column, DateTime, MetaData, String, Table

        return Table(
            self.name, MetaData(),
            Column("assignment", String(128), primary_key=True),
            Column("student", String(128), primary_key=True),
            Column(self.digest, String(64), nullable=False),
            Column(self.written, DateTime, nullable=False),
        )

    def read(self, db_url: str, assignment: str) -> dict[str, str]:
        """The students of ``assignment`` with a digest, and their digest (none: empty)."""
        from sqlalchemy import create_engine, select

        engine = create_engine(db_url)
        try:
            self.table.create(engine, checkfirst=True)
            with engine.connect() as connection:
                rows = connection.execute(
                    select(self.table.c.student, self.table.c[self.digest])
                    .where(self.table.c.assignment == assignment))
                return dict(rows.all())
        finally:
            engine.dispose()

    def write(self, gb, assignment: str, student: str, digest: str) -> None:
        """Set ``student``'s digest of ``assignment`` in nbgrader's Gradebook ``gb``'s open
        transaction (the caller commits)."""
        from sqlalchemy import delete

        table = self.table
        table.create(gb.db.connection(), checkfirst=True)
        gb.db.execute(delete(table).where((table.c.assignment == assignment)
                                          & (table.c.student == student)))
        gb.db.execute(table.insert().values({
            "assignment": assignment, "student": student, self.digest: digest,
            self.written: datetime.now(UTC).replace(tzinfo=None)}))
