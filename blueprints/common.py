"""Schemas every API area shares: page arguments and page bodies."""

from __future__ import annotations

from marshmallow import Schema, fields, validate

MAX_PAGE = 1000


class PageArgsSchema(Schema):
    limit = fields.Integer(load_default=100, validate=validate.Range(min=1, max=MAX_PAGE))
    cursor = fields.String(load_default=None, validate=validate.Length(max=200))


def page_of(item: type[Schema], name: str) -> type[Schema]:
    """A page body ``{items: [item], next_cursor}`` named ``name`` in the OpenAPI document."""
    return Schema.from_dict(
        {"items": fields.List(fields.Nested(item)), "next_cursor": fields.String(allow_none=True)},
        name=name,
    )
