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

from blueprints.common import error_response
from hango import telemetry, tenancy
from hango.agent.inspect import visible_history
from hango.agent.overrides import MAX_REPLACEMENT, Override, check_override, close_set, distinct
from hango.agent.parts import PartID
from hango.api import Blueprint
from hango.errors import NotFound, PreconditionFailed
from hango.store.context_overrides import StoredOverride, Target
from hango.telemetry import names

blp = Blueprint("overrides", __name__, url_prefix="/v1", description="Context overrides")

MAX_OVERRIDES = 5_000


class OverrideSchema(Schema):
    part = fields.String(required=True, validate=validate.Length(min=1, max=520))
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


class OverrideSetResultSchema(OverrideSetSchema):
    added = fields.List(fields.String(), metadata={"description": "companion parts this PUT pulled in"})


def etag_of(overrides: list[StoredOverride]) -> str:
    """A strong ETag over the stored set."""
    body = json.dumps([vars(o) for o in overrides], sort_keys=True).encode()
    return '"' + hashlib.sha256(body).hexdigest()[:32] + '"'


def _respond(target: Target, added: list[PartID] | None = None) -> tuple[dict, int, dict]:
    stored = tenancy.store().context_overrides.list(target)
    body = {"overrides": [vars(o) for o in stored]}
    if added is not None:
        body["added"] = added
    return body, 200, {"ETag": etag_of(stored)}


def _put(target: Target, overrides: list[Override], close) -> tuple[dict, int, dict]:
    """Check, lock, compare ``If-Match``, close, store, audit."""
    for override in overrides:
        check_override(override, target.kind)
    store = tenancy.store()
    if not store.context_overrides.lock_target(target):
        raise NotFound()
    expected = request.headers.get("If-Match")
    if expected and expected not in ("*", etag_of(store.context_overrides.list(target))):
        raise PreconditionFailed(
            "the overrides changed since they were read; GET them again", code="etag_mismatch"
        )
    closed, added = close(overrides)
    rows = [StoredOverride(o.part, o.action, o.replacement, o.paired_from) for o in closed]
    store.context_overrides.replace(target, rows, tenancy.principal().user_id)
    detail = {"parts": [{"part": o.part, "action": o.action} for o in closed], "added": added}
    tenancy.audit("context.override", target.kind, target.id, detail)
    active = telemetry.meter().create_gauge(names.METRIC_CONTEXT_OVERRIDES_ACTIVE)
    active.set(store.context_overrides.count_active(), {names.TENANT_ID: str(store.tenant_id)})
    return _respond(target, added)


def _from_body(body: dict) -> list[Override]:
    return [Override(o["part"], o["action"], o["replacement"], o["paired_from"]) for o in body["overrides"]]


def _agent_set(overrides: list[Override]) -> tuple[list[Override], list[PartID]]:
    """System and tool parts have no pairs: the explicit set, checked for repeats, is the set."""
    return sorted(distinct(overrides).values(), key=lambda o: o.part), []


def _session_set(overrides: list[Override]) -> tuple[list[Override], list[PartID]]:
    history = visible_history(tenancy.store(), g.session, tenancy.caller())
    return close_set(overrides, history)


ERRORS = (
    (404, "`not_found`: no such agent or session, or not the caller's."),
    (412, "`etag_mismatch`: `If-Match` no longer matches the stored set."),
    (
        422,
        "`malformed_part`, `wrong_target`, `replace_not_allowed_for_tools`, `replacement_required`, "
        "`replacement_not_allowed`, `replace_needs_text`, `duplicate_part`, `no_user_message`, "
        "`starts_with_assistant`; `details.parts` names the parts.",
    ),
)


def _documented(view):
    for status, text in ERRORS:
        view = error_response(blp, status, text)(view)
    return view


@blp.route("/agents/<uuid:agent_id>/context-overrides")
class AgentOverrides(MethodView):
    @blp.response(200, OverrideSetSchema)
    def get(self, agent_id: uuid.UUID):
        """The agent's overrides of system and tool parts (they apply to every session of the agent)."""
        return _respond(Target("agent", agent_id))

    @blp.arguments(OverrideSetSchema)
    @blp.response(200, OverrideSetResultSchema)
    @_documented
    def put(self, body: dict, agent_id: uuid.UUID):
        """Replace the agent's overrides of system and tool parts; applies from the next run."""
        return _put(Target("agent", agent_id), _from_body(body), _agent_set)


@blp.route("/sessions/<uuid:session_id>/context-overrides")
class SessionOverrides(MethodView):
    @blp.response(200, OverrideSetSchema)
    def get(self, session_id: uuid.UUID):
        """The session's overrides of message and summary parts."""
        return _respond(Target("session", session_id))

    @blp.arguments(OverrideSetSchema)
    @blp.response(200, OverrideSetResultSchema)
    @_documented
    def put(self, body: dict, session_id: uuid.UUID):
        """Replace the session's overrides; tool_use/tool_result companions are pulled in and listed."""
        return _put(Target("session", session_id), _from_body(body), _session_set)
