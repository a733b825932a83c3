"""Queries on ``skills``: named instructions an agent reads on demand."""

from __future__ import annotations

import uuid
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import insert

from hango.db.schema import skills
from hango.store.base import Scoped, new_id
from hango.store.pages import Page, page

# ``Skills.for_run``'s statement, built once, its values bound at execution (``docs/performance.md``)
_FOR_RUN = (
    sa.select(skills.c.name, skills.c.description, skills.c.body, skills.c.allowed_tools)
    .where(
        skills.c.tenant_id == sa.bindparam("the_tenant", type_=skills.c.tenant_id.type),
        skills.c.agent_id == sa.bindparam("the_agent", type_=skills.c.agent_id.type),
    )
    .order_by(skills.c.name)
    .limit(sa.bindparam("the_limit", type_=sa.Integer))
)


class Skills(Scoped):
    table = skills

    def page(self, agent_id: uuid.UUID, cursor: str | None, limit: int) -> Page:
        """A page of the agent's skills, oldest first."""
        return page(self.conn, self.select(skills.c.agent_id == agent_id), skills, cursor, limit)

    def for_run(self, agent_id: uuid.UUID, limit: int) -> list[sa.Row]:
        """The agent's first ``limit`` skills by name (name, description, body, allowed tools), in one query."""
        values = {"the_tenant": self.tenant_id, "the_agent": agent_id, "the_limit": limit}
        return list(self.conn.execute(_FOR_RUN, values))

    def get(self, agent_id: uuid.UUID, name: str) -> sa.Row | None:
        """The agent's skill called ``name``, or None."""
        query = self.select(skills.c.agent_id == agent_id, skills.c.name == name)
        return self.conn.execute(query).first()

    def create(self, agent_id: uuid.UUID, name: str, **fields: Any) -> sa.Row | None:
        """A new skill, or None when the agent already has one named ``name``."""
        stmt = (
            insert(skills)
            .values(id=new_id(), tenant_id=self.tenant_id, agent_id=agent_id, name=name, **fields)
            .on_conflict_do_nothing(index_elements=["agent_id", "name"])
            .returning(skills)
        )
        return self.conn.execute(stmt).first()

    def update(self, agent_id: uuid.UUID, name: str, **fields: Any) -> sa.Row | None:
        """Change the agent's skill called ``name``; None when there is none."""
        conditions = [skills.c.agent_id == agent_id, skills.c.name == name]
        return self.update_rows(conditions, updated_at=sa.func.now(), **fields)

    def delete(self, agent_id: uuid.UUID, name: str) -> bool:
        """Delete the agent's skill called ``name``; False when there was none."""
        return self.delete_rows(skills.c.agent_id == agent_id, skills.c.name == name) == 1
