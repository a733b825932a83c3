"""Deferred tools: what an agent defers, and what each session's model has revealed.

Revision ID: 0021
Revises: 0020
Create Date: 2026-12-07

``agents.defer`` holds the agent's deferral (``hango.agent.deferral``): the part ids it keeps out
of a request (a built-in ``tool:<name>``, an MCP server's ``tool:<server>/<tool>`` or a whole
server ``tool:<server>/*``) and ``auto_percent``, the share of the context window past which
every MCP server's tools are deferred. Existing agents defer nothing.

``revealed_tools`` holds, per session, each deferred tool the model found with ``tool_search``:
its part, the name the model calls it by, and the seq of the assistant message whose call
revealed it. A tool stays revealed for the rest of the session and keeps its first seq; the
rows go with the session.
"""

from alembic import op

revision = "0021"
down_revision = "0020"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        """
        alter table agents
          add column defer jsonb not null default '{"tools": [], "auto_percent": null}'
          check (
            jsonb_typeof(defer) = 'object'
            and jsonb_typeof(defer->'tools') = 'array'
            and jsonb_typeof(defer->'auto_percent') in ('null', 'number')
          );

        create table revealed_tools (
          tenant_id uuid not null,
          session_id uuid not null,
          part text not null check (part ~ '^tool:' and length(part) <= 200),
          name text not null check (length(name) between 1 and 64),
          seq integer not null check (seq >= 1),
          created_at timestamptz not null default clock_timestamp(),  -- the reveal itself, inside its turn
          primary key (session_id, part),
          foreign key (tenant_id, session_id) references sessions (tenant_id, id) on delete cascade
        );
        create index revealed_tools_tenant_idx on revealed_tools (tenant_id, session_id, seq);
        """
    )


def downgrade() -> None:
    op.execute("drop table revealed_tools; alter table agents drop column defer;")
