"""The shape of an override set, as the override routes and the pending-changes routes take it."""

from __future__ import annotations

from marshmallow import Schema, fields, validate

from blueprints.common import part_id
from hango.agent.overrides import Override
from hango.inspector import service

MAX_OVERRIDES = 5_000


class OverrideSchema(Schema):
    part = part_id(required=True)
    action = fields.String(required=True, validate=validate.OneOf(["exclude", "replace"]))
    replacement = fields.String(
        load_default=None, allow_none=True, validate=validate.Length(max=service.MAX_REPLACEMENT)
    )
    paired_from = fields.String(
        load_default=None,
        allow_none=True,
        metadata={"description": "set by the server on companions; companions sent back are recomputed"},
    )


class OverrideSetSchema(Schema):
    overrides = fields.List(
        fields.Nested(OverrideSchema), required=True, validate=validate.Length(max=MAX_OVERRIDES)
    )


def from_body(body: dict) -> list[Override]:
    """The overrides a set's body names, in its order."""
    return [Override(o["part"], o["action"], o["replacement"], o["paired_from"]) for o in body["overrides"]]


ERRORS = (
    (404, "`not_found`: no such agent or session, or not the caller's."),
    (412, "`etag_mismatch`: `If-Match` no longer matches the stored set."),
    (
        422,
        "`malformed_part`, `wrong_target`, `replace_not_allowed_for_tools`, `replacement_required`, "
        "`replacement_not_allowed`, `replace_needs_text`, `duplicate_part`, `unknown_part`, `unknown_paired_from`, "
        "`no_user_message`, "
        "`starts_with_assistant`; `details.parts` names the parts.",
    ),
)
