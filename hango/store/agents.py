"""Queries on ``agents``."""

from __future__ import annotations

import uuid
from typing import Any

import sqlalchemy as sa

from hango.db.schema import agents
from hango.store.base import Scoped, new_id
from hango.store.pages import Page, page

# built once, the tenant and agent bound at execution (``docs/performance.md``: an inspect's statements
# took more instructions to build than to run); parameters named for no column
_GET = sa.select(agents).where(
    agents.c.tenant_id == sa.bindparam("the_tenant", type_=agents.c.tenant_id.type),
    agents.c.id == sa.bindparam("the_agent", type_=agents.c.id.type),
)


class Agents(Scoped):
    table = agents

    def get(self, agent_id: uuid.UUID) -> sa.Row | None:
        return self.conn.execute(_GET, {"the_tenant": self.tenant_id, "the_agent": agent_id}).first()

    def lock(self, agent_id: uuid.UUID) -> sa.Row | None:
        """The agent row, locked until the transaction ends (serializes concurrent writers)."""
        return self.conn.execute(self.select(agents.c.id == agent_id).with_for_update()).first()

    def page(self, cursor: str | None, limit: int) -> Page:
        return page(self.conn, self.select(), agents, cursor, limit)

    def create(self, owner_id: uuid.UUID, **fields: Any) -> sa.Row:
        return self.insert_row(id=new_id(), owner_id=owner_id, updated_at=sa.func.now(), **fields)

    def update(self, agent_id: uuid.UUID, **fields: Any) -> sa.Row | None:
        return self.update_rows([agents.c.id == agent_id], updated_at=sa.func.now(), **fields)

    def delete(self, agent_id: uuid.UUID) -> bool:
        return self.delete_rows(agents.c.id == agent_id) == 1

    def by_name(self, name: str) -> sa.Row | None:
        """The tenant's oldest agent called ``name``."""
        query = self.select(agents.c.name == name).order_by(agents.c.created_at, agents.c.id).limit(1)
        return self.conn.execute(query).first()
