"""Queries on ``runs`` (the run loop creates them)."""

from __future__ import annotations

import uuid

import sqlalchemy as sa

from hango.db.schema import runs
from hango.store.base import Scoped, new_id
from hango.store.pages import Page, page


class Runs(Scoped):
    table = runs

    def get(self, run_id: uuid.UUID) -> sa.Row | None:
        """One run of the tenant, or None."""
        return self.conn.execute(self.select(runs.c.id == run_id)).first()

    def page(self, session_id: uuid.UUID, cursor: str | None, limit: int) -> Page:
        """A page of the session's runs, oldest first."""
        query = self.select(runs.c.session_id == session_id)
        return page(self.conn, query, runs, cursor, limit, order=(runs.c.started_at, runs.c.id))

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

    def fail_running(self, session_id: uuid.UUID, error: dict) -> None:
        """Close every run of the session still ``running`` as ``failed`` with ``error``."""
        self.update_rows(
            [runs.c.session_id == session_id, runs.c.status == "running"],
            status="failed",
            error=error,
            finished_at=sa.func.now(),
        )

    def by_idempotency_key(self, session_id: uuid.UUID, key: str) -> sa.Row | None:
        return self.conn.execute(
            self.select(runs.c.session_id == session_id, runs.c.idempotency_key == key)
        ).first()
