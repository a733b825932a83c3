"""Session locks: a PostgreSQL advisory lock per session, held by the connection that runs it.

A killed worker releases its lock with its connection, so no lock outlives its run,
and a run row still ``running`` whose lock nobody holds belongs to a dead worker.
"""

from __future__ import annotations

import uuid

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import OID
from sqlalchemy.engine import Connection

_LOW_32 = 0xFFFFFFFF
_pg_locks = sa.table(
    "pg_locks",
    *(sa.column(name) for name in ("locktype", "database", "classid", "objid", "objsubid", "granted")),
)
_pg_database = sa.table("pg_database", sa.column("oid"), sa.column("datname"))


def _lock_key(session_id: uuid.UUID | sa.ColumnElement) -> sa.ColumnElement:
    text = str(session_id) if isinstance(session_id, uuid.UUID) else sa.cast(session_id, sa.Text)
    return sa.func.hashtextextended(text, 0)


def try_lock_session(conn: Connection, session_id: uuid.UUID) -> bool:
    """Take the session's lock on ``conn``; False when another connection holds it."""
    return conn.execute(sa.select(sa.func.pg_try_advisory_lock(_lock_key(session_id)))).scalar_one()


def lock_session(conn: Connection, session_id: uuid.UUID) -> None:
    """Take the session's lock on ``conn``, waiting while another connection holds it."""
    conn.execute(sa.select(sa.func.pg_advisory_lock(_lock_key(session_id))))


def lock_tenant_runs(conn: Connection, tenant_id: uuid.UUID) -> None:
    """Queue the tenant's runs one at a time until ``conn``'s transaction ends (caps and busy checks hold)."""
    conn.execute(sa.select(sa.func.pg_advisory_xact_lock(sa.func.hashtextextended(f"runs:{tenant_id}", 0))))


def unlock_session(conn: Connection, session_id: uuid.UUID) -> None:
    """Release the session's lock that ``conn`` holds."""
    conn.execute(sa.select(sa.func.pg_advisory_unlock(_lock_key(session_id))))


def session_locked(session_id: sa.ColumnElement) -> sa.Exists:
    """True while some connection holds the lock of the session ``session_id`` names (a column).

    ``pg_locks`` shows an advisory lock on a bigint key as its high half in ``classid``
    and its low half in ``objid``, with ``objsubid`` 1.
    """
    key = _lock_key(session_id)
    this_database = (
        sa.select(_pg_database.c.oid)
        .where(_pg_database.c.datname == sa.func.current_database())
        .scalar_subquery()
    )
    return sa.exists().where(
        _pg_locks.c.locktype == "advisory",
        _pg_locks.c.database == this_database,
        _pg_locks.c.objsubid == 1,
        _pg_locks.c.classid == sa.cast(key.op(">>")(32).op("&")(_LOW_32), OID),
        _pg_locks.c.objid == sa.cast(key.op("&")(_LOW_32), OID),
        _pg_locks.c.granted,
    )
