"""Queries on ``api_keys``."""

from __future__ import annotations

import uuid
from typing import Any

import sqlalchemy as sa

from hango.auth import NewKey
from hango.db.schema import api_keys
from hango.store.base import Scoped, new_id
from hango.store.pages import Page, page


class ApiKeys(Scoped):
    table = api_keys

    def create(self, user_id: uuid.UUID, name: str, key: NewKey, rate_limit: int) -> sa.Row:
        """Store a new key's prefix and hash (never the secret)."""
        return self.insert_row(
            id=new_id(),
            user_id=user_id,
            name=name,
            prefix=key.prefix,
            key_hash=key.key_hash,
            rate_limit_per_minute=rate_limit,
        )

    def get(self, key_id: uuid.UUID) -> sa.Row | None:
        """One key of the tenant, revoked or not, or None."""
        return self.conn.execute(self.select(api_keys.c.id == key_id)).first()

    def page(self, cursor: str | None, limit: int, *, user_id: uuid.UUID | None = None) -> Page:
        """A page of keys, revoked ones included; only ``user_id``'s when given."""
        conditions = [] if user_id is None else [api_keys.c.user_id == user_id]
        return page(self.conn, self.select(*conditions), api_keys, cursor, limit)

    def update(self, key_id: uuid.UUID, **fields: Any) -> sa.Row | None:
        """Change a key's name or rate limit."""
        return self.update_rows([api_keys.c.id == key_id], **fields)

    def revoke(self, key_id: uuid.UUID) -> sa.Row | None:
        """Mark a key revoked (a revoked key keeps its first revocation time)."""
        revoked_at = sa.func.coalesce(api_keys.c.revoked_at, sa.func.now())
        return self.update_rows([api_keys.c.id == key_id], revoked_at=revoked_at)

    def active_of(self, user_id: uuid.UUID) -> list[uuid.UUID]:
        """The user's unrevoked keys, locked until the transaction ends so revocations serialize."""
        query = (
            sa.select(api_keys.c.id)
            .where(self.where(api_keys.c.user_id == user_id, api_keys.c.revoked_at.is_(None)))
            .with_for_update()
        )
        return list(self.conn.execute(query).scalars())

    def revoke_named(self, user_id: uuid.UUID, names: tuple[str, ...], keep: uuid.UUID) -> list[sa.Row]:
        """Revoke the user's unrevoked keys with one of ``names``, all but ``keep``; their ``id`` and ``prefix``."""
        wanted = self.where(
            api_keys.c.user_id == user_id,
            api_keys.c.name.in_(names),
            api_keys.c.id != keep,
            api_keys.c.revoked_at.is_(None),
        )
        query = (
            sa.update(api_keys)
            .where(wanted)
            .values(revoked_at=sa.func.now())
            .returning(api_keys.c.id, api_keys.c.prefix)
        )
        return list(self.conn.execute(query))
