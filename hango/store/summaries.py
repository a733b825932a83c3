"""Queries on ``session_summaries``: the latest row replaces the messages it covers in requests."""

from __future__ import annotations

import uuid

import sqlalchemy as sa

from hango.db.schema import session_summaries
from hango.store.base import Scoped, new_id


class Summaries(Scoped):
    table = session_summaries

    def latest(self, session_id: uuid.UUID) -> sa.Row | None:
        query = self.select(session_summaries.c.session_id == session_id)
        order = (session_summaries.c.through_seq.desc(), session_summaries.c.created_at.desc())
        return self.conn.execute(query.order_by(*order).limit(1)).first()

    def create(self, session_id: uuid.UUID, through_seq: int, text: str) -> sa.Row:
        return self.insert_row(id=new_id(), session_id=session_id, through_seq=through_seq, text=text)
