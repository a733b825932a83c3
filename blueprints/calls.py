"""The call ledger: ``GET /v1/sessions/{id}/calls[/{call_id}]`` and ``GET …/context/diff``."""

from __future__ import annotations

import re
import uuid
from typing import Any

from flask.views import MethodView
from marshmallow import Schema, ValidationError, fields

from blueprints.call_schemas import CallDetailSchema, CallSchema, PricedCallsSchema
from blueprints.common import error_response, page_of, paged
from blueprints.context_schemas import simulated_at_field
from hango import tenancy
from hango.agent.ledger.causes import CAUSES
from hango.api import Blueprint
from hango.store.pages import Page

blp = Blueprint("calls", __name__, url_prefix="/v1/sessions/<uuid:session_id>", description="The call ledger")
NOT_FOUND = "`not_found`: no such session (or not the caller's), or no such call in it."


CallPageSchema = page_of(CallSchema, "CallPage")


class SessionCostSchema(PricedCallsSchema):
    unpriced_reason = fields.String(allow_none=True, metadata={"description": "why some call has no price"})
    simulated_at = simulated_at_field()
    by_model = fields.List(fields.Dict(), metadata={"description": "model, calls, usd per model"})


UUID_TEXT = "[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"


def _call_or(keyword: str) -> Any:
    """A call id (a UUID in its hyphenated form, as the API writes it) or ``keyword``."""
    pattern = re.compile(f"{keyword}|{UUID_TEXT}")

    def check(value: str) -> None:
        if not pattern.fullmatch(value):
            raise ValidationError(f"expected a call id or {keyword!r}")

    return check


def _call_or_pattern(keyword: str) -> str:
    return f"^(?:{keyword}|{UUID_TEXT})$"


class DiffArgsSchema(Schema):
    from_ = fields.String(
        data_key="from",
        load_default="last",
        validate=_call_or("last"),
        metadata={"description": "a call id or `last`", "pattern": _call_or_pattern("last")},
    )
    to = fields.String(
        load_default="next",
        validate=_call_or("next"),
        metadata={"description": "a call id or `next`", "pattern": _call_or_pattern("next")},
    )


class FirstDifferenceSchema(Schema):
    part = fields.String(metadata={"description": "the first part where the calls differ"})
    cause = fields.String(
        metadata={"description": "what was recorded between the calls that changed it", "enum": list(CAUSES)}
    )
    words = fields.String(metadata={"description": "the cause and the part in plain words"})


class CommonPrefixSchema(Schema):
    parts = fields.Integer()
    tokens = fields.Integer()


class DiffSchema(Schema):
    from_ = fields.String(data_key="from", metadata={"description": "the earlier call's id"})
    to = fields.String(metadata={"description": "the later call's id, or `next`"})
    added = fields.List(fields.String(), metadata={"description": "parts only the later call sends"})
    removed = fields.List(fields.String(), metadata={"description": "parts only the earlier call sent"})
    changed = fields.List(fields.String(), metadata={"description": "parts both sent, with other content"})
    common_prefix = fields.Nested(CommonPrefixSchema)
    first_difference = fields.Nested(
        FirstDifferenceSchema, allow_none=True, metadata={"description": "null when both send the same parts"}
    )


@blp.route("/calls")
class CallList(MethodView):
    @paged(blp)
    @blp.response(200, CallPageSchema)
    @error_response(blp, 404, "`not_found`: no such session, or not one of the caller's.")
    def get(self, args: dict, session_id: uuid.UUID) -> Page:
        """The session's model calls, newest first: purpose, usage, estimate and cache verdict."""
        return tenancy.inspector().calls(args["cursor"], args["limit"])


@blp.route("/cost")
class SessionCost(MethodView):
    @blp.response(200, SessionCostSchema)
    @error_response(blp, 404, "`not_found`: no such session, or not one of the caller's.")
    def get(self, session_id: uuid.UUID) -> dict[str, Any]:
        """What the session's model calls cost so far, from their reported usage, in total and per model."""
        return tenancy.inspector().cost()


@blp.route("/calls/<uuid:call_id>")
class CallItem(MethodView):
    @blp.response(200, CallDetailSchema)
    @error_response(blp, 404, NOT_FOUND)
    def get(self, session_id: uuid.UUID, call_id: uuid.UUID) -> dict[str, Any]:
        """One call's parts as it sent them, shown from current sources where those still match.

        Each part carries its cost on this call and its cost in total so far: summed over every
        call of the session it rode in, as each call was recorded (one row read per part).
        """
        return tenancy.inspector().call_detail(call_id)


@blp.route("/context/diff")
class ContextDiff(MethodView):
    @blp.arguments(DiffArgsSchema, location="query")
    @blp.response(200, DiffSchema)
    @error_response(blp, 404, NOT_FOUND + " `from=last` on a session with no run or try call.")
    @error_response(blp, 422, "`invalid`: `from` or `to` is neither a call id nor its keyword.")
    def get(self, args: dict, session_id: uuid.UUID) -> dict[str, Any]:
        """What changed between two calls (or the last call and the next), and the first difference's cause."""
        found = {"earlier": args["from_"], "later": args["to"]}
        return tenancy.inspector().diff(**found)
