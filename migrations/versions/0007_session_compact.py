"""Compact-now: the ``session.compact`` audit action.

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-01
"""

from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

# The closed set as the previous revision left it; this revision adds one action.
PREVIOUS_ACTIONS = (
    "tenant.bootstrap",
    "tenant.update",
    "member.create",
    "member.delete",
    "api_key.create",
    "api_key.update",
    "api_key.delete",
    "agent.create",
    "agent.update",
    "agent.delete",
    "memory.put",
    "memory.delete",
    "skill.create",
    "skill.update",
    "skill.delete",
    "session.create",
    "session.delete",
    "run.create",
    "context.override",
    "context.try",
)
COMPACT_ACTIONS = ("session.compact",)


def upgrade() -> None:
    _audit_actions(PREVIOUS_ACTIONS + COMPACT_ACTIONS)


def downgrade() -> None:
    op.execute("delete from audit_log where action = 'session.compact'")
    _audit_actions(PREVIOUS_ACTIONS)


def _audit_actions(actions: tuple[str, ...]) -> None:
    listed = ", ".join(f"'{a}'" for a in actions)
    op.execute(
        "alter table audit_log drop constraint audit_log_action_check; "
        f"alter table audit_log add constraint audit_log_action_check check (action in ({listed}))"
    )
