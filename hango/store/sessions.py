"""Queries on ``sessions``."""

from __future__ import annotations

import uuid

import sqlalchemy as sa

from hango.db.schema import runs, sessions
from hango.store.base import Scoped, new_id
from hango.store.pages import Page, page
from hango.store.runs import reap_dead_runs


def _get_statement() -> sa.Select:
    """``Sessions.get``'s statement, built once with its tenant and session as bound parameters
    (``docs/performance.md``: building it took more instructions than running it). The parameters
    are named for no column: an UPDATE would take a parameter named for a column as a value to set."""
    tenant_id = sa.bindparam("the_tenant", type_=sessions.c.tenant_id.type)
    session_id = sa.bindparam("the_session", type_=sessions.c.id.type)
    reaped = reap_dead_runs(tenant_id, runs.c.session_id == session_id)
    wanted = sa.and_(sessions.c.tenant_id == tenant_id, sessions.c.id == session_id)
    return reaped.carried_by(sa.select(sessions).where(wanted))


_GET = _get_statement()


class Sessions(Scoped):
    table = sessions

    def get(self, session_id: uuid.UUID) -> sa.Row | None:
        """One session of the tenant, or None; the same statement reaps its dead runs (``runs``)."""
        return self.conn.execute(_GET, {"the_tenant": self.tenant_id, "the_session": session_id}).first()

    def read(self, session_id: uuid.UUID) -> sa.Row | None:
        """One session of the tenant, or None, read only (a read-only snapshot cannot reap runs)."""
        return self.conn.execute(self.select(sessions.c.id == session_id)).first()

    def page(self, cursor: str | None, limit: int, **filters: uuid.UUID | None) -> Page:
        """A page of sessions; ``filters`` (``owner_id``, ``agent_id``) narrow it when not None."""
        conditions = [sessions.c[name] == value for name, value in filters.items() if value is not None]
        return page(self.conn, self.select(*conditions), sessions, cursor, limit)

    def create(self, agent_id: uuid.UUID, owner_id: uuid.UUID, title: str) -> sa.Row:
        """A new session of ``owner_id`` with the agent, its todo list empty."""
        return self.insert_row(id=new_id(), agent_id=agent_id, owner_id=owner_id, title=title)

    def delete(self, session_id: uuid.UUID) -> bool:
        """Delete a session with its messages, runs and files."""
        return self.delete_rows(sessions.c.id == session_id) == 1

    def first_of_agent(self, agent_id: uuid.UUID) -> sa.Row | None:
        """The agent's oldest session."""
        query = self.select(sessions.c.agent_id == agent_id).order_by(sessions.c.created_at, sessions.c.id)
        return self.conn.execute(query.limit(1)).first()

    def count_of_agent(self, agent_id: uuid.UUID) -> int:
        """How many sessions the agent has: the scope of its context overrides."""
        query = sa.select(sa.func.count()).where(self.where(sessions.c.agent_id == agent_id))
        return self.conn.execute(query).scalar_one()
