"""The closed set of audit actions; the ``audit_log`` check constraint enforces the same set."""

from __future__ import annotations

ACTIONS: tuple[str, ...] = (
    "tenant.bootstrap",
    "tenant.update",
    "member.create",
    "member.delete",
    "api_key.create",
    "api_key.update",
    "api_key.delete",
    "agent.create",
    "agent.update",
    "agent.delete",
    "memory.put",
    "memory.delete",
    "skill.create",
    "skill.update",
    "skill.delete",
    "session.create",
    "session.delete",
    "run.create",
    "context.override",
    "context.try",
    "session.compact",
    "run.cancel",
    "mcp_server.create",
    "mcp_server.delete",
    "mcp_server.refresh",
    "agent.mcp_attach",
    "agent.mcp_detach",
    "mcp_server.call",
)

MCP_SERVER_CALL = "mcp_server.call"  # one tools/call of a run: server, tool, outcome, never content
CALL_OK, CALL_ERROR, CALL_CANCELLED = "ok", "error", "cancelled"  # a call's ``outcome`` in its row


def is_action(action: str) -> bool:
    """True when ``action`` belongs to the closed set."""
    return action in ACTIONS
