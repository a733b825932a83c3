"""Each message's token estimate, stored with the estimator version that made it.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-01

No backfill: a NULL (or an older version) means "not estimated by the current
estimator yet"; readers estimate such a message themselves and a run stores the
result (``docs/performance.md``). Adding nullable columns without a default
rewrites nothing, so the upgrade is instant on any history.
"""

from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        """
        alter table messages add column tokens integer check (tokens >= 0);
        alter table messages add column estimator_version integer;
        alter table messages add constraint messages_estimate_check
          check ((tokens is null) = (estimator_version is null));
        """
    )


def downgrade() -> None:
    op.execute(
        """
        alter table messages drop constraint messages_estimate_check;
        alter table messages drop column estimator_version;
        alter table messages drop column tokens;
        """
    )
