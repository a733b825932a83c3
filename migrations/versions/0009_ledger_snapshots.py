"""Bounded ledger reads: a whole row every 32 calls of a chain, so one call rebuilds from at most 32 rows.

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-01

Until now a call was a delta against its base however long the chain, so
rebuilding one call read the session's whole ledger. From now on the gateway
stores a call whole (``prefix_parts = 0``, every part in ``tail``) when its base
lies 31 deltas from a whole row, and keeps ``base_id`` on whole rows too (the
previous call of the lineage, for "what changed since"). This revision rewrites
the existing rows the same way, one session at a time. The chain walk reads a
base by its primary key; "the latest call of a lineage" reads the session index.
"""

from __future__ import annotations

import json
from typing import Any

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

# Frozen here: a later change of ``hango.agent.ledger.record.SNAPSHOT_EVERY`` applies to new rows only.
SNAPSHOT_EVERY = 32
ROWS = sa.text(
    "select id, base_id, prefix_parts, tail from model_calls "
    "where session_id = :session order by started_at, id"
)
WHOLE = sa.text("update model_calls set prefix_parts = 0, tail = cast(:tail as jsonb) where id = :id")


def upgrade() -> None:
    conn = op.get_bind()
    sessions = conn.execute(sa.text("select distinct session_id from model_calls")).scalars().all()
    for session in sessions:
        _snapshot_session(conn, session)


def _snapshot_session(conn: sa.Connection, session: Any) -> None:
    """Store whole every row that lies ``SNAPSHOT_EVERY`` rows from a whole one (rows come oldest first)."""
    parts: dict[Any, list[Any]] = {}
    depth: dict[Any, int] = {}
    for row in conn.execute(ROWS, {"session": session}):
        delta = row.prefix_parts > 0
        parts[row.id] = (parts[row.base_id][: row.prefix_parts] if delta else []) + list(row.tail)
        depth[row.id] = depth[row.base_id] + 1 if delta else 0
        if depth[row.id] >= SNAPSHOT_EVERY:
            conn.execute(WHOLE, {"id": row.id, "tail": json.dumps(parts[row.id])})
            depth[row.id] = 0


def downgrade() -> None:
    # Whole rows are valid deltas of length zero: the older code rebuilds them as they are.
    pass
