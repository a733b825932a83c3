"""Queries on ``context_overrides``: an agent's (system/tool parts) or a session's (message/summary parts)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass

import sqlalchemy as sa

from hango.db.schema import agents, context_overrides, sessions
from hango.store.base import Scoped, new_id


def _for_run_statement(with_session: bool) -> sa.Select:
    """``ContextOverrides.for_run``'s statement (with a session or without), built once, its values
    bound at execution (``docs/performance.md``: building an inspect's statements cost more than
    running them)."""
    c = context_overrides.c
    of_session = (
        c.session_id == sa.bindparam("the_session", type_=c.session_id.type) if with_session else sa.false()
    )
    of_agent = c.agent_id == sa.bindparam("the_agent", type_=c.agent_id.type)
    tenant = c.tenant_id == sa.bindparam("the_tenant", type_=c.tenant_id.type)
    return sa.select(context_overrides).where(sa.and_(tenant, sa.or_(of_agent, of_session))).order_by(c.part)


_FOR_RUN, _FOR_AGENT = _for_run_statement(True), _for_run_statement(False)


@dataclass(frozen=True)
class Target:
    """Whose overrides: ``kind`` is ``agent`` or ``session``."""

    kind: str
    id: uuid.UUID

    @property
    def column(self) -> sa.Column:
        return context_overrides.c.agent_id if self.kind == "agent" else context_overrides.c.session_id


@dataclass(frozen=True)
class StoredOverride:
    part: str
    action: str
    replacement: str | None
    paired_from: str | None


class ContextOverrides(Scoped):
    table = context_overrides

    def list(self, target: Target) -> list[StoredOverride]:
        """The target's overrides, in part order."""
        query = self.select(target.column == target.id).order_by(context_overrides.c.part)
        return [_stored(row) for row in self.conn.execute(query)]

    def for_run(
        self, agent_id: uuid.UUID, session_id: uuid.UUID | None
    ) -> tuple[list[StoredOverride], list[StoredOverride]]:
        """The agent's and the session's overrides in one query (the agent's only, without a session)."""
        values = {"the_tenant": self.tenant_id, "the_agent": agent_id, "the_session": session_id}
        rows = self.conn.execute(_FOR_RUN if session_id is not None else _FOR_AGENT, values).all()
        return [_stored(r) for r in rows if r.agent_id], [_stored(r) for r in rows if r.session_id]

    def lock_target(self, target: Target) -> bool:
        """Lock the agent or session row so concurrent PUTs on it serialize; False when it is gone."""
        table = agents if target.kind == "agent" else sessions
        query = sa.select(table.c.id).where(table.c.tenant_id == self.tenant_id, table.c.id == target.id)
        return self.conn.execute(query.with_for_update()).first() is not None

    def replace(self, target: Target, overrides: Sequence[StoredOverride], created_by: uuid.UUID) -> None:
        """Delete the target's rows and insert the new set (the caller holds the target lock)."""
        self.delete_rows(target.column == target.id)
        if not overrides:
            return
        rows = [
            {
                "id": new_id(),
                "tenant_id": self.tenant_id,
                target.column.name: target.id,
                "part": o.part,
                "action": o.action,
                "replacement": o.replacement,
                "paired_from": o.paired_from,
                "created_by": created_by,
            }
            for o in overrides
        ]
        self.conn.execute(sa.insert(context_overrides), rows)

    def count_active(self) -> int:
        """How many overrides the tenant has (the ``hango.context.overrides.active`` gauge)."""
        return self.conn.execute(sa.select(sa.func.count()).where(self.where())).scalar_one()


def _stored(row: sa.Row) -> StoredOverride:
    return StoredOverride(row.part, row.action, row.replacement, row.paired_from)
