"""A run's MCP tool calls are audited: the ``mcp_server.call`` action.

Revision ID: 0018
Revises: 0017
Create Date: 2026-12-05

One row per ``tools/call`` a run made, on the server's id: the server and tool names,
how the call ended and how long it took, the run and session; never its arguments
or its answer. ``GET /v1/usage`` counts them per server and tool.
"""

from alembic import op

from hango.db.audit_actions import change_actions

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None

ACTIONS = ("mcp_server.call",)


def upgrade() -> None:
    change_actions(op.get_bind(), add=ACTIONS)


def downgrade() -> None:
    change_actions(op.get_bind(), remove=ACTIONS)
