"""Message seqs are never reused: a per-session counter that only grows.

A failed run removes the user message it stored; numbering by ``max(seq) + 1``
then handed the same seq to the next message, so an override stored for the
removed message hid the new one. ``sessions.last_seq`` is bumped in the same
transaction as every message insert and never goes down.

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-01
"""

from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        """
        alter table sessions add column last_seq integer not null default 0 check (last_seq >= 0);
        update sessions s set last_seq = m.last
          from (select session_id, max(seq) as last from messages group by session_id) m
         where m.session_id = s.id;
        """
    )


def downgrade() -> None:
    op.execute("alter table sessions drop column last_seq")
