"""Queries on ``run_events``: a run's steps, numbered from 1, written as they happen."""

from __future__ import annotations

import uuid
from typing import Any

import sqlalchemy as sa

from hango.db.schema import run_events
from hango.run_events import is_run_event_kind
from hango.store.base import Scoped

MAX_PAGE = 1000


class RunEvents(Scoped):
    table = run_events

    def add(self, run_id: uuid.UUID, seq: int, kind: str, detail: dict[str, Any]) -> None:
        """Store one step of the run (``seq`` comes from the one worker that runs it)."""
        _check(kind)
        self.conn.execute(
            sa.insert(run_events).values(
                tenant_id=self.tenant_id, run_id=run_id, seq=seq, kind=kind, detail=detail
            )
        )

    def add_next(self, run_id: uuid.UUID, kind: str, detail: dict[str, Any]) -> None:
        """Store a step after the run's last one (for writers outside its worker: the reaper, cancel)."""
        _check(kind)
        last = sa.select(sa.func.coalesce(sa.func.max(run_events.c.seq), 0) + 1).where(
            run_events.c.run_id == run_id
        )
        self.conn.execute(
            sa.insert(run_events).values(
                tenant_id=self.tenant_id, run_id=run_id, seq=last.scalar_subquery(), kind=kind, detail=detail
            )
        )

    def after(self, run_id: uuid.UUID, after: int, limit: int = MAX_PAGE) -> list[sa.Row]:
        """The run's steps with ``seq`` above ``after``, in order (one index range read)."""
        query = self.select(run_events.c.run_id == run_id, run_events.c.seq > after)
        return list(self.conn.execute(query.order_by(run_events.c.seq).limit(limit)).all())

    def last_seq(self, run_id: uuid.UUID) -> int:
        """The number of the run's last step, 0 when it has none."""
        query = sa.select(sa.func.coalesce(sa.func.max(run_events.c.seq), 0)).where(
            self.where(run_events.c.run_id == run_id)
        )
        return self.conn.execute(query).scalar_one()


def _check(kind: str) -> None:
    if not is_run_event_kind(kind):
        raise ValueError(f"unknown run event kind {kind!r}")
