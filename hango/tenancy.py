"""Per-request identity: the API key's principal, the tenant store built from it, and the run's
caller and dependencies, each built once per request."""

from __future__ import annotations

from typing import Any

from flask import current_app, g, request

from hango.agent.deps import Deps
from hango.agent.state import Caller
from hango.auth import Principal, authenticate, key_from_header
from hango.db import db
from hango.ratelimit import count_request
from hango.store import TenantStore


def load_principal() -> None:
    """Authenticate a ``/v1`` request and scope its store to the key's tenant.

    The key's bookkeeping (``last_used_at`` and the rate-limit window) commits
    on its own, so it holds even when the request itself fails and rolls back.
    """
    if not request.path.startswith("/v1/") or request.method == "OPTIONS":
        return
    conn = db.connection()
    principal = authenticate(conn, key_from_header(request.headers.get("Authorization")))
    try:
        count_request(conn, principal.api_key_id, principal.rate_limit_per_minute)
    finally:
        conn.commit()
    conn.begin()
    g.principal = principal
    g.store = TenantStore(conn, principal.tenant_id)


def principal() -> Principal:
    """The caller of this request."""
    return g.principal


def store() -> TenantStore:
    """This request's tenant store."""
    return g.store


def caller() -> Caller:
    """Who this request's model calls are billed to (built once per request)."""
    if "caller" not in g:
        who = principal()
        g.caller = Caller(who.user_id, who.api_key_id)
    return g.caller


def deps() -> Deps:
    """What this request's runtime needs from outside: the app's engine and configuration."""
    if "deps" not in g:
        g.deps = Deps(db.engine, current_app.config["HANGO"])
    return g.deps


def audit(action: str, object_type: str, object_id: Any, detail: dict[str, Any] | None = None) -> None:
    """Record one audit row for the caller, in the request's transaction."""
    who = principal()
    store().audit.record(
        action, object_type, object_id, actor_user_id=who.user_id, api_key_id=who.api_key_id, detail=detail
    )
