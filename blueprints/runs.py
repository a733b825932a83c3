"""Runs of the agent loop: ``GET /v1/sessions/{id}/runs`` and ``GET /v1/runs/{id}``."""

from __future__ import annotations

import uuid

import sqlalchemy as sa
from flask import g
from flask.views import MethodView
from marshmallow import Schema, fields

from blueprints.common import error_response, page_of, paged
from hango import tenancy
from hango.api import Blueprint
from hango.store.pages import Page

blp = Blueprint("runs", __name__, url_prefix="/v1", description="Runs of the agent loop")


class RunSchema(Schema):
    id = fields.UUID()
    session_id = fields.UUID()
    status = fields.String()
    stop_reason = fields.String(allow_none=True)
    error = fields.Raw(allow_none=True)
    started_at = fields.DateTime()
    finished_at = fields.DateTime(allow_none=True)


RunPageSchema = page_of(RunSchema, "RunPage")


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
    @blp.response(200, RunSchema)
    @error_response(blp, 404, "`not_found`: no such run, or its session is not one of the caller's.")
    def get(self, run_id: uuid.UUID) -> sa.Row:
        """One run."""
        return g.run
