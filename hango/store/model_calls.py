"""Queries on ``model_calls``, the call ledger: one row per model call, written with its usage row."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa

from hango.db.schema import model_calls, usage_records
from hango.store.base import Scoped, new_id
from hango.store.pages import Page, page
from hango.store.part_costs import PartCost, PartCosts

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
    model_calls.c.base_id,
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

    def record(
        self, usage: dict[str, Any], call: dict[str, Any], costs: Sequence[PartCost] = ()
    ) -> uuid.UUID:
        """Write a call's usage row and its ledger row in one statement; return the ledger row's id.

        ``costs`` (what each part cost on this call) are added to the session's part totals
        in the same statement.
        """
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
        stmt = sa.insert(model_calls).from_select([*values, "usage_id"], sa.select(*literals, recorded.c.id))
        adding = PartCosts(self.conn, self.tenant_id).adding(call["session_id"], costs)
        if adding is not None:
            stmt = stmt.add_cte(adding.cte("part_totals"))
        self.conn.execute(stmt)
        return call_id

    def chain(self, session_id: uuid.UUID, call_id: uuid.UUID, *, with_base: bool = False) -> list[sa.Row]:
        """The rows that rebuild one call, oldest first: back along ``base_id`` to the nearest whole row.

        At most ``SNAPSHOT_EVERY`` rows (``hango.agent.ledger.record``). ``with_base`` goes on
        past a whole call to its base's chain, so the previous call is rebuilt too. Empty when
        the call is not the session's.
        """
        seed = model_calls.c.id == call_id
        return self._chain(seed, session_id, with_base)

    def latest_chain(self, session_id: uuid.UUID, purposes: Sequence[str]) -> list[sa.Row]:
        """The rows that rebuild the session's latest call of ``purposes``, oldest first (empty when none)."""
        latest = self._latest(session_id, purposes).scalar_subquery()
        return self._chain(model_calls.c.id == latest, session_id, False)

    def _chain(self, seed: sa.ColumnElement, session_id: uuid.UUID, with_base: bool) -> list[sa.Row]:
        # each row with the prompt the provider counted for it (``reported_prompt``)
        joined = model_calls.join(usage_records, usage_records.c.id == model_calls.c.usage_id)
        start = (
            sa.select(*LEDGER_COLUMNS, REPORTED_PROMPT, sa.literal(0).label("hop"))
            .select_from(joined)
            .where(self.where(model_calls.c.session_id == session_id, seed))
            .cte("chain", recursive=True)
        )
        onward = start.c.prefix_parts > 0
        if with_base:
            onward = onward | (start.c.hop == 0)
        step = (
            sa.select(*LEDGER_COLUMNS, REPORTED_PROMPT, (start.c.hop + 1).label("hop"))
            .select_from(joined)
            .join(start, model_calls.c.id == start.c.base_id)
            .where(onward, model_calls.c.tenant_id == self.tenant_id)
        )
        chain = start.union_all(step)
        return list(self.conn.execute(sa.select(chain).order_by(chain.c.hop.desc())))

    def latest_id(self, session_id: uuid.UUID, purposes: Sequence[str]) -> uuid.UUID | None:
        """The session's latest call of ``purposes``, or None."""
        return self.conn.execute(self._latest(session_id, purposes)).scalar()

    def _latest(self, session_id: uuid.UUID, purposes: Sequence[str]) -> sa.Select:
        return (
            sa.select(model_calls.c.id)
            .where(self.where(model_calls.c.session_id == session_id, model_calls.c.purpose.in_(purposes)))
            .order_by(model_calls.c.started_at.desc(), model_calls.c.id.desc())
            .limit(1)
        )

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
