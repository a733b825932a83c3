"""Talking to an agent: ``POST /v1/sessions/{id}/messages`` queues a run on the user's message (202)."""

from __future__ import annotations

import uuid
from typing import Any

from flask import request
from flask.views import MethodView
from marshmallow import Schema, ValidationError, fields, validate, validates_schema

from blueprints.common import QUOTA_EXHAUSTED, error_response
from blueprints.run_schemas import LOCATION, TOO_MANY_RUNS, location_of, multitask_field, with_messages
from blueprints.run_schemas import RunWithMessagesSchema as RunSchema
from hango import tenancy
from hango.admission import NewRun, enqueue_run
from hango.api import Blueprint
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


# What ``_usable_text`` accepts, for the OpenAPI document: some non-blank character, no NUL.
USABLE_TEXT = {
    "type": "string",
    "minLength": 1,
    "maxLength": MAX_TEXT,
    "pattern": "^[^\\x00]*[^\\s\\x00][^\\x00]*$",
}
TEXT_BLOCK = {
    "type": "object",
    "required": ["type", "text"],
    "properties": {"type": {"type": "string", "enum": ["text"]}, "text": USABLE_TEXT},
    "additionalProperties": False,
}


class NewMessageSchema(Schema):
    multitask = multitask_field()
    content = fields.Raw(
        required=True,
        metadata={
            "description": "the user's text, or a list of 1 to 100 text blocks",
            "oneOf": [USABLE_TEXT, {"type": "array", "minItems": 1, "maxItems": 100, "items": TEXT_BLOCK}],
        },
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


def idempotency_key() -> str | None:
    """The request's ``Idempotency-Key``: 422 ``invalid_header`` past its length or with a byte that is not
    printable ASCII (gunicorn refuses control bytes itself, in the same envelope: ``hango.refusals``)."""
    key = request.headers.get("Idempotency-Key") or None
    if key is not None and len(key) > MAX_IDEMPOTENCY_KEY:
        raise Unprocessable(
            f"Idempotency-Key is longer than {MAX_IDEMPOTENCY_KEY} characters", code="invalid_header"
        )
    if key is not None and not all(" " <= c <= "~" for c in key):
        raise Unprocessable("Idempotency-Key must be printable ASCII", code="invalid_header")
    return key


@blp.route("")
class Chat(MethodView):
    @blp.arguments(NewMessageSchema)
    @blp.response(202, RunSchema, headers=LOCATION)
    @error_response(blp, 402, QUOTA_EXHAUSTED)
    @error_response(blp, 404, "`not_found`: no such session, or not one of the caller's.")
    @error_response(blp, 409, "`session_busy`: a run is queued or running on this session (see `multitask`).")
    @error_response(
        blp,
        422,
        "`idempotency_key_reused`: the `Idempotency-Key` names a run of other content; "
        "`invalid_header`: the key is too long or not printable ASCII.",
    )
    @error_response(blp, 429, TOO_MANY_RUNS)
    def post(self, body: dict, session_id: uuid.UUID) -> tuple[Any, int, dict[str, str]]:
        """Send a user message: the run is queued (202) and a worker runs it; poll `Location`.

        The run's row, its content and its job commit in this request's transaction.
        """
        key = idempotency_key()
        new = NewRun(session_id, body["content"], tenancy.caller(), key, body["multitask"])
        run, created = enqueue_run(tenancy.job_queue(), tenancy.store(), tenancy.deps().config, new)
        if created:
            tenancy.audit("run.create", "session", session_id, {"run_id": str(run.id)})
        return with_messages(run), 202, location_of(run)
