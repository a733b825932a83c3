"""Inspect's tools by where they come from: the built-in tools, then each attached MCP server's, each with
its subtotal.

A server's group stands for its part ``tool:<server>/*``: an exclusion of it leaves out every tool the
server's stored list holds at each call, so it stays right when a refresh changes the list (a tool it
gains is left out too; one it drops is simply gone). Its tools then show ``excluded_by`` that part. A
group's figures are the estimates of its tool parts: ``tokens_before`` every tool of it, ``tokens`` those
sent, ``deferred_tokens`` those deferred (what deferring saves each call); ``cache_loss_tokens`` prices a change at its first tool, as each part's is priced.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hango.agent.overrides import Overrides
from hango.agent.parts import PartID, server_part, tool_server
from hango.inspector.snapshot import PartView
from hango.mcp.tool_lists import UNAVAILABLE

BUILT_IN = "built-in"


@dataclass
class ToolGroup:
    """One source of tools as inspect shows it: the built-in tools (``server`` None) or one MCP server."""

    server: str | None
    part: PartID | None  # ``tool:<server>/*``: the part an override of the whole server names
    label: str
    tools: int  # the tools it gives the next call, sent or not
    sent: int
    tokens_before: int
    tokens: int
    override: str | None
    stale: bool  # an override of a server that gives the call no tool now (detached, or its list empty)
    cached_prefix: bool
    cache_loss_tokens: int
    deferred: int = 0  # of its tools, the deferred ones ``tool_search`` has not revealed (not sent)
    deferred_tokens: int = 0  # their estimates: what deferring them saves every call
    # the server's chosen tools hango never sends: {"tool", "reason", "why"} each (``tool_lists.UNAVAILABLE``)
    unavailable: list[dict[str, str]] = field(default_factory=list)


def tool_groups(
    views: list[PartView], overrides: Overrides, unavailable: dict[PartID, tuple[tuple[str, str], ...]]
) -> list[ToolGroup]:
    """The groups of inspect's tool ``views``: the built-in one first (when the agent has built-in tools),
    then the servers in the order their tools are sent, then a server none of whose tools can be sent;
    each server's ``unavailable`` tools (``RunState.unavailable_tools``, by the server's part) named with
    why."""
    members: dict[str | None, list[PartView]] = {}
    if any(v.server is None for v in views):
        members[None] = []
    for view in views:
        members.setdefault(view.server, []).append(view)
    for source in unavailable:
        members.setdefault(tool_server(source), [])
    groups = [_group(server, found, overrides) for server, found in members.items()]
    for group in groups:
        listed = () if group.part is None else unavailable.get(group.part, ())
        group.unavailable = [{"tool": t, "reason": r, "why": UNAVAILABLE[r]} for t, r in listed]
    return groups


def _group(server: str | None, views: list[PartView], overrides: Overrides) -> ToolGroup:
    part = None if server is None else server_part(server)
    override = None if part is None else overrides.get(part)
    count = sent = tokens_before = tokens = cache_loss = deferred = deferred_tokens = 0
    cached = False
    for view in views:  # one pass: a server's group holds all its tools
        if view.stale:  # a stale view is an override's, of a part absent now
            continue
        count += 1
        tokens_before += view.tokens if view.original_tokens is None else view.original_tokens
        if view.included:
            sent += 1
            tokens += view.tokens
        elif view.deferred:
            deferred += 1
            deferred_tokens += view.tokens
        cached = cached or view.cached_prefix
        cache_loss = max(cache_loss, view.cache_loss_tokens)
    return ToolGroup(
        server=server,
        part=part,
        label=BUILT_IN if server is None else f"server {server}",
        tools=count,
        sent=sent,
        tokens_before=tokens_before,
        tokens=tokens,
        override=None if override is None else override.action,
        stale=override is not None and not count,
        cached_prefix=cached,
        # a change costs less the later it comes: the group's price is its first tool's
        cache_loss_tokens=cache_loss,
        deferred=deferred,
        deferred_tokens=deferred_tokens,
    )
