"""The authorization table: one row per route, and the hook that enforces it.

Rules, from most open to most closed:

- ``public``: no key (probes, the OpenAPI document, the admin page shell).
- ``tenant``: any key of the tenant.
- ``admin``: the tenant's owners and admins.
- ``agent:read``: an agent of the tenant (every role may read every agent).
- ``agent:write``: owners and admins, or a member who owns the agent.
- ``agent:admin``: owners and admins, on an agent of the tenant (attaching or detaching an MCP
  server: only they make hango contact a server, with the headers they sealed).
- ``session``: owners and admins, or the member who owns the session.
- ``run``: as ``session``, for the run's session.
- ``api_key``: owners and admins, or the member the key belongs to.
- ``member:admin``: owners and admins, on a member of the tenant.
- ``mcp_server``: an MCP server of the tenant (every role may read it).
- ``mcp_server:admin``: owners and admins, on an MCP server of the tenant.

Whatever a caller may not see is 404: existence is not leaked. A write the caller may not make
on something the caller may read (``WRITES_OF_READABLE``: every key of the tenant reads the agents,
the tenant's settings, its members and its MCP servers) is 403 ``forbidden``: it leaks nothing, and says why.
The loaded object is kept on ``g`` (``g.agent``, ``g.session``, ``g.run``,
``g.api_key``, ``g.member``, ``g.mcp_server``) so views do not load it twice.
"""

from __future__ import annotations

import uuid

from flask import g, request

from hango import tenancy
from hango.errors import Forbidden, NotFound, Unprocessable

AGENT = "/v1/agents/<uuid:agent_id>"
SESSION = "/v1/sessions/<uuid:session_id>"
MCP_SERVER = "/v1/mcp-servers/<uuid:server_id>"
ADMIN_PAGES = (
    "/admin/",
    "/admin/agents",
    "/admin/agents/<uuid:agent_id>",
    "/admin/sessions",
    "/admin/sessions/<uuid:session_id>",
    "/admin/sessions/<uuid:session_id>/context",
    "/admin/sessions/<uuid:session_id>/calls",
    "/admin/usage",
    "/admin/audit",
    "/admin/static/<path:filename>",
)

TABLE: dict[tuple[str, str], str] = {
    ("GET", "/healthz"): "public",
    ("GET", "/readyz"): "public",
    ("GET", "/openapi.json"): "public",
    **{("GET", page): "public" for page in ADMIN_PAGES},
    ("GET", "/v1/me"): "tenant",
    ("GET", "/v1/members"): "tenant",
    ("POST", "/v1/members"): "admin",
    ("DELETE", "/v1/members/<uuid:user_id>"): "member:admin",
    ("GET", "/v1/api-keys"): "tenant",
    ("POST", "/v1/api-keys"): "tenant",
    ("PATCH", "/v1/api-keys/<uuid:key_id>"): "api_key",
    ("DELETE", "/v1/api-keys/<uuid:key_id>"): "api_key",
    ("GET", "/v1/tenant"): "tenant",
    ("PATCH", "/v1/tenant"): "admin",
    ("GET", "/v1/agents"): "tenant",
    ("POST", "/v1/agents"): "tenant",
    ("GET", AGENT): "agent:read",
    ("PATCH", AGENT): "agent:write",
    ("DELETE", AGENT): "agent:write",
    ("GET", f"{AGENT}/memory"): "agent:read",
    ("GET", f"{AGENT}/memory/<path:path>"): "agent:read",
    ("PUT", f"{AGENT}/memory/<path:path>"): "agent:write",
    ("DELETE", f"{AGENT}/memory/<path:path>"): "agent:write",
    ("GET", f"{AGENT}/skills"): "agent:read",
    ("POST", f"{AGENT}/skills"): "agent:write",
    ("GET", f"{AGENT}/skills/<string:name>"): "agent:read",
    ("PUT", f"{AGENT}/skills/<string:name>"): "agent:write",
    ("DELETE", f"{AGENT}/skills/<string:name>"): "agent:write",
    ("GET", f"{AGENT}/mcp-servers"): "agent:read",
    ("PUT", f"{AGENT}/mcp-servers/<uuid:server_id>"): "agent:admin",
    ("DELETE", f"{AGENT}/mcp-servers/<uuid:server_id>"): "agent:admin",
    ("GET", "/v1/mcp-servers"): "tenant",
    ("POST", "/v1/mcp-servers"): "admin",
    ("GET", MCP_SERVER): "mcp_server",
    ("DELETE", MCP_SERVER): "mcp_server:admin",
    ("POST", f"{MCP_SERVER}/refresh"): "mcp_server:admin",
    ("GET", "/v1/sessions"): "tenant",
    ("POST", "/v1/sessions"): "tenant",
    ("GET", SESSION): "session",
    ("DELETE", SESSION): "session",
    ("GET", f"{SESSION}/messages"): "session",
    ("POST", f"{SESSION}/messages"): "session",
    ("GET", f"{SESSION}/runs"): "session",
    ("GET", "/v1/runs/<uuid:run_id>"): "run",
    ("GET", "/v1/runs/<uuid:run_id>/events"): "run",
    ("POST", "/v1/runs/<uuid:run_id>/cancel"): "run",
    ("GET", f"{SESSION}/context"): "session",
    ("POST", f"{SESSION}/context/try"): "session",
    ("POST", f"{SESSION}/context/preview"): "session",
    ("POST", f"{SESSION}/context/save"): "session",
    ("GET", f"{SESSION}/calls"): "session",
    ("GET", f"{SESSION}/calls/<uuid:call_id>"): "session",
    ("GET", f"{SESSION}/cost"): "session",
    ("GET", f"{SESSION}/context/diff"): "session",
    ("GET", f"{SESSION}/context/suggestions"): "session",
    ("POST", f"{SESSION}/compact"): "session",
    ("GET", f"{SESSION}/context-overrides"): "session",
    ("PUT", f"{SESSION}/context-overrides"): "session",
    ("GET", f"{AGENT}/context-overrides"): "agent:read",
    ("PUT", f"{AGENT}/context-overrides"): "agent:write",
    ("GET", "/v1/usage"): "tenant",
    ("GET", "/v1/audit"): "admin",
}


