"""The request-scoped tenant store: every tenant-owned query of a request goes through it."""

from __future__ import annotations

import uuid
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from hango.db import schema
from hango.store.agents import Agents
from hango.store.api_keys import ApiKeys
from hango.store.audit import Audit
from hango.store.context_overrides import ContextOverrides
from hango.store.mcp_servers import McpServers
from hango.store.members import Members
from hango.store.memory_files import MemoryFiles
from hango.store.messages import Messages
from hango.store.model_calls import ModelCalls
from hango.store.part_costs import PartCosts
from hango.store.recorded_changes import RecordedChanges
from hango.store.revealed_tools import RevealedTools
from hango.store.run_events import RunEvents
from hango.store.runs import Runs
from hango.store.session_files import SessionFiles
from hango.store.sessions import Sessions
from hango.store.skills import Skills
from hango.store.summaries import Summaries
from hango.store.todos import Todos
from hango.store.usage import Usage

# built once, the tenant bound at execution (``docs/performance.md``)
_TENANT = sa.select(schema.tenants).where(
    schema.tenants.c.id == sa.bindparam("the_tenant", type_=schema.tenants.c.id.type)
)


class TenantStore:
    """Sub-stores for one tenant on one connection; each adds the tenant filter itself."""

    def __init__(self, conn: Connection, tenant_id: uuid.UUID) -> None:
        self.conn = conn
        self.tenant_id = tenant_id
        self.agents = Agents(conn, tenant_id)
        self.api_keys = ApiKeys(conn, tenant_id)
        self.audit = Audit(conn, tenant_id)
        self.recorded_changes = RecordedChanges(conn, tenant_id)
        self.context_overrides = ContextOverrides(conn, tenant_id)
        self.mcp_servers = McpServers(conn, tenant_id)
        self.members = Members(conn, tenant_id)
        self.memory_files = MemoryFiles(conn, tenant_id)
        self.messages = Messages(conn, tenant_id)
        self.model_calls = ModelCalls(conn, tenant_id)
        self.part_costs = PartCosts(conn, tenant_id)
        self.revealed_tools = RevealedTools(conn, tenant_id)
        self.runs = Runs(conn, tenant_id)
        self.run_events = RunEvents(conn, tenant_id)
        self.session_files = SessionFiles(conn, tenant_id)
        self.sessions = Sessions(conn, tenant_id)
        self.skills = Skills(conn, tenant_id)
        self.summaries = Summaries(conn, tenant_id)
        self.todos = Todos(conn, tenant_id)
        self.usage = Usage(conn, tenant_id)

    def tenant(self) -> sa.Row:
        """This tenant's row."""
        return self.conn.execute(_TENANT, {"the_tenant": self.tenant_id}).one()

    def update_tenant(self, **fields: Any) -> sa.Row:
        """Change this tenant's name or settings and return the row."""
        stmt = (
            sa.update(schema.tenants)
            .where(schema.tenants.c.id == self.tenant_id)
            .values(**fields)
            .returning(schema.tenants)
        )
        return self.conn.execute(stmt).one()

    def identity(self, user_id: uuid.UUID) -> tuple[sa.Row, sa.Row]:
        """This tenant's row and one of its members' user row."""
        user = self.conn.execute(
            sa.select(schema.users)
            .join(schema.memberships, schema.memberships.c.user_id == schema.users.c.id)
            .where(schema.memberships.c.tenant_id == self.tenant_id, schema.users.c.id == user_id)
        ).one()
        return self.tenant(), user
