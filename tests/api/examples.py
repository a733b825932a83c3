"""One example request per route of ``hango.authz.TABLE``: the isolation, audit and bad-input tables.

Paths and bodies name the objects of ``tests.support.world.World`` as ``{agent}``, ``{session}``...
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hango.authz import AGENT, MCP_SERVER, SESSION, TABLE


@dataclass(frozen=True)
class Example:
    method: str
    rule: str
    path: str
    ok: int
    body: Any = None
    action: str | None = None
    stranger: int | None = None
    shows: str | None = None
    paged: str | None = None
    bad: dict[str, Any] = field(default_factory=dict)

    @property
    def id(self) -> str:
        return f"{self.method} {self.rule}"

    @property
    def has_object(self) -> bool:
        """True when the path names an object (so other tenants get 404)."""
        return "<" in self.rule

    def for_world(self, values: dict[str, str]) -> tuple[str, Any]:
        """The concrete path and body for one world's ids."""
        return self.path.format(**values), fill(self.body, values)


def fill(body: Any, values: dict[str, str]) -> Any:
    """``body`` with the world's ids put in for its placeholders."""
    if isinstance(body, str):
        return body.format(**values)
    if isinstance(body, dict):
        return {k: fill(v, values) for k, v in body.items()}
    if isinstance(body, list):
        return [fill(v, values) for v in body]
    return body


HUGE = 10**30

