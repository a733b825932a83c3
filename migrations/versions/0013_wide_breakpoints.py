"""A ledger row's breakpoints are ``integer[]``: a call may send more than 32,767 parts.

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-02

``model_calls.breakpoints`` holds the positions, in the call's parts, of the
cache breakpoints hango placed. They were ``smallint[]``, so a call of a session
that had grown past 32,767 parts (an agent with a window of a million tokens
and short messages: no compaction yet) failed to record after the provider had
answered, and the answer was lost. The downgrade narrows them back and refuses,
as PostgreSQL does, when a stored position does not fit.
"""

from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("alter table model_calls alter column breakpoints type integer[]")


def downgrade() -> None:
    op.execute("alter table model_calls alter column breakpoints type smallint[]")
