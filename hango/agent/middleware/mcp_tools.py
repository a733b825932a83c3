"""The ``mcp`` tool source: the tools of the agent's attached MCP servers, read from their stored lists.

The run hook reads the attached servers and the tools chosen (a subset, or all) in one
query, and their stored tool lists only when the worker does not keep them already
(``stored_lists``): assembling a request, inspect included, never talks to a server. The model knows each tool as ``<server>__<tool>``, the inspector as the
part ``tool:<server>/<tool>``; attached means enabled, and an override excludes
one like any tool. Running one is ``tools/call`` on the server (``hango.mcp.calls``);
a try's scratch turn calls no server, since nothing a server does is undone.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hango.agent.estimator import MessageMemo
from hango.agent.middleware.base import Middleware
from hango.agent.parts import PartID, server_part, server_tool_name, server_tool_part
from hango.agent.state import AgentConfig, RunState
from hango.agent.tools.base import Tool, ToolContext, ToolFailure
from hango.audit import CALL_CANCELLED, CALL_ERROR, CALL_OK, MCP_SERVER_CALL
from hango.call_log import failed_call, host_of
from hango.mcp import calls, servers
from hango.mcp.connection import Limits, Stop
from hango.mcp.tool_lists import unavailable
from hango.messages import ToolDef
from hango.store import TenantStore
from hango.telemetry import names

if TYPE_CHECKING:
    from hango.agent.deps import RunContext


@dataclass(frozen=True)
class ServerTool:
    """One tool of an MCP server attached to the agent, as the server's stored list has it (a
    ``hango.agent.state.ServedTool``: its source is the server's part ``tool:<server>/*``)."""

    server: Any  # the ``mcp_servers`` row: where the server is (its sealed headers opened only to call it)
    name: str  # the tool's name on the server
    definition: ToolDef  # what the model sees: named ``<server>__<tool>``

    @property
    def source(self) -> PartID:
        return server_part(self.server.name)

    def answered_by(self) -> dict[str, str]:
        """The server (its name and id) and its tool: what the run's tool events keep of each call."""
        return {"server": self.server.name, "server_id": str(self.server.id), "server_tool": self.name}

    def span_attributes(self) -> dict[str, str]:
        """The same, as the tool call's span names them (``hango.mcp.*``)."""
        answered = self.answered_by()
        return {SPAN_ATTRIBUTES[key]: value for key, value in answered.items()}


# the span attribute of each thing a tool event says of the server that answered a call
SPAN_ATTRIBUTES = {
    "server": names.MCP_SERVER,
    "server_id": names.MCP_SERVER_ID,
    "server_tool": names.MCP_TOOL,
}


def server_tools(attached: list[Any], lists: dict[Any, Listed]) -> dict[str, ServerTool]:
    """The tools of ``attached`` servers (rows of ``McpServers.for_run``, their ``lists``) by the name the
    model calls; a tool hango cannot call (``tool_lists.unavailable``) is never among them, nor a second
    tool whose substitute name another tool of the server already has."""
    out: dict[str, ServerTool] = {}
    for server in attached:
        chosen = None if server.chosen is None else set(server.chosen)
        for name, definition in lists[server.id].callable:
            if chosen is None or name in chosen:
                out.setdefault(definition.name, ServerTool(server, name, definition))
    return out


def unavailable_tools(
    attached: list[Any], lists: dict[Any, Listed]
) -> dict[PartID, tuple[tuple[str, str], ...]]:
    """By source (each server's part ``tool:<server>/*``), the chosen tools of ``attached`` servers that
    are never sent, each with why."""
    out: dict[str, tuple[tuple[str, str], ...]] = {}
    for server in attached:
        chosen = None if server.chosen is None else set(server.chosen)
        found = [
            (name, why) for name, why in lists[server.id].unavailable if chosen is None or name in chosen
        ]
        if found:
            out[server_part(server.name)] = tuple(found)
    return out


@dataclass(frozen=True)
class Listed:
    """A stored tool list as runs use it: each tool hango can call (its name on the server and its
    definition, as the model is sent it), and each it never sends with why, in the list's order."""

    callable: tuple[tuple[str, ToolDef], ...] = ()
    unavailable: tuple[tuple[str, str], ...] = ()