# The rules whose refused writes touch something every key of the tenant may read (its GET routes
# are ``tenant``, ``agent:read`` or ``mcp_server``), and who may make those writes: they answer 403, the rest 404.
# A refused read is always 404.
WRITES_OF_READABLE: dict[str, list[str]] = {
    "agent:write": ["agent owner", "owner", "admin"],
    "admin": ["owner", "admin"],
    "member:admin": ["owner", "admin"],
    "mcp_server:admin": ["owner", "admin"],
    "agent:admin": ["owner", "admin"],
}


def rule_for(method: str, path_rule: str) -> str | None:
    """The rule of one route, or None when the table has no row for it."""
    method = "GET" if method == "HEAD" else method
    return TABLE.get((method, path_rule))


def is_public(method: str, path_rule: str | None) -> bool:
    """True for routes that take no key (and for CORS pre-flight and unknown routes' 404s)."""
    if method == "OPTIONS" or path_rule is None:
        return not request.path.startswith("/v1/")
    return rule_for(method, path_rule) == "public" or not path_rule.startswith("/v1/")


def enforce() -> None:
    """Apply the current route's rule; an unlisted ``/v1`` route fails closed with 404."""
    if request.url_rule is None or request.method == "OPTIONS":
        return
    rule = rule_for(request.method, request.url_rule.rule)
    if rule in ("public", "tenant"):
        return
    who = tenancy.principal()
    store = tenancy.store()
    args = request.view_args or {}
    if rule == "admin":
        _require(who.is_admin, rule)
    elif rule in ("mcp_server", "mcp_server:admin"):
        g.mcp_server = _found(store.mcp_servers.get(args["server_id"]))
        _require(rule == "mcp_server" or who.is_admin, rule)
    elif rule in ("agent:read", "agent:write", "agent:admin"):
        g.agent = _found(store.agents.get(args["agent_id"]))
        may_write = who.is_admin if rule == "agent:admin" else owns(g.agent.owner_id)
        _require(rule == "agent:read" or may_write, rule)
    elif rule == "session":
        g.session = _found(store.sessions.get(args["session_id"]))
        _require(owns(g.session.owner_id), rule)
    elif rule == "run":
        g.run = _found(store.runs.get(args["run_id"]))
        g.session = _found(store.sessions.get(g.run.session_id))
        _require(owns(g.session.owner_id), rule)
    elif rule == "api_key":
        g.api_key = _found(store.api_keys.get(args["key_id"]))
        _require(owns(g.api_key.user_id), rule)
    elif rule == "member:admin":
        g.member = _found(store.members.get(args["user_id"]))
        _require(who.is_admin, rule)
    else:
        raise NotFound()


def _found(row):
    if row is None:
        raise NotFound()
    return row


def _require(allowed: bool, rule: str) -> None:
    """Refuse the request unless ``allowed``: 403 for a write on what the caller reads, else 404."""
    if allowed:
        return
    if request.method == "GET" or rule not in WRITES_OF_READABLE:
        raise NotFound()
    refuse_write(rule)


def refuse_write(rule: str, message: str = "the caller may read this but not change it") -> None:
    """Raise 403 ``forbidden`` for a write ``rule`` refuses, naming who may make it."""
    raise Forbidden(message, code="forbidden", details={"may_change": WRITES_OF_READABLE[rule]})


def owns(owner_id: uuid.UUID) -> bool:
    """True when the caller may change an object owned by ``owner_id``."""
    who = tenancy.principal()
    return who.is_admin or owner_id == who.user_id


def visible_owner() -> uuid.UUID | None:
    """Whose objects the caller's lists show: everyone's (None) for owners and admins, else their own."""
    who = tenancy.principal()
    return None if who.is_admin else who.user_id


def require_manages(role: str) -> None:
    """Refuse (422 ``role_not_allowed``) unless the caller may manage a member holding ``role``.

    Owners manage everyone, admins manage admins and members, members manage no one else:
    so only an owner makes, unmakes or acts for an owner.
    """
    who = tenancy.principal()
    if who.role == "owner" or (who.is_admin and role != "owner"):
        return
    raise Unprocessable(f"a {who.role} cannot manage a member with role {role!r}", code="role_not_allowed")
