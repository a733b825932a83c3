"""Queries on ``memberships``: who belongs to the tenant, with which role."""

from __future__ import annotations

import uuid

import sqlalchemy as sa

from hango.db.schema import memberships, users
from hango.store.base import Scoped
from hango.store.pages import Page, page
from hango.store.tenants import ensure_membership, ensure_user

_COLUMNS = (
    memberships.c.user_id,
    users.c.email,
    users.c.name,
    memberships.c.role,
    memberships.c.created_at,
)


class Members(Scoped):
    table = memberships

    def _select(self, *conditions: object) -> sa.Select:
        joined = memberships.join(users, users.c.id == memberships.c.user_id)
        return sa.select(*_COLUMNS).select_from(joined).where(self.where(*conditions))

    def get(self, user_id: uuid.UUID) -> sa.Row | None:
        """One member with their email and role."""
        return self.conn.execute(self._select(memberships.c.user_id == user_id)).first()

    def by_email(self, email: str) -> sa.Row | None:
        """The member with ``email`` (compared as ``ensure_user`` stores it), if any."""
        return self.conn.execute(self._select(users.c.email == email.strip().lower())).first()

    def page(self, cursor: str | None, limit: int) -> Page:
        """A page of members in the order they joined."""
        order = (memberships.c.created_at, memberships.c.user_id)
        return page(self.conn, self._select(), memberships, cursor, limit, order=order)

    def put(self, email: str, role: str, name: str = "") -> sa.Row:
        """Make the user with ``email`` (created when missing) a member with ``role``."""
        user = ensure_user(self.conn, email, name)
        ensure_membership(self.conn, self.tenant_id, user.id, role)
        return self.get(user.id)

    def remove(self, user_id: uuid.UUID) -> bool:
        """Remove a member (their keys in this tenant go with them)."""
        return self.delete_rows(memberships.c.user_id == user_id) == 1

    def owners(self) -> list[uuid.UUID]:
        """The owners' user ids, locked until the transaction ends so owner changes serialize."""
        query = (
            sa.select(memberships.c.user_id)
            .where(self.where(memberships.c.role == "owner"))
            .with_for_update()
        )
        return list(self.conn.execute(query).scalars())
