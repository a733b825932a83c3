"""Pending changes: ``POST …/context/preview`` (the inspect response as if saved) and ``POST …/context/save``.

The panel and the CLI show only what the server computes: a toggle previews
the proposed agent and session sets (``preview``), and Save stores both in one
transaction (``save``), each half under its own ETag, so the two land together
or neither does.
"""

from __future__ import annotations

import uuid
from typing import Any

from flask import g, request
from flask.views import MethodView
from marshmallow import Schema, fields, validate
from werkzeug.datastructures import ETags
from werkzeug.http import parse_etags

from blueprints.common import error_response
from blueprints.override_schemas import ERRORS, OverrideSetSchema, from_body
from hango import authz, tenancy
from hango.agent.overrides import Override
from hango.api import Blueprint
from hango.inspector import service

# Nested in ``context`` (``blueprints/__init__.py``): the inspector is one API area, one OpenAPI tag.
blp = Blueprint("pending", __name__)


class ProposedSetSchema(OverrideSetSchema):
    pass


class PreviewBodySchema(Schema):
    agent = fields.Nested(
        ProposedSetSchema,
        load_default=None,
        allow_none=True,
        metadata={"description": "the agent's proposed set (system and tool parts); absent: the stored one"},
    )
    session = fields.Nested(
        ProposedSetSchema,
        load_default=None,
        allow_none=True,
        metadata={
            "description": "the session's proposed set (message and summary parts); absent: the stored one"
        },
    )


class SavedSetSchema(ProposedSetSchema):
    if_match = fields.String(
        load_default=None,
        allow_none=True,
        validate=validate.Length(max=2_000),
        metadata={"description": "the ETag the set was read with (as the route's `If-Match` takes it)"},
    )


class SaveBodySchema(Schema):
    agent = fields.Nested(SavedSetSchema, load_default=None, allow_none=True)
    session = fields.Nested(SavedSetSchema, load_default=None, allow_none=True)


def _proposal(body: dict[str, Any]) -> service.Proposal:
    return service.proposal({r: None if body[r] is None else from_body(body[r]) for r in service.ROUTES})


def _require_agent_write() -> None:
    """403 ``forbidden`` when the caller may read the agent but not change its parts."""
    agent = tenancy.store().agents.get(g.session.agent_id)
    if agent is None or not authz.owns(agent.owner_id):
        authz.refuse_write(
            "agent:write",
            "system and tool parts are the agent's: only its owner or a tenant owner or admin may change them",
        )


@blp.route("/preview")
class ContextPreview(MethodView):
    @blp.arguments(PreviewBodySchema)
    @blp.response(200, description="the inspect response as if the proposed sets were saved, plus `pending`")
    @error_response(blp, 404, "`not_found`: no such session, or not the caller's.")
    @error_response(blp, 422, ERRORS[-1][1])
    def post(self, body: dict[str, Any], session_id: uuid.UUID) -> dict[str, Any]:
        """The session's next request as if the proposed agent and session sets were saved; nothing is written."""
        return tenancy.inspector().preview(_proposal(body))


def _half(half: dict[str, Any]) -> tuple[list[Override], ETags]:
    """A saved half's set and the ETags it was read with (its `if_match`, else the request's `If-Match`)."""
    expected = request.if_match if half["if_match"] is None else parse_etags(half["if_match"])
    return from_body(half), expected


@blp.route("/save")
class ContextSave(MethodView):
    @blp.arguments(SaveBodySchema)
    @blp.response(
        200, description="each route's stored set, `added` companions, ETag (and the agent's scope)"
    )
    @error_response(blp, 403, "`forbidden`: the caller may read the agent but not change its parts.")
    @error_response(blp, 412, "`etag_mismatch`: a half's `if_match` no longer matches; nothing was saved.")
    @error_response(blp, 422, ERRORS[-1][1])
    def post(self, body: dict[str, Any], session_id: uuid.UUID) -> dict[str, Any]:
        """Store the agent's and the session's sets in one transaction: both land or neither does."""
        if body["agent"] is not None:
            _require_agent_write()
        halves = {r: None if body[r] is None else _half(body[r]) for r in service.ROUTES}
        return tenancy.inspector().save(halves)
