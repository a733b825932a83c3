"""Keyset pagination: an opaque cursor over ``(created_at, id)``, or over one unique text key."""

from __future__ import annotations

import base64
import datetime as dt
import uuid
from collections.abc import Callable
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from hango.errors import BadRequest

_KEY_MARK = "key|"


@dataclass(frozen=True)
class Page:
    items: list[sa.Row]
    next_cursor: str | None


def _encode(raw: str) -> str:
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def _decode(cursor: str) -> str:
    try:
        return base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
    except (ValueError, UnicodeDecodeError) as exc:
        raise BadRequest("the cursor is not valid", code="invalid_cursor") from exc


def encode_cursor(row: sa.Row, when: str = "created_at", ident: str = "id") -> str:
    """The opaque cursor after ``row``, from its ``when`` and ``ident`` columns."""
    mapping = row._mapping
    return _encode(f"{mapping[when].isoformat()}|{mapping[ident]}")


def decode_cursor(cursor: str) -> tuple[dt.datetime, uuid.UUID]:
    """The position a cursor names; raises ``BadRequest`` when it was not made by us."""
    try:
        created, ident = _decode(cursor).split("|")
        return dt.datetime.fromisoformat(created), uuid.UUID(ident)
    except ValueError as exc:
        raise BadRequest("the cursor is not valid", code="invalid_cursor") from exc


def page(
    conn: Connection,
    query: sa.Select,
    table: sa.Table,
    cursor: str | None,
    limit: int,
    *,
    order: tuple[sa.ColumnElement, sa.ColumnElement] | None = None,
    newest_first: bool = False,
) -> Page:
    """One page of ``query`` in ``(created_at, id)`` order (or ``order``'s two columns), after ``cursor``."""
    when, ident = order if order is not None else (table.c.created_at, table.c.id)
    key = sa.tuple_(when, ident)
    if cursor:
        created, ident_value = decode_cursor(cursor)
        position = sa.tuple_(created, ident_value)
        query = query.where(key < position if newest_first else key > position)
    ordering = (when.desc(), ident.desc()) if newest_first else (when, ident)
    rows = conn.execute(query.order_by(*ordering).limit(limit + 1)).all()
    return cut_page(rows, limit, lambda row: encode_cursor(row, when.key, ident.key))


def page_by_key(conn: Connection, query: sa.Select, key: sa.Column, cursor: str | None, limit: int) -> Page:
    """One page of ``query`` in the order of the unique text column ``key``, after ``cursor``."""
    if cursor:
        raw = _decode(cursor)
        if not raw.startswith(_KEY_MARK):
            raise BadRequest("the cursor is not valid", code="invalid_cursor")
        query = query.where(key > raw.removeprefix(_KEY_MARK))
    rows = conn.execute(query.order_by(key).limit(limit + 1)).all()
    return cut_page(rows, limit, lambda row: _encode(_KEY_MARK + row._mapping[key.key]))


def cut_page(rows: list[sa.Row], limit: int, cursor_of: Callable[[sa.Row], str]) -> Page:
    """The first ``limit`` of ``limit + 1`` fetched rows, with a cursor when the extra row shows more."""
    more = len(rows) > limit
    rows = rows[:limit]
    return Page(rows, cursor_of(rows[-1]) if more else None)
