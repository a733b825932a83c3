"""Stored override sets: a target's set as the API answers it (with its ETag), and the PUT that replaces it.

A PUT locks the agent or session row, compares ``If-Match``, screens the set on the
next request it must leave valid, closes it under tool pairing, stores and audits it.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from typing import Any, Protocol

from hango import telemetry
from hango.agent.assembly import Prepared, prepare_agent, prepare_session
from hango.agent.deps import Deps
from hango.agent.overrides import Override
from hango.agent.parts import PartID, part_key
from hango.agent.state import Caller
from hango.auth import Principal
from hango.errors import NotFound, PreconditionFailed
from hango.inspector.override_rules import closed_for_put, validate_set
from hango.store import TenantStore
from hango.store.context_overrides import StoredOverride, Target
from hango.telemetry import names


class Expected(Protocol):
    """An ``If-Match`` header's ETags (werkzeug's ``ETags``): empty when absent, every ETag for ``*``."""

    def __bool__(self) -> bool: ...
    def contains(self, etag: str) -> bool: ...


def etag_of(overrides: list[StoredOverride]) -> str:
    """A strong ETag over the stored set."""
    body = json.dumps([vars(o) for o in overrides], sort_keys=True).encode()
    return '"' + hashlib.sha256(body).hexdigest()[:32] + '"'


def _stored(store: TenantStore, target: Target) -> list[StoredOverride]:
    """The target's stored set in part order (``message:2`` before ``message:10``)."""
    return sorted(store.context_overrides.list(target), key=lambda o: part_key(o.part))


def agent_scope(store: TenantStore, agent_id: uuid.UUID) -> dict[str, Any]:
    """How many sessions an agent-level set applies to, and whose they are."""
    agent = store.agents.get(agent_id)
    sessions = store.sessions.count_of_agent(agent_id)
    return {"agent_id": str(agent_id), "agent_name": agent.name if agent else None, "sessions": sessions}


def override_set(store: TenantStore, target: Target, added: list[PartID] | None = None) -> tuple[dict, str]:
    """The target's stored set as the API answers it (an agent's with its scope), and its ETag."""
    stored = _stored(store, target)
    body: dict = {"overrides": [vars(o) for o in stored]}
    if added is not None:
        body["added"] = added
    if target.kind == "agent":
        body["scope"] = agent_scope(store, target.id)
    return body, etag_of(stored)


def prepared_for(deps: Deps, store: TenantStore, session: Any, caller: Caller, target: Target) -> Prepared:
    """The next call the target's set must leave valid: the session's, or the agent's side of every session's."""
    if target.kind == "session":
        return prepare_session(deps, store, session, caller)
    return prepare_agent(deps, store, store.agents.get(target.id), caller)


def _check_if_match(stored: list[StoredOverride], expected: Expected, route: str) -> None:
    """412 unless ``If-Match`` is absent, ``*`` or lists the stored set's ETag (RFC 9110 §13.1.1)."""
    if expected and not expected.contains(etag_of(stored).strip('"')):
        raise PreconditionFailed(
            f"the {route}'s overrides changed since they were read; GET them again",
            code="etag_mismatch",
            details={"route": route},
        )


def put_overrides(
    deps: Deps,
    store: TenantStore,
    session: Any,
    caller: Caller,
    target: Target,
    *,
    overrides: list[Override],
    expected: Expected,
    who: Principal,
) -> tuple[dict, str]:
    """Lock, compare ``expected`` (``If-Match``), screen and close on the next request, store, audit;
    the stored set as ``override_set`` answers it, with the companions the PUT pulled in (``added``)."""
    if not store.context_overrides.lock_target(target):
        raise NotFound()
    stored = _stored(store, target)
    _check_if_match(stored, expected, target.kind)
    prepared = prepared_for(deps, store, session, caller, target)
    screened = validate_set(prepared.chain, prepared.state, overrides, [o.part for o in stored], target.kind)
    closed, added = closed_for_put(screened, target.kind, [o.part for o in stored if o.action == "exclude"])
    rows = [StoredOverride(o.part, o.action, o.replacement, o.paired_from) for o in closed]
    store.context_overrides.replace(target, rows, who.user_id)
    kept = {o.part for o in closed}
    detail = {
        "parts": [{"part": o.part, "action": o.action} for o in closed],
        "added": added,
        # what the save took off: a diff's cause for a part that is back (``hango.agent.ledger.causes``)
        "cleared": [{"part": o.part, "action": o.action} for o in stored if o.part not in kept],
    }
    store.audit.record(
        "context.override",
        target.kind,
        target.id,
        actor_user_id=who.user_id,
        api_key_id=who.api_key_id,
        detail=detail,
    )
    active = telemetry.meter().create_gauge(names.METRIC_CONTEXT_OVERRIDES_ACTIVE)
    active.set(store.context_overrides.count_active(), {names.TENANT_ID: str(store.tenant_id)})
    return override_set(store, target, added)
