"""Queries on ``runs`` (the run loop creates them).

Every read of runs (and of a session, ``Sessions.get``) first reaps the runs of a dead
worker: a row still ``running`` whose session lock no connection holds becomes
``failed`` with the error ``interrupted``, in the same statement as the read.
"""

from __future__ import annotations

import uuid

import sqlalchemy as sa

from hango.db.schema import runs
from hango.store.base import Scoped, new_id
from hango.store.locks import session_locked
from hango.store.pages import Page, page

INTERRUPTED = {"code": "interrupted", "message": "the run's worker stopped before the run finished"}
_REAPED = ("status", "error", "finished_at")


def reap_dead_runs(sub: Scoped, *conditions: sa.ColumnElement[bool]) -> sa.CTE:
    """An UPDATE, as a CTE for a read to carry, that fails the matching runs no live worker runs.

    The run loop takes the session lock before it creates a run row and finishes the row
    before it lets go, so a committed ``running`` row without a lock holder is a dead run.
    """
    return (
        sa.update(runs)
        .where(
            runs.c.tenant_id == sub.tenant_id,
            runs.c.status == "running",
            *conditions,
            ~session_locked(runs.c.session_id),
        )
        .values(status="failed", error=INTERRUPTED, finished_at=sa.func.now())
        .returning(runs.c.id, *(runs.c[name] for name in _REAPED))
        .cte("reaped")
    )


class Runs(Scoped):
    table = runs

    def get(self, run_id: uuid.UUID) -> sa.Row | None:
        """One run of the tenant, or None (a dead run reaped first)."""
        return self.conn.execute(self._reaping(runs.c.id == run_id)).first()

    def page(self, session_id: uuid.UUID, cursor: str | None, limit: int) -> Page:
        """A page of the session's runs, oldest first (its dead runs reaped first)."""
        query = self._reaping(runs.c.session_id == session_id)
        return page(self.conn, query, runs, cursor, limit, order=(runs.c.started_at, runs.c.id))

    def _reaping(self, *conditions: sa.ColumnElement[bool]) -> sa.Select:
        """The runs matching ``conditions`` as they are once their dead runs are reaped, in one statement.

        A statement's CTE does not see its own updates, so reaped columns come from the CTE.
        """
        reaped = reap_dead_runs(self, *conditions)
        columns = [
            sa.func.coalesce(reaped.c[c.name], c).label(c.name) if c.name in _REAPED else c for c in runs.c
        ]
        joined = runs.outerjoin(reaped, reaped.c.id == runs.c.id)
        return sa.select(*columns).select_from(joined).where(self.where(*conditions))

    def create(self, session_id: uuid.UUID, idempotency_key: str | None) -> sa.Row:
        """A new run in status ``running``."""
        return self.insert_row(
            id=new_id(), session_id=session_id, status="running", idempotency_key=idempotency_key
        )

    def finish(
        self, run_id: uuid.UUID, status: str, stop_reason: str | None, error: dict | None = None
    ) -> sa.Row | None:
        """Close a run with its final status."""
        return self.update_rows(
            [runs.c.id == run_id],
            status=status,
            stop_reason=stop_reason,
            error=error,
            finished_at=sa.func.now(),
        )

    def fail_running(self, session_id: uuid.UUID) -> None:
        """Close every run of the session still ``running`` as ``failed``, ``interrupted`` (the caller holds its lock)."""
        self.update_rows(
            [runs.c.session_id == session_id, runs.c.status == "running"],
            status="failed",
            error=INTERRUPTED,
            finished_at=sa.func.now(),
        )

    def by_idempotency_key(self, session_id: uuid.UUID, key: str) -> sa.Row | None:
        return self.conn.execute(
            self.select(runs.c.session_id == session_id, runs.c.idempotency_key == key)
        ).first()
