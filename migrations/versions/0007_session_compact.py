"""Compact-now: the ``session.compact`` audit action.

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-01
"""

from alembic import op

from hango.db.audit_actions import change_actions

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

COMPACT_ACTIONS = ("session.compact",)


def upgrade() -> None:
    change_actions(op.get_bind(), add=COMPACT_ACTIONS)


def downgrade() -> None:
    change_actions(op.get_bind(), remove=COMPACT_ACTIONS)
