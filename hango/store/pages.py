"""Keyset pagination: an opaque cursor over ``(created_at, id)``."""

from __future__ import annotations

import base64
import datetime as dt
import uuid
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from hango.errors import BadRequest


@dataclass(frozen=True)
class Page:
    items: list[sa.Row]
    next_cursor: str | None


def encode_cursor(row: sa.Row) -> str:
    raw = f"{row.created_at.isoformat()}|{row.id}"
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[dt.datetime, uuid.UUID]:
    """The position a cursor names; raises ``BadRequest`` when it was not made by us."""
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        created, ident = raw.split("|")
        return dt.datetime.fromisoformat(created), uuid.UUID(ident)
    except (ValueError, UnicodeDecodeError) as exc:
        raise BadRequest("the cursor is not valid", code="invalid_cursor") from exc


def page(conn: Connection, query: sa.Select, table: sa.Table, cursor: str | None, limit: int) -> Page:
    """One page of ``query`` in ``(created_at, id)`` order, after ``cursor``."""
    if cursor:
        created, ident = decode_cursor(cursor)
        query = query.where(sa.tuple_(table.c.created_at, table.c.id) > sa.tuple_(created, ident))
    rows = conn.execute(query.order_by(table.c.created_at, table.c.id).limit(limit + 1)).all()
    more = len(rows) > limit
    rows = rows[:limit]
    return Page(rows, encode_cursor(rows[-1]) if more else None)
