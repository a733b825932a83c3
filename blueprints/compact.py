"""Compact now: ``POST /v1/sessions/{id}/compact`` queues one compaction of the session's history (202).

A compaction is a run of kind ``compact``: its row and its job commit in the request's
transaction, on the session's lock, so it runs after the session's queued runs and
before the next. The request answers 404, 409 ``session_busy`` (see ``multitask``),
429, 402 and 422 ``nothing_to_compact`` up front, without a model call; a worker makes
the one summarizer call (billed to the run, purpose ``summarize``) and the run's
``result`` holds the figures. ``session.compact`` is audited without the instructions.
"""

from __future__ import annotations

import uuid
from typing import Any

from flask import g
from flask.views import MethodView
from marshmallow import Schema, fields, validate

from blueprints.common import QUOTA_EXHAUSTED, error_responses
from blueprints.run_schemas import LOCATION, TOO_MANY_RUNS, RunSchema, location_of, multitask_field
from hango import tenancy
from hango.admission import NewRun, enqueue_compaction
from hango.api import Blueprint

# Nested in ``sessions`` (``blueprints/__init__.py``): its URL and OpenAPI tag are the sessions area's.
blp = Blueprint("compact", __name__)

MAX_INSTRUCTIONS = 2_000


class CompactBodySchema(Schema):
    instructions = fields.String(
        load_default=None,
        allow_none=True,
        validate=validate.Length(max=MAX_INSTRUCTIONS),
        metadata={"description": "what the summary should keep or drop"},
    )
    multitask = multitask_field()


ERRORS = (
    (402, QUOTA_EXHAUSTED),
    (404, "`not_found`: no such session, or not the caller's."),
    (409, "`session_busy`: a run is queued or running on this session (see `multitask`)."),
    (422, "`nothing_to_compact`: the history has no safe place to cut."),
    (429, TOO_MANY_RUNS),
)


@blp.route("/<uuid:session_id>/compact")
class Compact(MethodView):
    @blp.arguments(CompactBodySchema, required=False)
    @blp.response(202, RunSchema, headers=LOCATION)
    @error_responses(blp, ERRORS)
    def post(self, body: dict, session_id: uuid.UUID) -> tuple[Any, int, dict[str, str]]:
        """Queue a summary of the session's older messages (202); poll `Location` for its `result`.

        Stored messages never change. The run fails with `provider_error` when the
        summarizer call fails, or `nothing_to_compact` when the history changed meanwhile.
        """
        instructions = (body["instructions"] or "").strip() or None
        content, multitask = {"instructions": instructions}, body["multitask"]
        new = NewRun(session_id, content, tenancy.caller(), multitask=multitask, kind="compact")
        run = enqueue_compaction(tenancy.job_queue(), tenancy.store(), tenancy.deps(), g.session, new)
        detail = {"run_id": str(run.id), "focused": bool(instructions)}
        tenancy.audit("session.compact", "session", session_id, detail)
        return run, 202, location_of(run)
