"""Stored context overrides: ``/v1/agents/{id}/context-overrides`` and ``/v1/sessions/{id}/context-overrides``.

A PUT replaces the whole set in one transaction, under a lock on the agent or
session row. Sessions' sets are closed under tool pairing: the companions a
set pulls in are stored with ``paired_from`` and listed in ``added``.
"""

from __future__ import annotations

import uuid

from flask import request
from flask.views import MethodView
from marshmallow import Schema, fields

from blueprints.common import JsonInteger, error_responses
from blueprints.override_schemas import ERRORS, OverrideSetSchema, from_body
from hango import tenancy
from hango.agent.overrides import Override
from hango.api import Blueprint
from hango.store.context_overrides import Target

blp = Blueprint("overrides", __name__, url_prefix="/v1", description="Context overrides")


class ScopeSchema(Schema):
    agent_id = fields.String()
    agent_name = fields.String(allow_none=True)
    sessions = JsonInteger(metadata={"description": "how many sessions of the agent the set applies to"})


class AgentOverrideSetSchema(OverrideSetSchema):
    scope = fields.Nested(
        ScopeSchema,
        load_default=None,
        metadata={
            "description": "answered by the server; a PUT may send it back (a GET body as it is), unread"
        },
    )


class OverrideSetResultSchema(OverrideSetSchema):
    added = fields.List(
        fields.String(), metadata={"description": "companion parts this PUT pulled in (new ones only)"}
    )


class AgentOverrideSetResultSchema(OverrideSetResultSchema, AgentOverrideSetSchema):
    pass


def respond(target: Target) -> tuple[dict, int, dict]:
    body, etag = tenancy.inspector().override_set(target)
    return body, 200, {"ETag": etag}


def put_set(target: Target, overrides: list[Override]) -> tuple[dict, int, dict]:
    body, etag = tenancy.inspector().put_overrides(target, overrides, request.if_match)
    return body, 200, {"ETag": etag}


def _view(kind: str, set_schema: type[Schema], result_schema: type[Schema], docs: tuple[str, str]) -> type:
    """The GET and PUT of one target kind's set; the two kinds differ only in their schemas and words."""

    def get(self, **ids: uuid.UUID):
        (target_id,) = ids.values()  # agent_id or session_id, by the route
        return respond(Target(kind, target_id))

    def put(self, body: dict, **ids: uuid.UUID):
        (target_id,) = ids.values()
        return put_set(Target(kind, target_id), from_body(body))

    get.__doc__, put.__doc__ = docs
    get = blp.response(200, set_schema)(get)
    put = error_responses(blp, ERRORS)(blp.response(200, result_schema)(blp.arguments(set_schema)(put)))
    name = f"{kind.capitalize()}Overrides"
    return type(name, (MethodView,), {"get": get, "put": put, "__qualname__": name})


blp.route("/agents/<uuid:agent_id>/context-overrides")(
    _view(
        "agent",
        AgentOverrideSetSchema,
        AgentOverrideSetResultSchema,
        (
            "The agent's overrides of system and tool parts (they apply to every session of the agent).",
            "Replace the agent's overrides of system and tool parts; applies from the next run.",
        ),
    )
)
blp.route("/sessions/<uuid:session_id>/context-overrides")(
    _view(
        "session",
        OverrideSetSchema,
        OverrideSetResultSchema,
        (
            "The session's overrides of message and summary parts.",
            "Replace the session's overrides; tool_use/tool_result companions are pulled in and listed.",
        ),
    )
)
