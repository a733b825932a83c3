"""Session locks: a PostgreSQL advisory lock per session, held by the connection that runs it.

A killed worker releases its lock with its connection, so no lock outlives its run,
and a run row still ``running`` whose lock nobody holds belongs to a dead worker. A try run
(a scratch turn) holds its session's lock only while it opens its snapshot; for the rest of
its life it holds a lock of its own run (``lock_run``), which tells a live one from a dead one.
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


def _lock_key(ident: uuid.UUID | sa.ColumnElement, prefix: str = "") -> sa.ColumnElement:
    """The bigint key of a lock: the hash of ``prefix`` and the id's text (a session's lock has no prefix)."""
    if isinstance(ident, uuid.UUID):
        return sa.func.hashtextextended(prefix + str(ident), 0)
    text = sa.cast(ident, sa.Text)
    return sa.func.hashtextextended(sa.literal(prefix) + text if prefix else text, 0)


RUN_PREFIX = "run:"  # a run's own lock: its id behind this prefix (no session id collides with it)


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


def lock_run(conn: Connection, run_id: uuid.UUID) -> None:
    """Take the run's own lock on ``conn`` (a try run holds it while it works)."""
    conn.execute(sa.select(sa.func.pg_advisory_lock(_lock_key(run_id, RUN_PREFIX))))


def unlock_run(conn: Connection, run_id: uuid.UUID) -> None:
    """Release the run's own lock that ``conn`` holds."""
    conn.execute(sa.select(sa.func.pg_advisory_unlock(_lock_key(run_id, RUN_PREFIX))))


def session_locked(session_id: sa.ColumnElement) -> sa.Exists:
    """True while some connection holds the lock of the session ``session_id`` names (a column)."""
    return _held(_lock_key(session_id))


def run_locked(run_id: sa.ColumnElement) -> sa.Exists:
    """True while some connection holds the own lock of the run ``run_id`` names (a column)."""
    return _held(_lock_key(run_id, RUN_PREFIX))


def _held(key: sa.ColumnElement) -> sa.Exists:
    """True while some connection holds the advisory lock on ``key``.

    ``pg_locks`` shows an advisory lock on a bigint key as its high half in ``classid``
    and its low half in ``objid``, with ``objsubid`` 1.
    """
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
