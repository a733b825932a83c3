"""Compact now: ``POST /v1/sessions/{id}/compact`` — one compaction of the session's history, on request.

Holds the session's run lock for the call (409 ``session_busy`` while a run
holds it), checks the quota before the call (402), makes one summarizer call billed with
purpose ``summarize`` and audits ``session.compact`` with figures only, never
the instructions or the summary.
"""

from __future__ import annotations

import uuid
from typing import Any

from flask import g
from flask.views import MethodView
from marshmallow import Schema, fields, validate

from blueprints.common import QUOTA_EXHAUSTED, error_responses
from blueprints.sessions import blp
from hango import telemetry, tenancy
from hango.agent.compact_now import compact_now
from hango.agent.runner import holding_session
from hango.db import db
from hango.store import TenantStore
from hango.telemetry import names

MAX_INSTRUCTIONS = 2_000


class CompactBodySchema(Schema):
    instructions = fields.String(
        load_default=None,
        allow_none=True,
        validate=validate.Length(max=MAX_INSTRUCTIONS),
        metadata={"description": "what the summary should keep or drop"},
    )


class CompactResultSchema(Schema):
    through_seq = fields.Integer(metadata={"description": "the summary stands for the messages up to here"})
    summarize = fields.List(fields.Integer(), metadata={"description": "first and last seq summarized"})
    keep_from = fields.Integer(
        allow_none=True, metadata={"description": "the first kept message; null when every one is summarized"}
    )
    tokens_summarized = fields.Integer(
        metadata={"description": "the messages summarized (not the old summary)"}
    )
    previous_summary_tokens = fields.Integer(metadata={"description": "the earlier summary folded in"})
    tokens_kept = fields.Integer()
    model = fields.String()


ERRORS = (
    (402, QUOTA_EXHAUSTED),
    (404, "`not_found`: no such session, or not the caller's."),
    (409, "`session_busy`: a run holds the session."),
    (422, "`nothing_to_compact`: the history has no safe place to cut."),
    (502, "`provider_error`: the summarizer call failed."),
)


@blp.route("/<uuid:session_id>/compact")
class Compact(MethodView):
    @blp.arguments(CompactBodySchema, required=False)
    @blp.response(200, CompactResultSchema)
    @error_responses(blp, ERRORS)
    def post(self, body: dict, session_id: uuid.UUID) -> dict[str, Any]:
        """Summarize the session's older messages now (stored messages never change)."""
        deps, caller = tenancy.deps(), tenancy.caller()
        instructions = (body["instructions"] or "").strip() or None
        with telemetry.tracer().start_as_current_span(names.SPAN_SESSION_COMPACT):
            db.commit()  # the request's connection is free while the summarizer answers
            with holding_session(deps.engine, session_id) as conn:
                done = compact_now(
                    deps, TenantStore(conn, tenancy.principal().tenant_id), g.session, caller, instructions
                )
        result = done.as_dict()
        detail = {k: result[k] for k in ("through_seq", "summarize", "keep_from", "tokens_summarized")}
        tenancy.audit("session.compact", "session", session_id, {**detail, "focused": bool(instructions)})
        return result
