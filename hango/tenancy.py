"""Per-request identity: the API key's principal, the tenant store built from it, and the run's
caller and dependencies, each built once per request."""

from __future__ import annotations

import ipaddress
from typing import Any

import procrastinate
from flask import current_app, g, request
from sqlalchemy.engine import Connection

from hango.agent.deps import Deps
from hango.agent.state import Caller
from hango.auth import Principal, authenticate, key_from_header, prefix_of
from hango.db import db
from hango.errors import Unauthorized
from hango.inspector.service import Inspector
from hango.ratelimit import count_failure, count_request
from hango.store import TenantStore


def load_principal() -> None:
    """Authenticate a ``/v1`` request and scope its store to the key's tenant.

    The key's bookkeeping (``last_used_at``, the member's rate-limit window, or the
    failure counts of a key that failed) commits on its own, so it holds even when
    the request itself fails and rolls back.
    """
    if not request.path.startswith("/v1/") or request.method == "OPTIONS":
        return
    conn = db.connection()
    header = request.headers.get("Authorization")
    try:
        principal = authenticate(conn, key_from_header(header))
    except Unauthorized:
        _count_failure(conn, header)
        raise
    try:
        count_request(conn, principal)
    finally:
        conn.commit()
    conn.begin()
    g.principal = principal
    g.store = TenantStore(conn, principal.tenant_id)


def _count_failure(conn: Connection, header: str | None) -> None:
    """Count a failed authentication against the client and the key's prefix (raises past the limit)."""
    subjects = [f"client:{client_address()}"]
    prefix = prefix_of((header or "").partition(" ")[2].strip())
    if prefix is not None:
        subjects.append(f"prefix:{prefix[:64]}")
    try:
        count_failure(conn, subjects, current_app.config["HANGO"].auth_failure_limit)
    finally:
        conn.commit()


def client_address() -> str:
    """The client's address: the last ``X-Forwarded-For`` hop when the peer is a trusted proxy, else the peer."""
    peer = request.remote_addr or ""
    forwarded = request.headers.get("X-Forwarded-For", "").rsplit(",", 1)[-1].strip()
    if forwarded and _is_trusted_proxy(peer):
        return forwarded[:64]
    return peer


def _is_trusted_proxy(peer: str) -> bool:
    try:
        address = ipaddress.ip_address(peer)
    except ValueError:
        return False
    return any(address in network for network in current_app.config["HANGO"].proxy_networks)


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


def inspector() -> Inspector:
    """This request's context inspector, bound once: its deps, tenant store, caller, principal and session."""
    if "inspector" not in g:
        g.inspector = Inspector(deps(), store(), caller(), principal(), g.get("session"))
    return g.inspector


def job_queue() -> procrastinate.App:
    """The app's job queue (it defers on the request's connection)."""
    return current_app.extensions["hango.queue"]


def audit(action: str, object_type: str, object_id: Any, detail: dict[str, Any] | None = None) -> None:
    """Record one audit row for the caller, in the request's transaction."""
    who = principal()
    store().audit.record(
        action, object_type, object_id, actor_user_id=who.user_id, api_key_id=who.api_key_id, detail=detail
    )
