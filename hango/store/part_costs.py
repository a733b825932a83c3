"""Queries on ``part_costs``: what each part of a session cost in total so far, over every call it rode in."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from decimal import Decimal

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import ARRAY, UUID, insert

from hango.db.schema import part_costs
from hango.store.base import Scoped

# One part's cost on one call: its id and what it cost (None when the call has no price).
PartCost = tuple[str, Decimal | None]


class PartCosts(Scoped):
    table = part_costs

    def adding(self, session_id: uuid.UUID, costs: Iterable[PartCost]) -> sa.Insert | None:
        """The upsert that adds one call's part costs to the session's totals (None without parts).

        Parts go in sorted order, so two calls recorded at once lock their rows in the same order.
        """
        added = sorted(dict(costs).items())
        if not added:
            return None
        given = (
            sa.func.unnest(
                sa.bindparam("parts", [part for part, _ in added], type_=ARRAY(sa.Text)),
                sa.bindparam(
                    "priced", [0 if usd is None else 1 for _, usd in added], type_=ARRAY(sa.Integer)
                ),
                sa.bindparam("usd", [usd or Decimal(0) for _, usd in added], type_=ARRAY(sa.Numeric)),
            )
            .table_valued("part", "priced_calls", "usd")
            .render_derived(name="given")
        )
        # One statement whatever the number of parts: the call's parts come as three arrays.
        rows = sa.select(
            sa.literal(self.tenant_id, UUID(as_uuid=True)),
            sa.literal(session_id, UUID(as_uuid=True)),
            given.c.part,
            sa.literal(1),
            given.c.priced_calls,
            given.c.usd,
        )
        stmt = insert(part_costs).from_select(
            ["tenant_id", "session_id", "part", "calls", "priced_calls", "usd"], rows
        )
        excluded = stmt.excluded
        return stmt.on_conflict_do_update(
            index_elements=[part_costs.c.tenant_id, part_costs.c.session_id, part_costs.c.part],
            set_={
                "calls": part_costs.c.calls + excluded.calls,
                "priced_calls": part_costs.c.priced_calls + excluded.priced_calls,
                "usd": part_costs.c.usd + excluded.usd,
            },
        )

    def of(self, session_id: uuid.UUID, parts: Iterable[str]) -> dict[str, sa.Row]:
        """The totals so far of ``parts`` in the session, by part (one indexed read, a row per part)."""
        query = sa.select(part_costs.c.part, part_costs.c.calls, part_costs.c.priced_calls, part_costs.c.usd)
        wanted = sa.any_(sa.bindparam("parts", sorted(set(parts)), type_=ARRAY(sa.Text)))
        query = query.where(self.where(part_costs.c.session_id == session_id, part_costs.c.part == wanted))
        return {row.part: row for row in self.conn.execute(query)}
