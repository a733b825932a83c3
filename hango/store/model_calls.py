"""Queries on ``model_calls``, the call ledger: one row per model call, written with its usage row."""

from __future__ import annotations

import functools
import uuid
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import ARRAY

from hango.db.schema import model_calls, usage_records
from hango.messages import prompt_tokens
from hango.store.base import Scoped, new_id
from hango.store.pages import Page, page
from hango.store.part_costs import PartCost, waiting_costs, waiting_insert

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
REPORTED_PROMPT = prompt_tokens(usage_records.c).label("reported_prompt")
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


# The statements below are built once, their values bound parameters named for no column
# (``hango.store.sessions``: building a statement took longer than running it).
_TENANT = sa.bindparam("the_tenant", type_=model_calls.c.tenant_id.type)
_SESSION = sa.bindparam("the_session", type_=model_calls.c.session_id.type)
_OF_SESSION = sa.and_(model_calls.c.tenant_id == _TENANT, model_calls.c.session_id == _SESSION)
_LATEST = (
    sa.select(model_calls.c.id)
    .where(_OF_SESSION, model_calls.c.purpose == sa.any_(sa.bindparam("the_purposes", type_=ARRAY(sa.Text))))
    .order_by(model_calls.c.started_at.desc(), model_calls.c.id.desc())
    .limit(1)
)


def _chain_statement(seed: sa.ColumnElement[bool], with_base: bool, known: bool = False) -> sa.Select:
    """The chain of the call ``seed`` picks, oldest first: the call with the prompt the provider counted
    for it (``reported_prompt``, from its usage row), then each base by its primary key.

    A base must be of the chain's tenant, compared with the row before it rather than with the
    parameter: a constant would let the planner walk the tenant's calls by the session index, for
    every step, whenever its statistics think the tenant has few.
    """
    joined = model_calls.join(usage_records, usage_records.c.id == model_calls.c.usage_id)
    start = (
        sa.select(*LEDGER_COLUMNS, model_calls.c.tenant_id, REPORTED_PROMPT, sa.literal(0).label("hop"))
        .select_from(joined)
        .where(_OF_SESSION, seed)
        .cte("chain", recursive=True)
    )
    onward = start.c.prefix_parts > 0
    if known:  # a call the caller holds ends the chain like a whole row
        onward = onward & (
            start.c.id != sa.all_(sa.bindparam("the_known", type_=ARRAY(model_calls.c.id.type)))
        )
    if with_base:
        onward = onward | (start.c.hop == 0)
    step = (
        sa.select(
            *LEDGER_COLUMNS,
            model_calls.c.tenant_id,
            sa.cast(sa.null(), sa.Integer).label("reported_prompt"),
            (start.c.hop + 1).label("hop"),
        )
        .select_from(start)
        .join(model_calls, model_calls.c.id == start.c.base_id)
        .where(onward, model_calls.c.tenant_id == start.c.tenant_id)
    )
    chain = start.union_all(step)
    return sa.select(chain).order_by(chain.c.hop.desc())


_BY_ID = model_calls.c.id == sa.bindparam("the_call", type_=model_calls.c.id.type)
_CHAIN_OF_CALL = {with_base: _chain_statement(_BY_ID, with_base) for with_base in (False, True)}
_CHAIN_OF_LATEST = _chain_statement(model_calls.c.id == _LATEST.scalar_subquery(), False, known=True)


@functools.cache
def _record_statement(usage: tuple[str, ...], call: tuple[str, ...], with_costs: bool) -> sa.Insert:
    """``ModelCalls.record``'s statement for rows of these columns, built once: the usage row, the ledger
    row with the usage row's id and (``with_costs``) the call's waiting part costs. Values are bound
    parameters: ``usage_<column>``, ``call_<column>``, ``the_tenant``, ``the_usage``, ``the_call``,
    ``the_costs``."""
    tenant = sa.bindparam("the_tenant", type_=model_calls.c.tenant_id.type)
    call_id = sa.bindparam("the_call", type_=model_calls.c.id.type)
    given = {name: sa.bindparam(f"usage_{name}", type_=usage_records.c[name].type) for name in usage}
    recorded = (
        sa.insert(usage_records)
        .values(id=sa.bindparam("the_usage", type_=usage_records.c.id.type), tenant_id=tenant, **given)
        .returning(usage_records.c.id)
        .cte("recorded")
    )
    row = [sa.bindparam(f"call_{name}", type_=model_calls.c[name].type) for name in call]
    stmt = sa.insert(model_calls).from_select(
        ["id", "tenant_id", *call, "usage_id"], sa.select(call_id, tenant, *row, recorded.c.id)
    )
    if with_costs:
        session = sa.bindparam("call_session_id", type_=model_calls.c.session_id.type)
        stmt = stmt.add_cte(waiting_insert(call_id, tenant, session).cte("part_costs"))
    return stmt


class ModelCalls(Scoped):
    table = model_calls

    def record(
        self, usage: dict[str, Any], call: dict[str, Any], costs: Sequence[PartCost] = ()
    ) -> uuid.UUID:
        """Write a call's usage row and its ledger row in one statement; return the ledger row's id.

        ``costs`` (what each part cost on this call) wait in the same statement for the fold into
        the session's part totals (``hango.store.part_costs``).
        """
        call_id = new_id()
        values = {f"usage_{name}": value for name, value in usage.items()}
        values |= {f"call_{name}": value for name, value in call.items()}
        values |= {"the_tenant": self.tenant_id, "the_usage": new_id(), "the_call": call_id}
        waiting = waiting_costs(costs)
        if waiting:
            values["the_costs"] = waiting
        self.conn.execute(_record_statement(tuple(usage), tuple(call), bool(waiting)), values)
        return call_id

    def chain(self, session_id: uuid.UUID, call_id: uuid.UUID, *, with_base: bool = False) -> list[sa.Row]:
        """The rows that rebuild one call, oldest first: back along ``base_id`` to the nearest whole row.

        At most ``SNAPSHOT_EVERY`` rows (``hango.agent.ledger.record``). ``with_base`` goes on
        past a whole call to its base's chain, so the previous call is rebuilt too. Empty when
        the call is not the session's.
        """
        wanted = {"the_tenant": self.tenant_id, "the_session": session_id, "the_call": call_id}
        return list(self.conn.execute(_CHAIN_OF_CALL[with_base], wanted))

    def latest_chain(
        self, session_id: uuid.UUID, purposes: Sequence[str], known: Sequence[uuid.UUID] = ()
    ) -> list[sa.Row]:
        """The rows that rebuild the session's latest call of ``purposes``, oldest first (empty when none).

        The chain stops at a ``known`` call (one the caller holds already) as at a whole row.
        """
        wanted = {"the_tenant": self.tenant_id, "the_session": session_id, "the_purposes": list(purposes)}
        return list(self.conn.execute(_CHAIN_OF_LATEST, wanted | {"the_known": list(known)}))

    def latest_id(self, session_id: uuid.UUID, purposes: Sequence[str]) -> uuid.UUID | None:
        """The session's latest call of ``purposes``, or None."""
        wanted = {"the_tenant": self.tenant_id, "the_session": session_id, "the_purposes": list(purposes)}
        return self.conn.execute(_LATEST, wanted).scalar()

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