EXAMPLES = [
    Example("GET", "/v1/me", "/v1/me", 200),
    Example("GET", "/v1/tenant", "/v1/tenant", 200),
    Example(
        "PATCH",
        "/v1/tenant",
        "/v1/tenant",
        200,
        {"name": "Acme Renamed"},
        action="tenant.update",
        bad={"wrong_type": {"trace_llm_content": "maybe"}, "out_of_range": {"token_quota": -1}},
    ),
    Example("GET", "/v1/members", "/v1/members", 200, shows="{user}", paged="cursor"),
    Example(
        "POST",
        "/v1/members",
        "/v1/members",
        201,
        {"email": "new@acme.test", "role": "member"},
        action="member.create",
        bad={"wrong_type": {"email": 7}, "out_of_range": {"email": "new@acme.test", "role": "god"}},
    ),
    Example("DELETE", "/v1/members/<uuid:user_id>", "/v1/members/{user}", 204, action="member.delete"),
    Example("GET", "/v1/api-keys", "/v1/api-keys", 200, shows="{key}", paged="cursor"),
    Example(
        "POST",
        "/v1/api-keys",
        "/v1/api-keys",
        201,
        {"name": "ci"},
        action="api_key.create",
        bad={"wrong_type": {"name": ["ci"]}, "out_of_range": {"name": "x" * 201}},
    ),
    Example(
        "PATCH",
        "/v1/api-keys/<uuid:key_id>",
        "/v1/api-keys/{key}",
        200,
        {"name": "renamed"},
        action="api_key.update",
        bad={"wrong_type": {"rate_limit_per_minute": "fast"}, "out_of_range": {"rate_limit_per_minute": 0}},
    ),
    Example("DELETE", "/v1/api-keys/<uuid:key_id>", "/v1/api-keys/{key}", 204, action="api_key.delete"),
    Example("GET", "/v1/agents", "/v1/agents", 200, shows="{agent}", paged="cursor"),
    Example(
        "POST",
        "/v1/agents",
        "/v1/agents",
        201,
        {"name": "helper 2"},
        action="agent.create",
        bad={
            "wrong_type": {"name": "a", "tools": "grep"},
            "out_of_range": {"name": "a", "context_window": 1},
        },
    ),
    Example("GET", AGENT, "/v1/agents/{agent}", 200, shows="{agent}"),
    Example(
        "PATCH",
        AGENT,
        "/v1/agents/{agent}",
        200,
        {"system_prompt": "Be brief."},
        action="agent.update",
        bad={"wrong_type": {"settings": []}, "out_of_range": {"context_window": HUGE}},
    ),
    Example("DELETE", AGENT, "/v1/agents/{agent}", 204, action="agent.delete"),
    Example(
        "GET",
        f"{AGENT}/memory",
        "/v1/agents/{agent}/memory",
        200,
        shows="/memories/AGENTS.md",
        paged="cursor",
    ),
    Example("GET", f"{AGENT}/memory/<path:path>", "/v1/agents/{agent}/memory/AGENTS.md", 200),
    Example(
        "PUT",
        f"{AGENT}/memory/<path:path>",
        "/v1/agents/{agent}/memory/NOTES.md",
        200,
        {"content": "a new note"},
        action="memory.put",
        bad={"wrong_type": {"content": 42}, "out_of_range": {"content": "x" * 100_001}},
    ),
    Example(
        "DELETE",
        f"{AGENT}/memory/<path:path>",
        "/v1/agents/{agent}/memory/AGENTS.md",
        204,
        action="memory.delete",
    ),
    Example("GET", f"{AGENT}/skills", "/v1/agents/{agent}/skills", 200, shows="{skill}", paged="cursor"),
    Example(
        "POST",
        f"{AGENT}/skills",
        "/v1/agents/{agent}/skills",
        201,
        {"name": "triage", "body": "sort the inbox", "allowed_tools": ["grep"]},
        action="skill.create",
        bad={
            "wrong_type": {"name": "triage", "allowed_tools": "grep"},
            "out_of_range": {"name": "Not A Name", "allowed_tools": ["rm_rf"]},
        },
    ),
    Example("GET", f"{AGENT}/skills/<string:name>", "/v1/agents/{agent}/skills/review", 200, shows="{skill}"),
    Example(
        "PUT",
        f"{AGENT}/skills/<string:name>",
        "/v1/agents/{agent}/skills/review",
        200,
        {"description": "review carefully", "body": "step 1: read it twice"},
        action="skill.update",
        bad={"wrong_type": {"body": {"text": "x"}}, "out_of_range": {"description": "x" * 1001}},
    ),
    Example(
        "DELETE",
        f"{AGENT}/skills/<string:name>",
        "/v1/agents/{agent}/skills/review",
        204,
        action="skill.delete",
    ),
    Example("GET", "/v1/sessions", "/v1/sessions", 200, shows="{session}", paged="cursor"),
    Example(
        "POST",
        "/v1/sessions",
        "/v1/sessions",
        201,
        {"agent_id": "{agent}", "title": "mine"},
        action="session.create",
        stranger=422,
        bad={
            "wrong_type": {"agent_id": "not-a-uuid"},
            "out_of_range": {"agent_id": "{agent}", "title": "x" * 201},
        },
    ),
    Example("GET", SESSION, "/v1/sessions/{session}", 200, shows="{session}"),
    Example("DELETE", SESSION, "/v1/sessions/{session}", 204, action="session.delete"),
    Example(
        "GET",
        f"{SESSION}/messages",
        "/v1/sessions/{session}/messages",
        200,
        shows="{message}",
        paged="after_seq",
    ),
    Example(
        "POST",
        f"{SESSION}/messages",
        "/v1/sessions/{session}/messages",
        202,
        {"content": "hello again"},
        action="run.create",
        bad={"wrong_type": {"content": 5}, "out_of_range": {"content": ""}},
    ),
    Example("GET", f"{SESSION}/runs", "/v1/sessions/{session}/runs", 200, shows="{run}", paged="cursor"),
    Example("GET", "/v1/runs/<uuid:run_id>", "/v1/runs/{run}", 200, shows="{run}"),
    Example("GET", "/v1/runs/<uuid:run_id>/events", "/v1/runs/{run}/events", 200),
    Example(
        "POST",
        "/v1/runs/<uuid:run_id>/cancel",
        "/v1/runs/{queued_run}/cancel",
        202,
        {"reason": "sent too soon"},
        action="run.cancel",
        shows="{queued_run}",
        bad={"wrong_type": {"reason": 5}, "out_of_range": {"reason": "x" * 201}},
    ),
    Example("GET", f"{SESSION}/context", "/v1/sessions/{session}/context", 200, shows="{session}"),
    Example("GET", f"{SESSION}/calls", "/v1/sessions/{session}/calls", 200, shows="{call}", paged="cursor"),
    Example(
        "GET", f"{SESSION}/calls/<uuid:call_id>", "/v1/sessions/{session}/calls/{call}", 200, shows="{call}"
    ),
    Example("GET", f"{SESSION}/context/diff", "/v1/sessions/{session}/context/diff", 200, shows="{call}"),
    Example("GET", f"{SESSION}/cost", "/v1/sessions/{session}/cost", 200, shows="offline/echo"),
    Example(
        "POST",
        f"{SESSION}/context/try",
        "/v1/sessions/{session}/context/try",
        200,
        {"exclude": ["message:2"], "message": "and now?"},
        action="context.try",
        bad={"wrong_type": {"exclude": "message:2"}, "out_of_range": {"message": ""}},
    ),
    Example(
        "POST",
        f"{SESSION}/context/preview",
        "/v1/sessions/{session}/context/preview",
        200,
        {"session": {"overrides": [{"part": "message:2", "action": "exclude"}]}},
        bad={
            "wrong_type": {"session": {"overrides": "message:2"}},
            "out_of_range": {"session": {"overrides": [{"part": "message:2", "action": "delete"}]}},
        },
    ),
    Example(
        "POST",
        f"{SESSION}/context/save",
        "/v1/sessions/{session}/context/save",
        200,
        {"session": {"overrides": [{"part": "message:2", "action": "exclude"}]}},
        action="context.override",
        bad={
            "wrong_type": {"session": {"overrides": "message:2"}},
            "out_of_range": {"session": {"overrides": [{"part": "message:2", "action": "delete"}]}},
        },
    ),
    Example(
        "GET",
        f"{SESSION}/context/suggestions",
        "/v1/sessions/{session}/context/suggestions",
        200,
        shows="{session}",
    ),
    Example(
        "POST",
        f"{SESSION}/compact",
        "/v1/sessions/{session}/compact",
        202,
        {"instructions": "keep the decisions"},
        action="session.compact",
        bad={"wrong_type": {"instructions": 5}, "out_of_range": {"instructions": "x" * 2_001}},
    ),
    Example("GET", f"{SESSION}/context-overrides", "/v1/sessions/{session}/context-overrides", 200),
    Example(
        "PUT",
        f"{SESSION}/context-overrides",
        "/v1/sessions/{session}/context-overrides",
        200,
        {"overrides": [{"part": "message:2", "action": "exclude"}]},
        action="context.override",
        bad={
            "wrong_type": {"overrides": "message:2"},
            "out_of_range": {"overrides": [{"part": "message:2", "action": "delete"}]},
        },
    ),
    Example("GET", f"{AGENT}/context-overrides", "/v1/agents/{agent}/context-overrides", 200),
    Example(
        "PUT",
        f"{AGENT}/context-overrides",
        "/v1/agents/{agent}/context-overrides",
        200,
        {"overrides": [{"part": "tool:grep", "action": "exclude"}]},
        action="context.override",
        bad={
            "wrong_type": {"overrides": [{"part": 7, "action": "exclude"}]},
            "out_of_range": {"overrides": [{"part": "x" * 521, "action": "exclude"}]},
        },
    ),
    Example("GET", "/v1/mcp-servers", "/v1/mcp-servers", 200, shows="{mcp_server}", paged="cursor"),
    Example(
        "POST",
        "/v1/mcp-servers",
        "/v1/mcp-servers",
        201,
        {"name": "clock", "catalog": "time"},
        action="mcp_server.create",
        bad={
            "wrong_type": {"name": 7, "catalog": "time"},
            "out_of_range": {"name": "c" * 33, "catalog": "time"},
        },
    ),
    Example("GET", MCP_SERVER, "/v1/mcp-servers/{mcp_server}", 200, shows="{mcp_server}"),
    Example("DELETE", MCP_SERVER, "/v1/mcp-servers/{mcp_server}", 204, action="mcp_server.delete"),
    Example(
        "POST",
        f"{MCP_SERVER}/refresh",
        "/v1/mcp-servers/{mcp_server}/refresh",
        200,
        {"reason": "the server was upgraded"},
        action="mcp_server.refresh",
        bad={"wrong_type": {"reason": 7}, "out_of_range": {"reason": ""}},
    ),
    Example("GET", f"{AGENT}/mcp-servers", "/v1/agents/{agent}/mcp-servers", 200, shows="{mcp_server}"),
    Example(
        "PUT",
        f"{AGENT}/mcp-servers/<uuid:server_id>",
        "/v1/agents/{agent}/mcp-servers/{mcp_server}",
        200,
        {"tools": ["get_current_time"]},
        action="agent.mcp_attach",
        bad={"wrong_type": {"tools": "get_current_time"}, "out_of_range": {"tools": [""]}},
    ),
    Example(
        "DELETE",
        f"{AGENT}/mcp-servers/<uuid:server_id>",
        "/v1/agents/{agent}/mcp-servers/{mcp_server}",
        204,
        action="agent.mcp_detach",
    ),
    Example("GET", "/v1/usage", "/v1/usage", 200),
    Example("GET", "/v1/audit", "/v1/audit", 200, paged="cursor"),
]

BY_ROUTE = {(e.method, e.rule): e for e in EXAMPLES}


def route_id(route: tuple[str, str]) -> str:
    """A test id for a ``(method, rule)`` route."""
    return f"{route[0]} {route[1]}"


API_ROUTES = sorted(key for key in TABLE if key[1].startswith("/v1/"))
# A POST that only reads: the preview takes its proposed sets as a body, and writes nothing.
READING_POSTS = {("POST", f"{SESSION}/context/preview")}
WRITE_ROUTES = [key for key in API_ROUTES if key[0] != "GET" and key not in READING_POSTS]
BODY_ROUTES = [key for key in API_ROUTES if key[0] in ("POST", "PUT", "PATCH")]
PAGED_ROUTES = [e for e in EXAMPLES if e.paged]
