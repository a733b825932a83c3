"""Stored context overrides: ``/v1/agents/{id}/context-overrides`` and ``/v1/sessions/{id}/context-overrides``.

A PUT replaces the whole set in one transaction, under a lock on the agent or
session row. Sessions' sets are closed under tool pairing: the companions a
set pulls in are stored with ``paired_from`` and listed in ``added``.
"""

from __future__ import annotations

import hashlib
import json
import uuid

from flask import g, request
from flask.views import MethodView
from marshmallow import Schema, fields, validate
from werkzeug.datastructures import ETags

from blueprints.common import JsonInteger, error_responses, part_id
from hango import telemetry, tenancy
from hango.agent.assembly import Prepared, prepare_agent, prepare_session
from hango.agent.overrides import Override
from hango.agent.parts import PartID, part_key
from hango.api import Blueprint
from hango.errors import NotFound, PreconditionFailed
from hango.inspector.override_rules import MAX_REPLACEMENT, closed_for_put, validate_set
from hango.store.context_overrides import StoredOverride, Target
from hango.telemetry import names

blp = Blueprint("overrides", __name__, url_prefix="/v1", description="Context overrides")

MAX_OVERRIDES = 5_000


class OverrideSchema(Schema):
    part = part_id(required=True)
    action = fields.String(required=True, validate=validate.OneOf(["exclude", "replace"]))
    replacement = fields.String(
        load_default=None, allow_none=True, validate=validate.Length(max=MAX_REPLACEMENT)
    )
    paired_from = fields.String(
        load_default=None,
        allow_none=True,
        metadata={"description": "set by the server on companions; companions sent back are recomputed"},
    )


class OverrideSetSchema(Schema):
    overrides = fields.List(
        fields.Nested(OverrideSchema), required=True, validate=validate.Length(max=MAX_OVERRIDES)
    )


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


def etag_of(overrides: list[StoredOverride]) -> str:
    """A strong ETag over the stored set."""
    body = json.dumps([vars(o) for o in overrides], sort_keys=True).encode()
    return '"' + hashlib.sha256(body).hexdigest()[:32] + '"'


def _stored(target: Target) -> list[StoredOverride]:
    """The target's stored set in part order (``message:2`` before ``message:10``)."""
    return sorted(tenancy.store().context_overrides.list(target), key=lambda o: part_key(o.part))


def respond(target: Target, added: list[PartID] | None = None) -> tuple[dict, int, dict]:
    stored = _stored(target)
    body: dict = {"overrides": [vars(o) for o in stored]}
    if added is not None:
        body["added"] = added
    if target.kind == "agent":
        body["scope"] = _scope(target.id)
    return body, 200, {"ETag": etag_of(stored)}


def _scope(agent_id: uuid.UUID) -> dict:
    """How many sessions an agent-level set applies to, and whose they are."""
    store = tenancy.store()
    agent = store.agents.get(agent_id)
    sessions = store.sessions.count_of_agent(agent_id)
    return {"agent_id": str(agent_id), "agent_name": agent.name if agent else None, "sessions": sessions}


def _check_if_match(stored: list[StoredOverride], expected: ETags | None, route: str) -> None:
    """412 unless ``If-Match`` (or ``expected``) is absent, ``*`` or lists the stored set's ETag (RFC 9110 §13.1.1)."""
    expected = request.if_match if expected is None else expected
    if expected and not expected.contains(etag_of(stored).strip('"')):
        raise PreconditionFailed(
            f"the {route}'s overrides changed since they were read; GET them again",
            code="etag_mismatch",
            details={"route": route},
        )


def put_set(
    target: Target, overrides: list[Override], expected: ETags | None = None
) -> tuple[dict, int, dict]:
    """Lock, compare ``If-Match`` (or ``expected``), screen and close on the next request, store, audit."""
    store = tenancy.store()
    if not store.context_overrides.lock_target(target):
        raise NotFound()
    stored = _stored(target)
    _check_if_match(stored, expected, target.kind)
    prepared = _prepared(target)
    screened = validate_set(prepared.chain, prepared.state, overrides, [o.part for o in stored], target.kind)
    closed, added = closed_for_put(screened, target.kind, [o.part for o in stored if o.action == "exclude"])
    rows = [StoredOverride(o.part, o.action, o.replacement, o.paired_from) for o in closed]
    store.context_overrides.replace(target, rows, tenancy.principal().user_id)
    kept = {o.part for o in closed}
    detail = {
        "parts": [{"part": o.part, "action": o.action} for o in closed],
        "added": added,
        # what the save took off: a diff's cause for a part that is back (``hango.agent.ledger.causes``)
        "cleared": [{"part": o.part, "action": o.action} for o in stored if o.part not in kept],
    }
    tenancy.audit("context.override", target.kind, target.id, detail)
    active = telemetry.meter().create_gauge(names.METRIC_CONTEXT_OVERRIDES_ACTIVE)
    active.set(store.context_overrides.count_active(), {names.TENANT_ID: str(store.tenant_id)})
    return respond(target, added)


def _prepared(target: Target) -> Prepared:
    """The next call the set must leave valid: the session's, or the agent's side of every session's."""
    deps, store, caller = tenancy.deps(), tenancy.store(), tenancy.caller()
    if target.kind == "session":
        return prepare_session(deps, store, g.session, caller)
    return prepare_agent(deps, store, store.agents.get(target.id), caller)


def from_body(body: dict) -> list[Override]:
    return [Override(o["part"], o["action"], o["replacement"], o["paired_from"]) for o in body["overrides"]]


ERRORS = (
    (404, "`not_found`: no such agent or session, or not the caller's."),
    (412, "`etag_mismatch`: `If-Match` no longer matches the stored set."),
    (
        422,
        "`malformed_part`, `wrong_target`, `replace_not_allowed_for_tools`, `replacement_required`, "
        "`replacement_not_allowed`, `replace_needs_text`, `duplicate_part`, `unknown_part`, `unknown_paired_from`, "
        "`no_user_message`, "
        "`starts_with_assistant`; `details.parts` names the parts.",
    ),
)


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
