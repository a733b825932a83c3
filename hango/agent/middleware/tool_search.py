"""The tool_search slot: hango's own search over the agent's deferred tools, on every provider.

A deferred tool (``hango.agent.toolset``) is not sent; the model finds it with
``tool_search``, whose definition names where the deferred tools come from. The
search ranks the deferred tools not revealed yet (``hango.tool_search``) and
reveals the best few for the rest of the session: stored with the seq of the
answer that asked (``revealed_tools``), so the next call sends them, after the
tools sent from the start. A try's search reveals in the try's state only (its
source stores nothing), like every other thing a try does.

With a native deferral the provider searches (``hango.agent.toolset``): the tools
its search result references (``hango.messages.referenced_tools``) are revealed
the same way once the answer is kept (``reveal_referenced``), so the answer's own
call of one runs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from hango.agent.middleware.base import Middleware
from hango.agent.parts import PartID, tool_server
from hango.agent.state import AgentConfig, RunState
from hango.agent.tools.base import Tool, ToolContext, ToolFailure
from hango.agent.toolset import TOOL_SEARCH, Toolset, toolset_of
from hango.messages import Message, ToolDef, referenced_tools
from hango.tool_search import MAX_LIMIT, BadSearch, SearchableTool, ToolIndex

if TYPE_CHECKING:
    from hango.agent.deps import RunContext

FOUND = 5  # the tools one search reveals unless the model asks for another number
_DESCRIPTION = (
    "Search the tools that are not loaded yet ({where}). Give a few words saying what you want to do, "
    "or a regular expression over tool names and descriptions. The best matches are loaded for the rest "
    "of the session: call them by name from your next answer on."
)
_SCHEMA = {
    "type": "object",
    "properties": {
        "query": {"type": "string", "description": "what the tool should do, in a few words, or a regex"},
        "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "description": f"at most {FOUND}"},
    },
    "required": ["query"],
}


class ToolSearchMiddleware(Middleware):
    name = "tool_search"

    def before_run(self, state: RunState, ctx: RunContext) -> None:
        if state.agent.defer and state.session_id is not None:
            revealed = ctx.store.revealed_tools.for_session(state.session_id)
            state.revealed = {tool.name: tool.seq for tool in revealed}

    def tools(self, agent: AgentConfig, state: RunState) -> list[Tool]:
        """``tool_search`` when the agent defers anything (the toolset enables it then): a run's reveals
        are stored, a try's stay in its state."""
        if not agent.defer or agent.defer.native_on(agent.model):  # a native deferral: the provider's search
            return []
        reveal = _reveal_in_state if state.mode.try_id else _reveal_stored
        return [Tool(search_definition(toolset_of(agent, state)), _searching(reveal))]


def search_definition(tools: Toolset) -> ToolDef:
    """``tool_search``'s definition: it names the deferred tools' servers (and how many built-ins), which
    the agent's deferral alone decides, so it changes only when that does."""
    deferring = sorted({*tools.deferred, *tools.revealed})
    servers = sorted({s for s in (tool_server(tools.part(n)) for n in deferring) if s is not None})
    built_in = sum(1 for name in deferring if name not in tools.served)
    where = (
        [f"the tools of the MCP server{'s' if len(servers) > 1 else ''} {', '.join(servers)}"]
        if servers
        else []
    )
    where += [f"{built_in} built-in tool{'s' if built_in > 1 else ''}"] if built_in else []
    return _definition(_DESCRIPTION.format(where="; ".join(where) or "none now"))


_DEFINITIONS: dict[str, ToolDef] = {}


def _definition(description: str) -> ToolDef:
    """One definition per description, kept: the estimator and the ledger remember a definition by identity."""
    found = _DEFINITIONS.get(description)
    if found is None:
        found = _DEFINITIONS.setdefault(description, ToolDef(TOOL_SEARCH, description, _SCHEMA))
    return found


Reveal = Callable[[ToolContext, list[tuple[PartID, str]], int], None]


def reveal_referenced(ctx: ToolContext, answer: Message) -> None:
    """Reveal the deferred tools the provider's own search referenced in ``answer`` (kept last in the
    history): stored for a run, in the state for a try, as hango's search reveals."""
    names = referenced_tools((answer,))
    if not names:
        return
    state = ctx.state
    tools = toolset_of(state.agent, state)
    found = [(tools.part(name), name) for name in sorted(names & tools.deferred)]
    if found:
        reveal = _reveal_in_state if state.mode.try_id else _reveal_stored
        reveal(ctx, found, _asking_seq(state))


def _searching(reveal: Reveal) -> Callable[[dict[str, Any], ToolContext], str]:
    def search(arguments: dict[str, Any], ctx: ToolContext) -> str:
        state = ctx.state
        tools = toolset_of(state.agent, state)
        hidden = tools.deferred_of(tool.definition for tool in ctx.chain.tools(state).values())
        if not hidden:
            return "Every deferred tool is loaded already: call it by name."
        catalog = [_searchable(definition, tools) for definition in hidden]
        try:
            found = ToolIndex.of(catalog).search(arguments.get("query", ""), arguments.get("limit", FOUND))
        except BadSearch as exc:
            raise ToolFailure(str(exc)) from None
        if not found:
            return "No deferred tool fits that query; try other words (what the tool does, or its object)."
        reveal(ctx, [(f.tool.part, f.tool.name) for f in found], _asking_seq(state))
        lines = [f"- {f.tool.name}: {_first_line(f.tool.description)}" for f in found]
        return "Loaded for the rest of the session (call them from your next answer):\n" + "\n".join(lines)

    return search


def _searchable(definition: ToolDef, tools: Toolset) -> SearchableTool:
    part = tools.part(definition.name)
    return SearchableTool.of(
        definition.name, definition.description, definition.input_schema, part=part, server=tool_server(part)
    )


def _asking_seq(state: RunState) -> int:
    """The seq of the answer whose call is running: the last message kept (the turn keeps it first)."""
    return state.history[-1].seq if state.history else state.stored_seq


def _reveal_stored(ctx: ToolContext, found: list[tuple[PartID, str]], seq: int) -> None:
    """A run's reveal: stored with the turn (a first reveal keeps its seq), and in the run's state."""
    state = ctx.state
    added = ctx.store.revealed_tools.reveal(state.session_id, found, seq)
    state.revealed.update({tool.name: tool.seq for tool in added})


def _reveal_in_state(ctx: ToolContext, found: list[tuple[PartID, str]], seq: int) -> None:
    """A try's reveal: its state only (the session's revealed set is unchanged)."""
    for _part, name in found:
        ctx.state.revealed.setdefault(name, seq)


def _first_line(text: str) -> str:
    line = text.strip().split("\n", 1)[0]
    return line if len(line) <= 200 else line[:199] + "…"
