"""An agent's deferral: the tools it keeps out of a request until the model finds them with ``tool_search``.

A deferred tool is not sent; the model searches for it, and a tool it found is revealed (sent) for
the rest of the session (``revealed_tools``). The agent names what to defer by part id
(``hango.agent.parts``): a built-in ``tool:<name>``, an MCP server's tool ``tool:<server>/<tool>``,
or every tool of a server ``tool:<server>/*``. ``auto_percent`` defers every MCP server's tools
when their definitions together pass that share of the agent's context window; built-ins are never
deferred by it. Stored as ``agents.defer``: ``{"tools": [...], "auto_percent": int | null}``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from functools import cached_property
from typing import Any

from hango.agent.parts import PartID, covering_parts, is_server_part, server_tool_part, tool_part, tool_server
from hango.errors import Unprocessable

TOOL_SEARCH = (
    "tool_search"  # hango's own search over the deferred tools (``hango.agent.middleware.tool_search``)
)
DEFERS_EVERYTHING = "defers_every_tool"  # the code of a deferral refused for leaving no tool loaded
MAX_DEFERRED = 1000  # entries of the explicit list: as many as a server may list tools
AUTO_PERCENT_RANGE = (1, 100)


@dataclass(frozen=True)
class Deferral:
    """What an agent defers: the parts it names (``tools``) and the auto threshold (``auto_percent``)."""

    tools: tuple[PartID, ...] = ()
    auto_percent: int | None = None

    @classmethod
    def of(cls, stored: Mapping[str, Any] | None) -> Deferral:
        """The deferral of the stored JSON (``agents.defer``); missing, nothing is deferred."""
        if not stored:
            return NOTHING_DEFERRED
        return cls(tuple(stored.get("tools") or ()), stored.get("auto_percent"))

    def as_dict(self) -> dict[str, Any]:
        """The stored (and API) shape: ``{"tools": [...], "auto_percent": int | null}``."""
        return {"tools": list(self.tools), "auto_percent": self.auto_percent}

    def __bool__(self) -> bool:
        return bool(self.tools) or self.auto_percent is not None

    def changed(
        self, defer: Iterable[PartID], undefer: Iterable[PartID], parts: Iterable[PartID]
    ) -> Deferral:
        """This deferral with ``defer`` added to its list and ``undefer`` taken off (an entry it names, or for
        a server part every entry of that server; ``auto_percent`` stays), for an agent whose tools are
        ``parts``: 422 for an ``undefer`` not in the list, or a list that defers every tool."""
        taken = {
            u: [p for p in self.tools if p == u or (is_server_part(u) and tool_server(p) == tool_server(u))]
            for u in undefer
        }
        missing = [u for u, found in taken.items() if not found]
        if missing:
            raise Unprocessable(f"{missing[0]} is not in the agent's defer list", code="not_deferred")
        kept = [p for p in self.tools if not any(p in found for found in taken.values())]
        deferral = replace(self, tools=tuple(dict.fromkeys([*kept, *defer])))
        check_parts(deferral, parts)
        return deferral

    def names_part(self, part: PartID, source: PartID | None = None) -> bool:
        """Whether the explicit list defers ``part``: it names the part or, for an MCP server's tool,
        its whole server (``covering_parts``, the one matcher overrides use too). ``source``: the
        server's part when the caller holds it already (a toolset asks about every tool of a call)."""
        listed = self.listed
        if source is not None:
            return part in listed or source in listed
        return any(target in listed for target in covering_parts(part))

    @cached_property
    def listed(self) -> frozenset[PartID]:
        """The explicit list as a set: a toolset asks about every tool of every call."""
        return frozenset(self.tools)


NOTHING_DEFERRED = Deferral()


def defers_everything(deferral: Deferral, parts: Iterable[PartID]) -> bool:
    """Whether the explicit list would leave none of ``parts`` (an agent's tools) loaded; False for none."""
    parts = list(parts)
    return bool(parts) and all(deferral.names_part(part) for part in parts)


def agent_tool_parts(builtins: Iterable[str], attached: Iterable[tuple[str, str]]) -> list[PartID]:
    """The parts of an agent's tools: its ``builtins`` and its attached servers' (``(server, tool)`` each)."""
    return [*map(tool_part, builtins), *(server_tool_part(server, tool) for server, tool in attached)]


def check_deferral(deferral: Deferral, builtins: Iterable[str], attached: Iterable[tuple[str, str]]) -> None:
    """Refuse (422 ``defers_every_tool``) a deferral whose explicit list leaves none of the agent's tools
    loaded: a request offering deferred tools only is one the provider refuses (Anthropic: 400)."""
    check_parts(deferral, agent_tool_parts(builtins, attached))


def check_parts(deferral: Deferral, parts: Iterable[PartID]) -> None:
    """``check_deferral`` on the tool ``parts`` of an agent (or of a try's call, ``Deferral.changed``)."""
    if deferral.tools and defers_everything(deferral, parts):
        raise Unprocessable(
            "defer.tools defers every tool of the agent: at least one tool must stay loaded "
            "(a request of deferred tools only is refused by the provider)",
            code=DEFERS_EVERYTHING,
        )
