"""What every API area shares: page arguments and bodies, documented errors, 404 on a missing row."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import sqlalchemy as sa
from flask_smorest import Blueprint
from marshmallow import Schema, fields, validate

from hango.api import ErrorSchema
from hango.errors import NotFound

MAX_PAGE = 1000


class PageArgsSchema(Schema):
    limit = fields.Integer(load_default=100, validate=validate.Range(min=1, max=MAX_PAGE))
    cursor = fields.String(load_default=None, validate=validate.Length(max=1000))


def page_of(item: type[Schema], name: str) -> type[Schema]:
    """A page body ``{items: [item], next_cursor}`` named ``name`` in the OpenAPI document."""
    return Schema.from_dict(
        {"items": fields.List(fields.Nested(item)), "next_cursor": fields.String(allow_none=True)},
        name=name,
    )


def error_response(blp: Blueprint, status: int, description: str) -> Callable[[Any], Any]:
    """Document one specific error of an operation in the error envelope: its code(s) and when."""
    return blp.alt_response(status, schema=ErrorSchema, description=description)


def found(row: sa.Row | None, what: str) -> sa.Row:
    """``row``, or a 404 saying which ``what`` was not found."""
    if row is None:
        raise NotFound(f"{what} not found")
    return row
