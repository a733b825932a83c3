"""A call's waiting part costs are stored uncompressed.

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-02

A ``pending_part_costs`` row holds what each part cost on one call (about 33 KB
of JSON at a 1,000-message session), and the workers' fold deletes it within
seconds. PostgreSQL compressed that value (pglz, to about 13 KB) on the call's
answer path: about half a millisecond of each recorded call's 1.1 ms insert, to
save space for a row that lives two seconds. ``storage external`` keeps such a
value out of line and uncompressed (``docs/performance.md``).
"""

from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("alter table pending_part_costs alter column costs set storage external")


def downgrade() -> None:
    op.execute("alter table pending_part_costs alter column costs set storage extended")
