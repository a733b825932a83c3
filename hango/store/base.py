"""The base of every tenant-scoped sub-store: it adds the tenant filter itself."""

from __future__ import annotations

import uuid
from typing import Any, ClassVar

import sqlalchemy as sa
from sqlalchemy.engine import Connection


class Scoped:
    """Queries on one tenant-owned table; every statement carries ``tenant_id``."""

    table: ClassVar[sa.Table]

    def __init__(self, conn: Connection, tenant_id: uuid.UUID) -> None:
        self.conn = conn
        self.tenant_id = tenant_id

    def where(self, *conditions: Any) -> sa.ColumnElement[bool]:
        """The tenant filter joined with ``conditions``."""
        return sa.and_(self.table.c.tenant_id == self.tenant_id, *conditions)

    def select(self, *conditions: Any) -> sa.Select:
        return sa.select(self.table).where(self.where(*conditions))

    def insert_row(self, **values: Any) -> sa.Row:
        """Insert one row of this tenant and return it."""
        stmt = sa.insert(self.table).values(tenant_id=self.tenant_id, **values).returning(self.table)
        return self.conn.execute(stmt).one()

    def update_rows(self, conditions: list[Any], **values: Any) -> sa.Row | None:
        """Update this tenant's rows matching ``conditions``; return the first, or None."""
        stmt = sa.update(self.table).where(self.where(*conditions)).values(**values).returning(self.table)
        return self.conn.execute(stmt).first()

    def delete_rows(self, *conditions: Any) -> int:
        """Delete this tenant's rows matching ``conditions``; return how many."""
        return self.conn.execute(sa.delete(self.table).where(self.where(*conditions))).rowcount


def new_id() -> uuid.UUID:
    return uuid.uuid4()
