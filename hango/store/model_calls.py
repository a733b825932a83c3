"""Queries on ``model_calls``, the call ledger: one row per model call, written with its usage row."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa

from hango.db.schema import model_calls, usage_records
from hango.store.base import Scoped, new_id
from hango.store.pages import Page, page

# What rebuilding a call's parts needs (see ``hango.agent.ledger.rebuild``).
LEDGER_COLUMNS = (
    model_calls.c.id,
    model_calls.c.purpose,
    model_calls.c.base_id,
    model_calls.c.prefix_parts,
    model_calls.c.tail,
    model_calls.c.breakpoints,
    model_calls.c.started_at,
    model_calls.c.duration_ms,
)
# The prompt the provider counted for a call: what the next call's expected cache read is scaled by.
REPORTED_PROMPT = (
    usage_records.c.input_tokens + usage_records.c.cache_read_tokens + usage_records.c.cache_write_tokens
).label("reported_prompt")
# What a listed call shows, with the usage row's reported tokens and estimate.
LISTED_COLUMNS = (
    model_calls.c.id,
    model_calls.c.run_id,
    model_calls.c.purpose,
    model_calls.c.model,
    model_calls.c.started_at,
    model_calls.c.duration_ms,
    model_calls.c.parts_count,
    model_calls.c.expected_cache_read,
    model_calls.c.miss_reason,
    model_calls.c.miss_part,
    model_calls.c.miss_cause,
    usage_records.c.input_tokens,
    usage_records.c.output_tokens,
    usage_records.c.cache_read_tokens,
    usage_records.c.cache_write_tokens,
    usage_records.c.estimated_input_tokens,
)


class ModelCalls(Scoped):
    table = model_calls

    def record(self, usage: dict[str, Any], call: dict[str, Any]) -> uuid.UUID:
        """Write a call's usage row and its ledger row in one statement; return the ledger row's id."""
        usage_id, call_id = new_id(), new_id()
        recorded = (
            sa.insert(usage_records)
            .values(id=usage_id, tenant_id=self.tenant_id, **usage)
            .returning(usage_records.c.id)
            .cte("recorded")
        )
        values = {"id": call_id, "tenant_id": self.tenant_id, **call}
        literals = [
            sa.bindparam(None, value, type_=model_calls.c[name].type) for name, value in values.items()
        ]
        self.conn.execute(
            sa.insert(model_calls).from_select([*values, "usage_id"], sa.select(*literals, recorded.c.id))
        )
        return call_id

    def lineage(self, session_id: uuid.UUID, purposes: Sequence[str] | None = None) -> list[sa.Row]:
        """The session's calls (of ``purposes``, when given), oldest first, with what rebuilding them needs
        and the prompt the provider counted for each (``reported_prompt``)."""
        conditions = [model_calls.c.session_id == session_id]
        if purposes is not None:
            conditions.append(model_calls.c.purpose.in_(purposes))
        joined = model_calls.join(usage_records, usage_records.c.id == model_calls.c.usage_id)
        query = sa.select(*LEDGER_COLUMNS, REPORTED_PROMPT).select_from(joined).where(self.where(*conditions))
        return list(self.conn.execute(query.order_by(model_calls.c.started_at, model_calls.c.id)))

    def page(self, session_id: uuid.UUID, cursor: str | None, limit: int) -> Page:
        """A page of the session's calls, newest first, each with its usage."""
        query = self._listed().where(self.where(model_calls.c.session_id == session_id))
        order = (model_calls.c.started_at, model_calls.c.id)
        return page(self.conn, query, model_calls, cursor, limit, order=order, newest_first=True)

    def get(self, session_id: uuid.UUID, call_id: uuid.UUID) -> sa.Row | None:
        """One call of the session with its usage, or None."""
        query = self._listed().where(
            self.where(model_calls.c.session_id == session_id, model_calls.c.id == call_id)
        )
        return self.conn.execute(query).first()

    def _listed(self) -> sa.Select:
        joined = model_calls.join(usage_records, usage_records.c.id == model_calls.c.usage_id)
        return sa.select(*LISTED_COLUMNS).select_from(joined)