# Stored lists as runs use them, kept per (server name, list hash) across requests, the two things its
# definitions are made of: a list is read and parsed once, and each definition keeps on itself what is
# computed from it (its token estimate, ledger hash and inspector view: ``MessageMemo``), so the same
# objects spare every later request of every agent the server serves from doing that again for each tool.
_LISTS: OrderedDict[tuple[str, str], Listed] = OrderedDict()
_LISTS_LOCK = threading.Lock()
MAX_REMEMBERED_LISTS = 256  # tool lists a worker keeps (least recently used go first)


def stored_lists(store: TenantStore, attached: list[Any]) -> dict[Any, Listed]:
    """By server id, the stored list of each of ``attached`` servers as runs use it: the lists the worker
    keeps, the others read (in one statement) and kept. A server with no list (or deleted since) has
    an empty one."""
    lists: dict[Any, Listed] = {}
    with _LISTS_LOCK:
        for server in attached:
            key = (server.name, server.tools_hash)
            if key in _LISTS:
                _LISTS.move_to_end(key)
                lists[server.id] = _LISTS[key]
    # a server never listed (no hash) has no list to read
    names = {s.id: s.name for s in attached if s.id not in lists and s.tools_hash is not None}
    if names:
        for row in store.mcp_servers.tool_lists(list(names)):
            lists[row.id] = _kept((names[row.id], row.tools_hash), _parsed(names[row.id], row.tools or []))
    return {server.id: lists.get(server.id, Listed()) for server in attached}


def _kept(key: tuple[str, str], listed: Listed) -> Listed:
    with _LISTS_LOCK:
        _LISTS[key] = listed
        while len(_LISTS) > MAX_REMEMBERED_LISTS:
            _LISTS.popitem(last=False)
    return listed


def _parsed(server: str, tools: list[dict[str, Any]]) -> Listed:
    callable, never = [], []
    for tool in tools:
        why = unavailable(tool)
        if why is not None:
            never.append((tool["name"], why))
            continue
        definition = ToolDef(
            server_tool_name(server, tool["name"]),
            tool["description"],
            tool["input_schema"],
            server_tool_part(server, tool["name"]),
        )
        callable.append((tool["name"], definition))
    return Listed(tuple(callable), tuple(never))


def call_server_tool(tool: ServerTool, arguments: dict[str, Any], ctx: ToolContext) -> str:
    """``tools/call`` on the tool's server within the call deadline and what the run has left; a cancel
    stops the wait. Every call is audited, however it ended."""
    config, server, state = ctx.deps.config, tool.server, ctx.state
    call = calls.ServerCall(
        (state.tenant_id, server.id), lambda: servers.target(server, config), tool.name, arguments
    )
    outcome, clock = CALL_CANCELLED, time.monotonic()
    try:
        stop = Stop()  # a cancel stops the request on the MCP loop, ending in ``Cancelled``
        with state.steps.watching(stop.stop, lambda: stop.stopped):
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
        attached = ctx.store.mcp_servers.for_run(state.agent.id)
        lists = stored_lists(ctx.store, attached)
        state.served_tools = server_tools(attached, lists)
        state.unavailable_tools = unavailable_tools(attached, lists)

    def tools(self, agent: AgentConfig, state: RunState) -> list[Tool]:
        """Each served tool's ``Tool``: a run's calls its server, a try's (the scratch source) refuses,
        since nothing a server does is undone."""
        source = _SCRATCH_TOOLS if state.mode.try_id else _TOOLS
        return source.each([tool.definition for tool in state.served_tools.values()], source.make)


class _Source(MessageMemo):
    """A definition's ``Tool`` as one source runs it, kept on the definition (one attribute per source)."""

    def __init__(self, call: Callable[[ServerTool, dict[str, Any], ToolContext], str]) -> None:
        super().__init__()
        self.call = call

    def make(self, definition: ToolDef) -> Tool:
        name = definition.name
        return Tool(definition, lambda args, ctx: self.call(ctx.state.served_tools[name], args, ctx))


def refuse_server_tool(tool: ServerTool, arguments: dict[str, Any], ctx: ToolContext) -> str:
    """The scratch source's call: a try calls no MCP server (what the server does would be real)."""
    raise ToolFailure(f"a try does not call MCP servers (what {tool.server.name!r} does would be real)")


_TOOLS = _Source(call_server_tool)  # a run's: ``tools/call`` on the server the run's state names
_SCRATCH_TOOLS = _Source(refuse_server_tool)  # a try's
