"""Session locks: a PostgreSQL advisory lock per session, held by the connection that runs it.

A killed worker releases its lock with its connection, so no lock outlives its run.
"""

from __future__ import annotations

import uuid

import sqlalchemy as sa
from sqlalchemy.engine import Connection


def _lock_key(session_id: uuid.UUID) -> sa.ColumnElement:
    return sa.func.hashtextextended(str(session_id), 0)


def try_lock_session(conn: Connection, session_id: uuid.UUID) -> bool:
    """Take the session's lock on ``conn``; False when another connection holds it."""
    return conn.execute(sa.select(sa.func.pg_try_advisory_lock(_lock_key(session_id)))).scalar_one()


def unlock_session(conn: Connection, session_id: uuid.UUID) -> None:
    """Release the session's lock that ``conn`` holds."""
    conn.execute(sa.select(sa.func.pg_advisory_unlock(_lock_key(session_id))))
