"""Try: ``POST /v1/sessions/{id}/context/try`` — one model call with parts removed, session untouched.

The provider call runs in the app's try pool (``hango/try_pool.py``) with a
deadline ``HANGO_CONTEXT_TRY_TIMEOUT`` away, which the SDK call carries too (the
time left to it), so an abandoned call ends: timeout → 504, pool full → 503 with
``Retry-After``. With ``"mode": "turn"`` the body is screened the same way, then a
whole turn is queued as a run of kind ``try`` (202, like a message's run): the agent
loop with its tools on a scratch copy of the session (``hango/agent/scratch.py``).
Its ``context.try`` audit row is committed with the call's record, or alone when
the call fails or the request stops waiting (``hango/inspector/try_audit.py``).
"""

from __future__ import annotations

import uuid
from typing import Any

from flask import Response, g, jsonify
from flask.views import MethodView
from marshmallow import Schema, fields, validate
from opentelemetry import trace

from blueprints.common import PART_KEYS, QUOTA_EXHAUSTED, error_responses, part_id
from blueprints.context_schemas import CostSchema
from blueprints.run_schemas import LOCATION, TOO_MANY_RUNS, RunSchema, location_of
from hango import tenancy
from hango.admission import NewRun, enqueue_try
from hango.api import Blueprint
from hango.contract import NON_BLANK_TEXT
from hango.inspector import service
from hango.store.runs import SCRATCH_TURN_KIND
from hango.telemetry import names
from hango.try_pool import try_pool

# Nested in ``context`` (``blueprints/__init__.py``): the inspector is one API area, one OpenAPI tag.
blp = Blueprint("try", __name__)

PART = part_id()


class TryBodySchema(Schema):
    exclude = fields.List(PART, load_default=list, validate=validate.Length(max=5_000))
    include = fields.List(PART, load_default=list, validate=validate.Length(max=5_000))
    replace = fields.Dict(
        keys=PART,
        values=fields.String(validate=validate.Length(max=service.MAX_REPLACEMENT)),
        load_default=dict,
        metadata={"property_names": PART_KEYS},
    )
    message = fields.String(
        load_default=None,
        allow_none=True,
        validate=[
            validate.Length(min=1, max=200_000),
            validate.Regexp(r"[\s\S]*\S", error="message must hold non-blank text"),
        ],
        metadata=NON_BLANK_TEXT,
    )
    defer = fields.List(
        PART,
        load_default=list,
        validate=validate.Length(max=1_000),
        metadata={
            "description": "tool or server parts (`tool:<name>`, `tool:<server>/<tool>`, `tool:<server>/*`) "
            "the try defers as well as the agent's: not sent unless its `tool_search` finds them"
        },
    )
    undefer = fields.List(
        PART,
        load_default=list,
        validate=validate.Length(max=1_000),
        metadata={
            "description": "entries of the agent's defer list the try sends from the start (a server part: "
            "every entry of that server)"
        },
    )
    mode = fields.String(
        load_default="call",
        validate=validate.OneOf(["call", "turn"]),
        metadata={
            "description": "`call`: one model call, answered here (200); `turn`: the whole turn with its "
            "tools on a scratch copy of the session, queued as a run of kind `try` (202)"
        },
    )


class TryResultSchema(Schema):
    message = fields.Dict()
    stop_reason = fields.String()
    usage = fields.Dict()
    cost = fields.Nested(
        CostSchema,
        metadata={"description": "the call's reported usage at the model's prices, as the ledger's"},
    )
    model = fields.String()
    excluded = fields.List(fields.String())
    added = fields.List(fields.String())
    duration_ms = fields.Integer()


ERRORS = (
    (402, QUOTA_EXHAUSTED),
    (404, "`not_found`: no such session, or not the caller's."),
    (422, "the same reasons as the override PUTs, with `details.parts`."),
    (429, TOO_MANY_RUNS + " (`mode` `turn`)"),
    (502, "`provider_error`: the provider failed."),
    (503, "`try_pool_full`: every try slot is busy; retry after `Retry-After`."),
    (504, "`provider_timeout`: no answer within HANGO_CONTEXT_TRY_TIMEOUT."),
)


@blp.route("/try")
class ContextTry(MethodView):
    @blp.arguments(TryBodySchema, required=False)
    @blp.response(200, TryResultSchema)
    @blp.alt_response(
        202,
        schema=RunSchema,
        headers=LOCATION,
        success=True,
        description="`mode` `turn`: the scratch run, queued; poll `Location` for its `result`.",
    )
    @error_responses(blp, ERRORS)
    def post(self, body: dict, session_id: uuid.UUID) -> dict[str, Any] | Response:
        """Send one model call (or, with `mode` `turn`, queue a whole turn) with the current overrides plus
        the body's; nothing of the session is stored."""
        trace.get_current_span().update_name(names.SPAN_CONTEXT_TRY)
        if body.pop("mode") == "turn":
            new = NewRun(session_id, body, tenancy.caller(), kind=SCRATCH_TURN_KIND)
            return _queued(enqueue_try(tenancy.job_queue(), tenancy.store(), tenancy.deps(), g.session, new))
        return tenancy.inspector().try_call(service.TryBody(**body), run_in_pool=try_pool.run)


def _queued(run: Any) -> Response:
    """The 202 of a queued scratch run: its row, and where to poll it."""
    answer = jsonify(RunSchema().dump(run))
    answer.status_code = 202
    answer.headers.update(location_of(run))
    return answer
