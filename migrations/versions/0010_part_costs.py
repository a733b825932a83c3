"""A part's cost in total so far: per session and part, the calls it rode in and what they cost it.

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-01

The gateway adds a call's part costs (what each part cost on that call, at the
rate the provider read it at: ``hango.providers.prices.part_costs``) to its
session's ``part_costs`` rows in the statement that records the call, so
showing a part's total so far reads one row per part, never the session's
calls. ``calls`` counts the calls the part rode in, ``priced_calls`` those the
price table priced (``usd`` sums those only: an unknown model adds no guess).
Every call updates a row per part it sent, so pages are kept half empty
(``fillfactor = 50``): an update finds room on its own page and stays a HOT
update (no indexed column changes), so the primary key keeps one entry per row
and reading a part's total never walks the old versions of 3,000 calls.
This revision sums the calls recorded before it, one session at a time, priced
by the genai-prices table installed at upgrade time and ``HANGO_PRICES`` from the
environment (the server's own prices when both are the server's).
"""

from __future__ import annotations

import os
from decimal import Decimal
from typing import Any

import sqlalchemy as sa
from alembic import op

from hango.providers.prices import Prices, Tokens, part_costs

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None

ROWS = sa.text(
    "select c.id, c.tenant_id, c.base_id, c.prefix_parts, c.tail, c.model, c.started_at, "
    "u.input_tokens, u.cache_read_tokens, u.cache_write_tokens, u.output_tokens "
    "from model_calls c join usage_records u on u.id = c.usage_id "
    "where c.session_id = :session order by c.started_at, c.id"
)
TOTAL = sa.text(
    "insert into part_costs (tenant_id, session_id, part, calls, priced_calls, usd) "
    "values (:tenant, :session, :part, :calls, :priced_calls, :usd)"
)


def upgrade() -> None:
    op.execute(
        """
        create table part_costs (
          tenant_id uuid not null,
          session_id uuid not null,
          part text not null,
          calls integer not null check (calls > 0),
          priced_calls integer not null check (priced_calls between 0 and calls),
          usd numeric not null check (usd >= 0),
          primary key (tenant_id, session_id, part),
          foreign key (tenant_id, session_id) references sessions (tenant_id, id) on delete cascade
        ) with (fillfactor = 50)
        """
    )
    conn = op.get_bind()
    prices = Prices(os.environ.get("HANGO_PRICES") or None)
    sessions = conn.execute(sa.text("select distinct session_id from model_calls")).scalars().all()
    for session in sessions:
        _sum_session(conn, session, prices)


def _sum_session(conn: sa.Connection, session: Any, prices: Prices) -> None:
    """Replay the session's calls oldest first (each rebuilt from its base) and sum each part's costs."""
    parts: dict[Any, list[Any]] = {}
    totals: dict[str, dict[str, Any]] = {}
    tenant = None
    for row in conn.execute(ROWS, {"session": session}):
        tenant = row.tenant_id
        base = parts[row.base_id][: row.prefix_parts] if row.prefix_parts > 0 else []
        parts[row.id] = sent = base + list(row.tail)
        tokens = Tokens(row.input_tokens, row.cache_read_tokens, row.cache_write_tokens, row.output_tokens)
        costs = part_costs(prices.rates(row.model, row.started_at), [size for _, _, size in sent], tokens)
        for (part, _, _), usd in zip(sent, costs, strict=True):
            total = totals.setdefault(part, {"calls": 0, "priced_calls": 0, "usd": Decimal(0)})
            total["calls"] += 1
            if usd is not None:
                total["priced_calls"] += 1
                total["usd"] += usd
    for part, total in totals.items():
        conn.execute(TOTAL, {"tenant": tenant, "session": session, "part": part, **total})


def downgrade() -> None:
    op.execute("drop table part_costs")
