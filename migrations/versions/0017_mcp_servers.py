"""MCP servers as tool sources: a tenant's servers, their stored tool lists, the agents they serve.

Revision ID: 0017
Revises: 0016
Create Date: 2026-12-04

``mcp_servers`` holds a tenant's servers: an operator catalog entry (by name) or a
Streamable HTTP URL with its header secrets sealed under ``HANGO_SECRET_KEY``
(only the header names are kept in the clear). The tool list read at attach or
refresh is stored with its hash and the time it was read. ``agent_mcp_servers``
attaches a server to an agent with all its tools (``tools`` null) or a subset.
"""

from alembic import op

from hango.db.audit_actions import change_actions

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None

MCP_ACTIONS = (
    "mcp_server.create",
    "mcp_server.delete",
    "mcp_server.refresh",
    "agent.mcp_attach",
    "agent.mcp_detach",
)


def upgrade() -> None:
    op.execute(
        """
        create table mcp_servers (
          id uuid primary key,
          tenant_id uuid not null references tenants(id) on delete cascade,
          name text not null check (name ~ '^[a-z0-9][a-z0-9_-]{0,31}$'),
          catalog text,
          url text check (length(url) <= 2000),
          header_names jsonb not null default '[]',
          headers_sealed bytea,
          tools jsonb,
          tools_hash text,
          tools_read_at timestamptz,
          created_by uuid not null references users(id),
          created_at timestamptz not null default now(),
          check (num_nonnulls(catalog, url) = 1),
          check (headers_sealed is null or url is not null),
          check ((tools is null) = (tools_hash is null) and (tools is null) = (tools_read_at is null))
        );
        create unique index mcp_servers_name_idx on mcp_servers (tenant_id, name);

        create table agent_mcp_servers (
          tenant_id uuid not null references tenants(id) on delete cascade,
          agent_id uuid not null references agents(id) on delete cascade,
          server_id uuid not null references mcp_servers(id) on delete cascade,
          tools jsonb,
          created_at timestamptz not null default now(),
          primary key (tenant_id, agent_id, server_id)
        );
        create index agent_mcp_servers_server_idx on agent_mcp_servers (tenant_id, server_id);
        """
    )
    change_actions(op.get_bind(), add=MCP_ACTIONS)


def downgrade() -> None:
    op.execute("drop table agent_mcp_servers; drop table mcp_servers;")
    change_actions(op.get_bind(), remove=MCP_ACTIONS)
