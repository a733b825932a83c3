"""Inspect: ``GET /v1/sessions/{id}/context`` — what the session's next model call would send."""

from __future__ import annotations

import uuid
from typing import Any

from flask.views import MethodView
from marshmallow import Schema, fields, validate

from blueprints.common import error_response, part_id
from blueprints.context_schemas import ANSWERS
from hango import tenancy
from hango.api import Blueprint
from hango.providers import WIRE_FORMATS

blp = Blueprint(
    "context", __name__, url_prefix="/v1/sessions/<uuid:session_id>/context", description="Context inspector"
)


class InspectArgsSchema(Schema):
    full = part_id(load_default=None, metadata={"description": "a part id: its whole content"})
    format = fields.String(
        load_default="parts",
        validate=validate.OneOf(["parts", "request", *WIRE_FORMATS]),
        metadata={
            "description": "`parts` (the inspect response), `request` (the provider-neutral request), or "
            "`anthropic` / `openai`: the exact JSON body that provider's adapter POSTs for the next call"
        },
    )
    compaction = fields.String(
        load_default=None,
        validate=validate.OneOf(["preview"]),
        metadata={"description": "`preview`: say what a compaction would do even below the trigger"},
    )


@blp.route("")
class Context(MethodView):
    @blp.arguments(InspectArgsSchema, location="query")
    @blp.response(200, description="the inspect response, one part (`full`), or a request body (`format`)")
    @blp.doc(responses={"200": {"content": {"application/json": {"schema": {"anyOf": ANSWERS}}}}})
    @error_response(blp, 404, "`not_found`: no such session (or not the caller's), or `full` names no part.")
    @error_response(blp, 422, "`malformed_part`: `full` is not a part id.")
    def get(self, args: dict, session_id: uuid.UUID) -> dict[str, Any]:
        """The session's next model request, part by part with token estimates; nothing is written."""
        return tenancy.inspector().inspect(**args)
