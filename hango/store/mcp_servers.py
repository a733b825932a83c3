"""Queries on ``mcp_servers`` and ``agent_mcp_servers``: a tenant's MCP servers and the agents they serve."""

from __future__ import annotations

import uuid
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import insert

from hango.db.schema import agent_mcp_servers, mcp_servers
from hango.store.base import Scoped, new_id
from hango.store.pages import Page, page

# what a listing shows of a server: never its sealed headers
LISTED = [c for c in mcp_servers.c if c.name != "headers_sealed"]


class McpServers(Scoped):
    table = mcp_servers

    def page(self, cursor: str | None, limit: int) -> Page:
        return page(self.conn, sa.select(*LISTED).where(self.where()), mcp_servers, cursor, limit)

    def get(self, server_id: uuid.UUID) -> sa.Row | None:
        """The server with its sealed headers (for a connect), or None."""
        return self.conn.execute(self.select(mcp_servers.c.id == server_id)).first()

    def create(self, created_by: uuid.UUID, name: str, **fields: Any) -> sa.Row | None:
        """A new server, or None when the tenant already has one called ``name``."""
        stmt = (
            insert(mcp_servers)
            .values(id=new_id(), tenant_id=self.tenant_id, name=name, created_by=created_by, **fields)
            .on_conflict_do_nothing(index_elements=["tenant_id", "name"])
            .returning(*LISTED)
        )
        return self.conn.execute(stmt).first()

    def store_tools(
        self, server_id: uuid.UUID, tools: list[dict[str, Any]], tools_hash: str
    ) -> sa.Row | None:
        """Keep the tool list just read from the server, with its hash and the time it was read."""
        stmt = (
            sa.update(mcp_servers)
            .where(self.where(mcp_servers.c.id == server_id))
            .values(tools=tools, tools_hash=tools_hash, tools_read_at=sa.func.now())
            .returning(*LISTED)
        )
        return self.conn.execute(stmt).first()

    def delete(self, server_id: uuid.UUID) -> bool:
        return self.delete_rows(mcp_servers.c.id == server_id) == 1

    def attach(self, agent_id: uuid.UUID, server_id: uuid.UUID, tools: list[str] | None) -> None:
        """Attach the server to the agent with ``tools`` (None: all of them), or change the chosen tools."""
        values = {"tenant_id": self.tenant_id, "agent_id": agent_id, "server_id": server_id, "tools": tools}
        stmt = insert(agent_mcp_servers).values(**values)
        keys = ["tenant_id", "agent_id", "server_id"]
        self.conn.execute(
            stmt.on_conflict_do_update(index_elements=keys, set_={"tools": stmt.excluded.tools})
        )

    def detach(self, agent_id: uuid.UUID, server_id: uuid.UUID) -> bool:
        stmt = sa.delete(agent_mcp_servers).where(
            agent_mcp_servers.c.tenant_id == self.tenant_id,
            agent_mcp_servers.c.agent_id == agent_id,
            agent_mcp_servers.c.server_id == server_id,
        )
        return self.conn.execute(stmt).rowcount == 1

    def for_agent(self, agent_id: uuid.UUID) -> list[sa.Row]:
        """The agent's servers by name, each with its stored tool list and the tools chosen (``chosen``)."""
        return self._attached(agent_id, mcp_servers.c.tools)

    def for_run(self, agent_id: uuid.UUID) -> list[sa.Row]:
        """``for_agent`` without the stored tool lists, only their hashes: a worker keeps the lists it has
        read under their hash (``tool_lists`` reads the others), and a list is most of a row."""
        return self._attached(agent_id)

    def tool_lists(self, server_ids: list[uuid.UUID]) -> list[sa.Row]:
        """The stored tool list of each of ``server_ids`` with its hash (``id``, ``tools``, ``tools_hash``)."""
        query = sa.select(mcp_servers.c.id, mcp_servers.c.tools, mcp_servers.c.tools_hash)
        return list(self.conn.execute(query.where(self.where(mcp_servers.c.id.in_(server_ids)))))

    def _attached(self, agent_id: uuid.UUID, *more: sa.ColumnElement) -> list[sa.Row]:
        columns = [c for c in mcp_servers.c if c.name != "tools"]
        query = (
            sa.select(*columns, *more, agent_mcp_servers.c.tools.label("chosen"))
            .join(
                agent_mcp_servers,
                sa.and_(
                    agent_mcp_servers.c.server_id == mcp_servers.c.id,
                    agent_mcp_servers.c.tenant_id == mcp_servers.c.tenant_id,
                ),
            )
            .where(agent_mcp_servers.c.tenant_id == self.tenant_id, agent_mcp_servers.c.agent_id == agent_id)
            .order_by(mcp_servers.c.name)
        )
        return list(self.conn.execute(query))
