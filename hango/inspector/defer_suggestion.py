"""The ``defer_server`` suggestion: an attached MCP server whose tools are all sent on every call.

Deferring the server (``tool:<server>/*`` added to the agent's ``defer.tools``) keeps its tools out of
the request until ``tool_search`` finds them. One suggestion per server whose tools are all sent (none
deferred, revealed, excluded or overridden), unless the agent's list names it already or deferring it
would leave none of the agent's tools loaded (``deferral.defers_everything``: the PATCH would be
refused). Its figures are the inspect answer's: ``tokens_saved`` the server group's ``tokens`` (measured
again in ``suggestion_savings.measured`` on the request with the deferral applied: less what
``tool_search``'s definition grows by, sent from then on when the agent deferred nothing yet), and
``cache_loss_tokens`` the group's (its first tool's, by the one cache model). ``calls`` counts the
history's ``tool_use`` blocks naming the server's tools, over ``answers`` assistant messages, so a
client weighs what a search before each use would cost. It is applied by
``PATCH /v1/agents/{agent_id}`` with the suggestion's ``apply`` body, not by an override (``target``
``defer``).
"""

from __future__ import annotations

import dataclasses

from hango.agent.deferral import TOOL_SEARCH, Deferral, defers_everything
from hango.agent.parts import server_part, tool_part
from hango.agent.state import RunState
from hango.inspector.inspection import Assembly
from hango.inspector.snapshot import PartView, Snapshot
from hango.inspector.suggestions import Suggestion, tools_by_server
from hango.messages import ToolUseBlock

KIND = "defer_server"
TARGET = "defer"  # applied by the agent PATCH's ``defer`` field, not by an override route


def deferred_with(deferral: Deferral, server: str) -> Deferral:
    """``deferral`` with every tool of ``server`` added to its explicit list."""
    return dataclasses.replace(deferral, tools=(*deferral.tools, server_part(server)))  # native and auto kept


def deferring(state: RunState, server: str) -> RunState:
    """``state`` as if its agent deferred ``server`` too: what ``measured`` captures the request of."""
    agent = dataclasses.replace(state.agent, defer=deferred_with(state.agent.defer, server))
    return dataclasses.replace(state, agent=agent)


def defer_servers(assembly: Assembly, snapshot: Snapshot) -> list[Suggestion]:
    """A ``defer_server`` suggestion for each attached server whose tools are all sent, with how often the
    history called them."""
    state = assembly.state
    deferral = state.agent.defer
    by_server = tools_by_server(snapshot.tools)
    parts = [v.id for views in by_server.values() for v in views if v.id != tool_part(TOOL_SEARCH)]
    toolset = assembly.draft.report.toolset
    named = {toolset.part(t.name): t.name for t in assembly.draft.tools}  # the name the model calls each by
    history = [m.message for m in assembly.captured.messages]
    answers = sum(1 for m in history if m.role == "assistant")
    out = []
    for server, views in by_server.items():
        if server is None or not _all_sent(views, deferral) or state.overrides.get(server_part(server)):
            continue
        wanted = deferred_with(deferral, server)
        if defers_everything(wanted, parts):
            continue
        names = {named[v.id] for v in views}
        calls = sum(1 for m in history for b in m.content if isinstance(b, ToolUseBlock) and b.name in names)
        tokens = sum(v.tokens for v in views)
        reason = (
            f"server `{server}`: {len(views)} tool{'s' * (len(views) != 1)}, {tokens:,} tokens sent on every "
            f"call; called {calls} time{'s' * (calls != 1)} in the last {answers} answers. Deferred, they "
            "are sent only once tool_search finds them"
        )
        loss = max(v.cache_loss_tokens for v in views)  # the server group's figure: its first tool's
        part = server_part(server)
        apply = {"defer": wanted.as_dict()}
        out.append(
            Suggestion(KIND, [part], tokens, loss, TARGET, reason, calls=calls, answers=answers, apply=apply)
        )
    return out


def _all_sent(views: list[PartView], deferral: Deferral) -> bool:
    """Every tool of the server is sent as it is, and the agent's list names none of them."""
    return all(
        v.included and not v.deferred and v.override is None and not deferral.names_part(v.id) for v in views
    )
