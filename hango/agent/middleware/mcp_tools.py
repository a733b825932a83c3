"""The ``mcp`` tool source: the tools of the agent's attached MCP servers, read from their stored lists.

The run hook reads the attached servers with their stored tool lists (the chosen
subset, or all) in one query: assembling a request, inspect included, never talks
to a server. The model knows each tool as ``<server>__<tool>``, the inspector as the
part ``tool:<server>/<tool>``; attached means enabled, and an override excludes
one like any tool. Running one is ``tools/call`` on the server (``hango.mcp.calls``);
a try's scratch turn calls no server, since nothing a server does is undone.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

from hango.agent.middleware.base import Middleware
from hango.agent.parts import server_tool_name, server_tool_part
from hango.agent.state import AgentConfig, RunState, ServerTool
from hango.agent.tools.base import Tool, ToolContext, ToolFailure
from hango.audit import CALL_CANCELLED, CALL_ERROR, CALL_OK, MCP_SERVER_CALL
from hango.call_log import failed_call, host_of
from hango.mcp import calls, servers
from hango.mcp.connection import Limits
from hango.mcp.tool_lists import unavailable
from hango.messages import ToolDef
from hango.store import TenantStore

if TYPE_CHECKING:
    from hango.agent.deps import RunContext


def server_tools(attached: list[Any]) -> dict[str, ServerTool]:
    """The tools of ``attached`` servers (rows of ``McpServers.for_agent``) by the name the model calls;
    a tool hango cannot call (``tool_lists.unavailable``) is never among them, nor a second tool whose
    substitute name another tool of the server already has."""
    out: dict[str, ServerTool] = {}
    for server in attached:
        chosen = None if server.chosen is None else set(server.chosen)
        for tool, definition in zip(server.tools or [], _definitions(server), strict=True):
            if (chosen is None or tool["name"] in chosen) and unavailable(tool) is None:
                out.setdefault(definition.name, ServerTool(server, tool["name"], definition))
    return out


def unavailable_tools(attached: list[Any]) -> dict[str, tuple[tuple[str, str], ...]]:
    """By server, the chosen tools of ``attached`` servers that are never sent, each with why."""
    out: dict[str, tuple[tuple[str, str], ...]] = {}
    for server in attached:
        chosen = None if server.chosen is None else set(server.chosen)
        found = [
            (tool["name"], reason)
            for tool in server.tools or []
            if (chosen is None or tool["name"] in chosen) and (reason := unavailable(tool)) is not None
        ]
        if found:
            out[server.name] = tuple(found)
    return out


# A stored list's definitions, kept per (server, name, list hash) across requests: a definition keeps
# its token estimate and its ledger hash on itself (``MessageMemo``), so the same objects spare every
# later request of every agent the server serves from computing them again for each tool.
_DEFINITIONS: OrderedDict[tuple[Any, str, str | None], tuple[ToolDef, ...]] = OrderedDict()
_DEFINITIONS_LOCK = threading.Lock()
MAX_REMEMBERED_LISTS = 256  # tool lists a worker keeps (least recently used go first)


def _definitions(server: Any) -> tuple[ToolDef, ...]:
    """The definitions of ``server``'s stored tools, in order, as the model is sent them."""
    key = (server.id, server.name, server.tools_hash)
    with _DEFINITIONS_LOCK:
        found = _DEFINITIONS.get(key)
        if found is not None:
            _DEFINITIONS.move_to_end(key)
            return found
    made = tuple(
        ToolDef(
            server_tool_name(server.name, tool["name"]),
            tool["description"],
            tool["input_schema"],
            server_tool_part(server.name, tool["name"]),
        )
        for tool in server.tools or []
    )
    if server.tools_hash is None:  # a list without its hash is not one a key can name
        return made
    with _DEFINITIONS_LOCK:
        _DEFINITIONS[key] = made
        while len(_DEFINITIONS) > MAX_REMEMBERED_LISTS:
            _DEFINITIONS.popitem(last=False)
    return made


def call_server_tool(tool: ServerTool, arguments: dict[str, Any], ctx: ToolContext) -> str:
    """``tools/call`` on the tool's server within the call deadline and what the run has left; a cancel
    stops the wait. Every call is audited, however it ended."""
    config, server, state = ctx.deps.config, tool.server, ctx.state
    if state.mode.try_id:
        raise ToolFailure(f"a try does not call MCP servers (what {server.name!r} does would be real)")
    call = calls.ServerCall(
        (state.tenant_id, server.id), lambda: servers.target(server, config), tool.name, arguments
    )
    outcome, clock = CALL_CANCELLED, time.monotonic()
    try:
        with state.steps.server_call() as stop:
            answer = calls.call_tool(
                call, Limits.from_config(config), state.time_left(config.mcp_call_timeout), stop
            )
        outcome = CALL_ERROR if answer.is_error else CALL_OK
    finally:
        _audit(ctx, tool, outcome, int((time.monotonic() - clock) * 1000))
    if answer.failure is not None:
        host = "stdio" if server.url is None else host_of(server.url)
        failed_call("mcp", server.name, state.run_id, answer.failure, host=host, attempt=1)
    if answer.is_error:
        raise ToolFailure(answer.text)
    return answer.text


def _audit(ctx: ToolContext, tool: ServerTool, outcome: str, duration_ms: int) -> None:
    """The ``mcp_server.call`` row, in its own transaction: a call acted on the server even when its turn
    is rolled back. The server, the tool and how it ended; never the arguments or the answer."""
    state = ctx.state
    detail = {
        "server": tool.server.name,
        "tool": tool.name,
        "outcome": outcome,
        "duration_ms": duration_ms,
        "run_id": str(state.run_id),
        "session_id": str(state.session_id),
    }
    with ctx.deps.engine.begin() as conn:
        TenantStore(conn, state.tenant_id).audit.record(
            MCP_SERVER_CALL,
            "mcp_server",
            tool.server.id,
            actor_user_id=state.caller.user_id,
            api_key_id=state.caller.api_key_id,
            detail=detail,
        )


class McpToolsMiddleware(Middleware):
    name = "mcp"

    def before_run(self, state: RunState, ctx: RunContext) -> None:
        attached = ctx.store.mcp_servers.for_agent(state.agent.id)
        state.server_tools, state.unavailable_tools = server_tools(attached), unavailable_tools(attached)

    def tools(self, agent: AgentConfig, state: RunState) -> list[Tool]:
        return [
            Tool(tool.definition, lambda args, ctx, tool=tool: call_server_tool(tool, args, ctx))
            for tool in state.server_tools.values()
        ]
