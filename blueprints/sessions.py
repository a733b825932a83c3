"""Sessions: ``/v1/sessions``. Members see their own; owners and admins see all."""

from __future__ import annotations

import uuid

import sqlalchemy as sa
from flask import g
from flask.views import MethodView
from marshmallow import Schema, fields, validate

from blueprints.common import PageArgsSchema, error_response, page_of, paged
from hango import authz, tenancy
from hango.api import Blueprint
from hango.errors import Unprocessable
from hango.store.pages import Page

blp = Blueprint("sessions", __name__, url_prefix="/v1/sessions", description="Sessions with an agent")


class SessionSchema(Schema):
    id = fields.UUID(dump_only=True)
    agent_id = fields.UUID(required=True)
    owner_id = fields.UUID(dump_only=True)
    title = fields.String(load_default="", validate=validate.Length(max=200))
    todos = fields.List(fields.Dict(), dump_only=True)
    created_at = fields.DateTime(dump_only=True)


class SessionPageArgsSchema(PageArgsSchema):
    agent_id = fields.UUID(load_default=None, metadata={"description": "only this agent's sessions"})


SessionPageSchema = page_of(SessionSchema, "SessionPage")
NOT_FOUND = "`not_found`: no such session, or not one of the caller's."


@blp.route("")
class SessionList(MethodView):
    @paged(blp, SessionPageArgsSchema)
    @blp.response(200, SessionPageSchema)
    def get(self, args: dict) -> Page:
        """List sessions: a member's own, or all for owners and admins."""
        return tenancy.store().sessions.page(
            args["cursor"], args["limit"], owner_id=authz.visible_owner(), agent_id=args["agent_id"]
        )

    @blp.arguments(SessionSchema)
    @blp.response(201, SessionSchema)
    @error_response(
        blp, 422, "`invalid`: the body is not valid. `unknown_agent`: no such agent in the tenant."
    )
    def post(self, body: dict) -> sa.Row:
        """Start a session with any agent of the tenant; the caller owns it."""
        store = tenancy.store()
        if store.agents.get(body["agent_id"]) is None:
            raise Unprocessable(
                "no such agent in this tenant",
                code="unknown_agent",
                details={"agent_id": str(body["agent_id"])},
            )
        session = store.sessions.create(body["agent_id"], tenancy.principal().user_id, body["title"])
        tenancy.audit("session.create", "session", session.id, {"agent_id": str(session.agent_id)})
        return session


@blp.route("/<uuid:session_id>")
class SessionItem(MethodView):
    @blp.response(200, SessionSchema)
    @error_response(blp, 404, NOT_FOUND)
    def get(self, session_id: uuid.UUID) -> sa.Row:
        """One session."""
        return g.session

    @blp.response(204)
    @error_response(blp, 404, NOT_FOUND)
    def delete(self, session_id: uuid.UUID) -> None:
        """Delete a session with its messages, runs and files (usage records stay)."""
        tenancy.store().sessions.delete(session_id)
        tenancy.audit("session.delete", "session", session_id, {"agent_id": str(g.session.agent_id)})
