"""Queries on ``part_costs``: what each part of a session cost in total so far, over every call it rode in.

A recorded call does not touch the totals: its statement inserts one ``pending_part_costs`` row (what
each part cost on it), and the workers' periodic fold adds the waiting rows to ``part_costs``. A total
so far is the folded row plus the session's waiting ones, read in one statement, so it is whole the
moment its call is recorded, whenever the fold runs.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from decimal import Decimal

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import ARRAY, insert
from sqlalchemy.engine import Connection

from hango.db.schema import part_costs, pending_part_costs
from hango.store.base import Scoped

# One part's cost on one call: its id and what it cost (None when the call has no price).
PartCost = tuple[str, Decimal | None]
# How many waiting calls one fold statement takes.
FOLD_BATCH = 200


def _waiting(pending: sa.FromClause) -> sa.Select:
    """Each waiting (part, usd) of ``pending``'s rows: ``usd`` null where the call had no price."""
    each = sa.func.json_each_text(pending.c.costs).table_valued("key", "value").render_derived(name="each")
    return sa.select(pending.c.tenant_id, pending.c.session_id, each.c.key, each.c.value).select_from(
        pending.join(each, sa.true())
    )


def _totals_statement() -> sa.Select:
    """``PartCosts.of``'s statement: the folded rows of the wanted parts plus the session's waiting costs.

    One statement, so one snapshot: a fold committing meanwhile is seen either before or after, never half.
    """
    tenant = sa.bindparam("the_tenant", type_=part_costs.c.tenant_id.type)
    session = sa.bindparam("the_session", type_=part_costs.c.session_id.type)
    parts = sa.any_(sa.bindparam("the_parts", type_=ARRAY(sa.Text)))
    folded = sa.select(
        part_costs.c.part, part_costs.c.calls, part_costs.c.priced_calls, part_costs.c.usd
    ).where(part_costs.c.tenant_id == tenant, part_costs.c.session_id == session, part_costs.c.part == parts)
    waiting = _waiting(pending_part_costs).subquery("waiting")
    unfolded = sa.select(
        waiting.c.key,
        sa.literal(1),
        sa.case((waiting.c.value.is_(None), 0), else_=1),
        sa.func.coalesce(sa.cast(waiting.c.value, sa.Numeric), 0),
    ).where(waiting.c.tenant_id == tenant, waiting.c.session_id == session, waiting.c.key == parts)
    both = sa.union_all(folded, unfolded).subquery("both")
    return sa.select(
        both.c.part,
        sa.func.sum(both.c.calls).label("calls"),
        sa.func.sum(both.c.priced_calls).label("priced_calls"),
        sa.func.sum(both.c.usd).label("usd"),
    ).group_by(both.c.part)


def _fold_statement() -> sa.Select:
    """The fold: take up to ``the_batch`` waiting rows (skipping those another fold holds), add their costs
    to the totals in sorted order (two folds lock shared rows in the same order), and count what it took."""
    chosen = (
        sa.select(pending_part_costs.c.call_id)
        .order_by(pending_part_costs.c.call_id)
        .limit(sa.bindparam("the_batch"))
        .with_for_update(skip_locked=True)
    )
    taken = (
        sa.delete(pending_part_costs)
        .where(pending_part_costs.c.call_id.in_(chosen))
        .returning(
            pending_part_costs.c.tenant_id, pending_part_costs.c.session_id, pending_part_costs.c.costs
        )
        .cte("taken")
    )
    waiting = _waiting(taken).subquery("waiting")
    given = (
        sa.select(
            waiting.c.tenant_id,
            waiting.c.session_id,
            waiting.c.key,
            sa.func.count(),
            sa.func.count(waiting.c.value),
            sa.func.coalesce(sa.func.sum(sa.cast(waiting.c.value, sa.Numeric)), 0),
        )
        .group_by(waiting.c.tenant_id, waiting.c.session_id, waiting.c.key)
        .order_by(waiting.c.tenant_id, waiting.c.session_id, waiting.c.key)
    )
    adding = insert(part_costs).from_select(
        ["tenant_id", "session_id", "part", "calls", "priced_calls", "usd"], given
    )
    excluded = adding.excluded
    added = adding.on_conflict_do_update(
        index_elements=[part_costs.c.tenant_id, part_costs.c.session_id, part_costs.c.part],
        set_={
            "calls": part_costs.c.calls + excluded.calls,
            "priced_calls": part_costs.c.priced_calls + excluded.priced_calls,
            "usd": part_costs.c.usd + excluded.usd,
        },
    ).cte("added")
    return sa.select(sa.select(sa.func.count()).select_from(taken).scalar_subquery()).add_cte(added)


_TOTALS = _totals_statement()
_FOLD = _fold_statement()


def waiting_costs(costs: Iterable[PartCost]) -> dict[str, str | None]:
    """One call's part costs as its waiting row keeps them: ``{part: usd}``, a decimal string or null."""
    return {part: None if usd is None else str(usd) for part, usd in costs}


def waiting_insert(
    call_id: sa.BindParameter, tenant_id: sa.BindParameter, session_id: sa.BindParameter
) -> sa.Insert:
    """The insert that leaves a call's part costs (``the_costs``, ``waiting_costs``) waiting for the fold."""
    costs = sa.bindparam("the_costs", type_=pending_part_costs.c.costs.type)
    return sa.insert(pending_part_costs).values(
        call_id=call_id, tenant_id=tenant_id, session_id=session_id, costs=costs
    )


class PartCosts(Scoped):
    table = part_costs

    def of(self, session_id: uuid.UUID, parts: Iterable[str]) -> dict[str, sa.Row]:
        """The totals so far of ``parts`` in the session, by part: folded and waiting, one statement."""
        wanted = {"the_tenant": self.tenant_id, "the_session": session_id, "the_parts": sorted(set(parts))}
        return {row.part: row for row in self.conn.execute(_TOTALS, wanted)}


def fold_waiting(conn: Connection, batch: int = FOLD_BATCH) -> int:
    """Fold up to ``batch`` waiting calls, of any tenant, into the totals; returns how many it took."""
    return conn.execute(_FOLD, {"the_batch": batch}).scalar_one()
