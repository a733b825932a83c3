"""Runs of the agent loop: list, one run (with its messages once it ends), its steps, cancel.

A run of kind ``compact`` is a compaction (``POST /v1/sessions/{id}/compact``): it
stores no message, and once it succeeded its ``result`` holds the compaction's figures.
A run of kind ``try`` is a scratch turn (``POST …/context/try`` with ``"mode": "turn"``):
it stores nothing of the session, and once it ended its ``result`` says what the turn
did; ``GET /v1/runs/{id}`` shows each of its calls as ``GET …/calls/{call_id}`` does.
"""

from __future__ import annotations

import uuid
from typing import Any

from flask import g
from flask.views import MethodView
from marshmallow import Schema, fields, validate

from blueprints.common import MAX_PAGE, ReasonSchema, error_response, page_of, paged
from blueprints.run_schemas import RunSchema, RunWithMessagesSchema, state_of, with_messages
from hango import admission, tenancy
from hango.api import Blueprint
from hango.run_events import RUN_EVENT_KINDS
from hango.store.pages import Page

blp = Blueprint("runs", __name__, url_prefix="/v1", description="Runs of the agent loop")

RunPageSchema = page_of(RunSchema, "RunPage")


class EventsArgsSchema(Schema):
    after = fields.Integer(load_default=0, validate=validate.Range(min=0, max=2**31 - 1))
    limit = fields.Integer(load_default=MAX_PAGE, validate=validate.Range(min=1, max=MAX_PAGE))


class CancelSchema(ReasonSchema):
    """Why the run is cancelled (optional)."""


class RunEventSchema(Schema):
    seq = fields.Integer()
    kind = fields.String(metadata={"enum": list(RUN_EVENT_KINDS)})
    at = fields.DateTime()
    detail = fields.Raw(metadata={"type": "object"})


class RunEventsSchema(Schema):
    items = fields.List(fields.Nested(RunEventSchema))
    next_after = fields.Integer(metadata={"description": "pass as `after` to read the steps that follow"})
    status = fields.String(metadata={"description": "the run's status when the steps were read"})
    state = fields.String()


@blp.route("/sessions/<uuid:session_id>/runs")
class RunList(MethodView):
    @paged(blp)
    @blp.response(200, RunPageSchema)
    @error_response(blp, 404, "`not_found`: no such session, or not one of the caller's.")
    def get(self, args: dict, session_id: uuid.UUID) -> Page:
        """List the session's runs, oldest first."""
        return tenancy.store().runs.page(session_id, args["cursor"], args["limit"])


@blp.route("/runs/<uuid:run_id>")
class RunItem(MethodView):
    @blp.response(200, RunWithMessagesSchema)
    @error_response(blp, 404, "`not_found`: no such run, or its session is not one of the caller's.")
    def get(self, run_id: uuid.UUID) -> dict[str, Any]:
        """One run: queued, running or ended, with its new messages once it ended."""
        return with_messages(g.run)


@blp.route("/runs/<uuid:run_id>/events")
class RunEvents(MethodView):
    @blp.arguments(EventsArgsSchema, location="query")
    @blp.response(200, RunEventsSchema)
    @error_response(blp, 404, "`not_found`: no such run, or its session is not one of the caller's.")
    def get(self, args: dict, run_id: uuid.UUID) -> dict[str, Any]:
        """The run's steps after `after`, in order; poll with the answer's `next_after`."""
        items = tenancy.store().run_events.after(run_id, args["after"], args["limit"])
        next_after = items[-1].seq if items else args["after"]
        return {"items": items, "next_after": next_after, "status": g.run.status, "state": state_of(g.run)}


@blp.route("/runs/<uuid:run_id>/cancel")
class RunCancel(MethodView):
    @blp.arguments(CancelSchema, required=False)
    @blp.response(202, RunSchema)
    @error_response(blp, 404, "`not_found`: no such run, or its session is not one of the caller's.")
    @error_response(blp, 409, "`run_finished`: the run already ended.")
    def post(self, body: dict, run_id: uuid.UUID) -> Any:
        """Cancel a run: a queued one never starts, a running one stops at its next step (`cancelled`)."""
        run = admission.cancel_run(tenancy.job_queue(), tenancy.store(), g.run)
        tenancy.audit("run.cancel", "run", run.id, {"status": run.status, "reason": body["reason"]})
        return run
