"""Queries on ``session_summaries``: the latest row replaces the messages it covers in requests."""

from __future__ import annotations

import uuid

import sqlalchemy as sa

from hango.db.schema import session_summaries
from hango.store.base import Scoped, new_id

# built once, the tenant and session bound at execution (``docs/performance.md``)
_LATEST = (
    sa.select(session_summaries)
    .where(
        session_summaries.c.tenant_id == sa.bindparam("the_tenant", type_=session_summaries.c.tenant_id.type),
        session_summaries.c.session_id
        == sa.bindparam("the_session", type_=session_summaries.c.session_id.type),
    )
    .order_by(session_summaries.c.through_seq.desc(), session_summaries.c.created_at.desc())
    .limit(1)
)


class Summaries(Scoped):
    table = session_summaries

    def latest(self, session_id: uuid.UUID) -> sa.Row | None:
        return self.conn.execute(_LATEST, {"the_tenant": self.tenant_id, "the_session": session_id}).first()

    def create(self, session_id: uuid.UUID, through_seq: int, text: str) -> sa.Row:
        return self.insert_row(id=new_id(), session_id=session_id, through_seq=through_seq, text=text)
