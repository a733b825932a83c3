"""Tenants, users and memberships: the rows that exist before any tenant scope does."""

from __future__ import annotations

import re
import uuid

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.engine import Connection

from hango.db.schema import memberships, tenants, users
from hango.store.base import new_id


def slugify(name: str) -> str:
    """A tenant slug: lower-case letters, digits and dashes."""
    slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")[:63]
    return slug or "tenant"


def ensure_tenant(conn: Connection, name: str) -> sa.Row:
    """The tenant with ``name``'s slug, created when missing."""
    slug = slugify(name)
    conn.execute(insert(tenants).values(id=new_id(), name=name, slug=slug).on_conflict_do_nothing())
    return conn.execute(sa.select(tenants).where(tenants.c.slug == slug)).one()


def ensure_user(conn: Connection, email: str, name: str = "") -> sa.Row:
    """The user with ``email``, created when missing."""
    email = email.strip().lower()
    conn.execute(insert(users).values(id=new_id(), email=email, name=name).on_conflict_do_nothing())
    return conn.execute(sa.select(users).where(users.c.email == email)).one()


def ensure_membership(conn: Connection, tenant_id: uuid.UUID, user_id: uuid.UUID, role: str) -> sa.Row:
    """The user's membership in the tenant with ``role`` (an existing membership takes the new role)."""
    stmt = (
        insert(memberships)
        .values(tenant_id=tenant_id, user_id=user_id, role=role)
        .on_conflict_do_update(index_elements=["tenant_id", "user_id"], set_={"role": role})
        .returning(memberships)
    )
    return conn.execute(stmt).one()
