"""The request-scoped tenant store: every tenant-owned query of a request goes through it."""

from __future__ import annotations

import uuid

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from hango.db import schema
from hango.store.agents import Agents
from hango.store.api_keys import ApiKeys
from hango.store.audit import Audit


class TenantStore:
    """Sub-stores for one tenant on one connection; each adds the tenant filter itself."""

    def __init__(self, conn: Connection, tenant_id: uuid.UUID) -> None:
        self.conn = conn
        self.tenant_id = tenant_id
        self.agents = Agents(conn, tenant_id)
        self.api_keys = ApiKeys(conn, tenant_id)
        self.audit = Audit(conn, tenant_id)

    def identity(self, user_id: uuid.UUID) -> tuple[sa.Row, sa.Row]:
        """This tenant's row and one of its members' user row."""
        tenant = self.conn.execute(
            sa.select(schema.tenants).where(schema.tenants.c.id == self.tenant_id)
        ).one()
        user = self.conn.execute(
            sa.select(schema.users)
            .join(schema.memberships, schema.memberships.c.user_id == schema.users.c.id)
            .where(schema.memberships.c.tenant_id == self.tenant_id, schema.users.c.id == user_id)
        ).one()
        return tenant, user
