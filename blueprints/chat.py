"""Talking to an agent: ``POST /v1/sessions/{id}/messages`` stores the user message and runs the loop."""

from __future__ import annotations

import uuid

from flask import g, request
from flask.views import MethodView
from marshmallow import Schema, ValidationError, fields, validate, validates_schema

from blueprints.common import error_response
from blueprints.messages import MessageSchema
from blueprints.runs import RunSchema
from hango import tenancy
from hango.agent.runner import RunRequest, start_run
from hango.api import Blueprint
from hango.db import db
from hango.errors import Unprocessable

blp = Blueprint(
    "chat",
    __name__,
    url_prefix="/v1/sessions/<uuid:session_id>/messages",
    description="Agent runs on a new user message",
)

MAX_TEXT = 200_000
MAX_IDEMPOTENCY_KEY = 200
NO_NUL = "text must not contain NUL characters (U+0000)"  # PostgreSQL cannot store them


def _usable_text(text: str) -> None:
    """Providers reject blank text blocks, and PostgreSQL cannot store NUL characters."""
    if not text.strip():
        raise ValidationError("text must not be blank")
    if "\x00" in text:
        raise ValidationError(NO_NUL)


class TextBlockSchema(Schema):
    type = fields.String(required=True, validate=validate.Equal("text"))
    text = fields.String(required=True, validate=[validate.Length(min=1, max=MAX_TEXT), _usable_text])


class NewMessageSchema(Schema):
    content = fields.Raw(
        required=True,
        metadata={"description": "the user's text, or a list of text blocks", "oneOf": [{"type": "string"}]},
    )

    @validates_schema
    def _content(self, data: dict, **_kw) -> None:
        content = data["content"]
        if isinstance(content, str):
            content = data["content"] = [{"type": "text", "text": content}]
        if not isinstance(content, list) or not 0 < len(content) <= 100:
            raise ValidationError("content must be a string or a list of 1 to 100 text blocks", "content")
        try:
            TextBlockSchema(many=True).load(content)
        except ValidationError as exc:
            raise ValidationError(exc.messages, "content") from None


class RunResultSchema(Schema):
    run = fields.Nested(RunSchema)
    messages = fields.List(fields.Nested(MessageSchema))


@blp.route("")
class Chat(MethodView):
    @blp.arguments(NewMessageSchema)
    @blp.response(201, RunResultSchema)
    @error_response(blp, 402, "`quota_exhausted`: the tenant's token quota for this month is used up.")
    @error_response(blp, 404, "`not_found`: no such session, or not one of the caller's.")
    @error_response(blp, 409, "`session_busy`: another run is in progress on this session.")
    @error_response(blp, 502, "`provider_error`: the model provider failed; the session is unchanged.")
    @error_response(blp, 504, "`provider_timeout` or `run_timeout`.")
    def post(self, body: dict, session_id: uuid.UUID) -> dict:
        """Send a user message and run the agent; returns the run and its new messages."""
        who = tenancy.principal()
        db.commit()  # the run works on its own connection, per turn; release this request's transaction
        key = request.headers.get("Idempotency-Key") or None
        if key is not None and len(key) > MAX_IDEMPOTENCY_KEY:
            raise Unprocessable(
                f"Idempotency-Key is longer than {MAX_IDEMPOTENCY_KEY} characters", code="invalid_header"
            )
        run_request = RunRequest(g.session, body["content"], tenancy.caller(), key)
        result = start_run(tenancy.deps(), who.tenant_id, run_request)
        return {"run": result.run, "messages": result.messages}
