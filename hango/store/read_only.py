"""A read-only snapshot of the database: what a scratch turn reads the session through."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy.engine import Connection, Engine


@contextmanager
def read_only_snapshot(engine: Engine) -> Iterator[Connection]:
    """A connection in a ``REPEATABLE READ READ ONLY`` transaction, rolled back at the end.

    Every read in it sees the database as its first statement found it: commits made
    afterwards stay invisible, and any write fails (PostgreSQL refuses it).
    """
    with engine.connect() as conn:
        conn.execution_options(isolation_level="REPEATABLE READ", postgresql_readonly=True)
        try:
            yield conn
        finally:
            conn.rollback()
