"""Queries on ``api_keys``."""

from __future__ import annotations

import uuid

import sqlalchemy as sa

from hango.auth import NewKey
from hango.db.schema import api_keys
from hango.store.base import Scoped, new_id


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
        return self.conn.execute(self.select(api_keys.c.id == key_id)).first()
