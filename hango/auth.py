"""API keys: generated once, stored as a hash, looked up by prefix, compared in constant time."""

from __future__ import annotations

import hashlib
import hmac
import secrets
import uuid
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from hango.db.schema import api_keys, memberships
from hango.errors import Unauthorized

KEY_PREFIX = "hgo"


@dataclass(frozen=True)
class Principal:
    """Who is calling: the tenant, the user and role, and the key used."""

    tenant_id: uuid.UUID
    user_id: uuid.UUID
    role: str
    api_key_id: uuid.UUID
    rate_limit_per_minute: int

    @property
    def is_admin(self) -> bool:
        return self.role in ("owner", "admin")


@dataclass(frozen=True)
class NewKey:
    secret: str
    prefix: str
    key_hash: str


def hash_key(secret: str) -> str:
    """The stored form of a key (keys carry 192 random bits, so a plain SHA-256 suffices)."""
    return hashlib.sha256(secret.encode()).hexdigest()


def generate_key() -> NewKey:
    """A fresh key ``hgo_<prefix>_<secret>``; only its prefix and hash are ever stored."""
    prefix = secrets.token_hex(6)
    secret = f"{KEY_PREFIX}_{prefix}_{secrets.token_urlsafe(24)}"
    return NewKey(secret=secret, prefix=prefix, key_hash=hash_key(secret))


def key_from_header(header: str | None) -> str:
    """The key in an ``Authorization: Bearer`` header; raises ``Unauthorized`` otherwise."""
    if not header:
        raise Unauthorized("missing Authorization header", code="missing_api_key")
    scheme, _, key = header.partition(" ")
    if scheme.lower() != "bearer" or not key.strip():
        raise Unauthorized("the Authorization header must be 'Bearer <api key>'", code="malformed_api_key")
    return key.strip()


def prefix_of(key: str) -> str | None:
    """The prefix part of a ``hgo_<prefix>_<secret>`` key, or None when it has another shape."""
    parts = key.split("_")
    if len(parts) < 3 or parts[0] != KEY_PREFIX:
        return None
    return parts[1]


# built once, the prefix bound at execution (``docs/performance.md``: building a statement cost more
# instructions than running it)
_KEY_BY_PREFIX = (
    sa.select(api_keys, memberships.c.role)
    .join(
        memberships,
        (memberships.c.tenant_id == api_keys.c.tenant_id) & (memberships.c.user_id == api_keys.c.user_id),
    )
    .where(api_keys.c.prefix == sa.bindparam("the_prefix", type_=api_keys.c.prefix.type))
)


def authenticate(conn: Connection, key: str) -> Principal:
    """Resolve a key to its principal; raises ``Unauthorized``."""
    prefix = prefix_of(key)
    row = None
    if prefix is not None:
        row = conn.execute(_KEY_BY_PREFIX, {"the_prefix": prefix}).first()
    if row is None or not hmac.compare_digest(row.key_hash, hash_key(key)):
        raise Unauthorized("unknown API key", code="invalid_api_key")
    if row.revoked_at is not None:
        raise Unauthorized("this API key was revoked", code="revoked_api_key")
    return Principal(row.tenant_id, row.user_id, row.role, row.id, row.rate_limit_per_minute)
