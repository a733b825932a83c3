"""What every API area shares: page arguments and bodies, documented errors, 404 on a missing row."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import sqlalchemy as sa
from marshmallow import Schema, fields, validate

from hango.agent.parts import MAX_PART_CHARS, PART_ID_PATTERN
from hango.api import Blueprint, ErrorSchema
from hango.errors import NotFound

MAX_PAGE = 1000


INVALID_CURSOR = "`invalid_cursor`: `cursor` is not one this list handed out."


class PageArgsSchema(Schema):
    limit = fields.Integer(load_default=100, validate=validate.Range(min=1, max=MAX_PAGE))
    # Cursors are base64url. The document says so, which keeps every valid request line short; any
    # other cursor is still refused by decoding it (400 `invalid_cursor`).
    cursor = fields.String(
        load_default=None,
        validate=validate.Length(max=1000),
        metadata={"description": "the previous page's `next_cursor`", "pattern": "^[A-Za-z0-9_-]*$"},
    )


class JsonInteger(fields.Integer):
    """An integer of a JSON body: a JSON number without a fraction, never a string (``"5"``) or a bool."""

    def _validated(self, value: Any) -> int:
        if isinstance(value, str) or (isinstance(value, float) and not value.is_integer()):
            raise self.make_error("invalid", input=value)
        return super()._validated(value)


class JsonBoolean(fields.Boolean):
    """A boolean of a JSON body: ``true`` or ``false``, never ``1``, ``"yes"`` or ``"true"``."""

    def _deserialize(self, value: Any, attr: Any, data: Any, **kwargs: Any) -> bool:
        if value is True or value is False:
            return value
        raise self.make_error("invalid", input=value)


def part_id(**kwargs: Any) -> fields.String:
    """A part id field: the document gives its grammar (a malformed one is refused 422 ``malformed_part``)."""
    metadata = {"pattern": PART_ID_PATTERN, **kwargs.pop("metadata", {})}
    return fields.String(validate=validate.Length(min=1, max=MAX_PART_CHARS), metadata=metadata, **kwargs)


PART_KEYS = {"pattern": PART_ID_PATTERN, "minLength": 1, "maxLength": MAX_PART_CHARS}


def page_of(item: type[Schema], name: str) -> type[Schema]:
    """A page body ``{items: [item], next_cursor}`` named ``name`` in the OpenAPI document."""
    return Schema.from_dict(
        {"items": fields.List(fields.Nested(item)), "next_cursor": fields.String(allow_none=True)},
        name=name,
    )


def error_response(blp: Blueprint, status: int, description: str) -> Callable[[Any], Any]:
    """Document one specific error of an operation in the error envelope: its code(s) and when."""
    return blp.alt_response(status, schema=ErrorSchema, description=description)


def error_responses(blp: Blueprint, answers: Iterable[tuple[int, str]]) -> Callable[[Any], Any]:
    """Document several errors of an operation at once: ``error_response`` for each (status, text)."""

    def decorate(view: Any) -> Any:
        for status, text in answers:
            view = error_response(blp, status, text)(view)
        return view

    return decorate


QUOTA_EXHAUSTED = "`quota_exhausted`: the tenant's token quota for this month is used up."


def paged(blp: Blueprint, args: type[Schema] = PageArgsSchema) -> Callable[[Any], Any]:
    """``args`` from the query string of a listing, with its bad-cursor 400 documented."""

    def decorate(view: Any) -> Any:
        return blp.arguments(args, location="query")(error_response(blp, 400, INVALID_CURSOR)(view))

    return decorate


def found(row: sa.Row | None, what: str) -> sa.Row:
    """``row``, or a 404 saying which ``what`` was not found."""
    if row is None:
        raise NotFound(f"{what} not found")
    return row


class ReasonSchema(Schema):
    """A body of one optional field: why, kept in the action's audit row."""

    reason = fields.String(
        load_default=None,
        validate=validate.Length(min=1, max=200),
        metadata={"description": "why, for the audit log (optional)"},
    )
