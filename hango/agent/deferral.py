"""An agent's deferral: the tools it keeps out of a request until the model finds them with ``tool_search``.

A deferred tool is not sent; the model searches for it, and a tool it found is revealed (sent) for
the rest of the session (``revealed_tools``). The agent names what to defer by part id
(``hango.agent.parts``): a built-in ``tool:<name>``, an MCP server's tool ``tool:<server>/<tool>``,
or every tool of a server ``tool:<server>/*``. ``auto_percent`` defers every MCP server's tools
when their definitions together pass that share of the agent's context window; built-ins are never
deferred by it. ``native`` chooses the provider's own deferred loading where it has one
(Anthropic's ``defer_loading`` with its BM25 search tool): the deferred definitions are sent marked
deferred and the provider searches them; any other model keeps hango's ``tool_search``. Stored as
``agents.defer``: ``{"tools": [...], "auto_percent": int | null, "native": bool}``.
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
NATIVE_NEEDS_ANTHROPIC = "native_deferral_needs_anthropic"  # the code of a native deferral on another model
NATIVE_PROVIDER = "anthropic"  # the one provider with its own deferred loading hango speaks
MAX_DEFERRED = 1000  # entries of the explicit list: as many as a server may list tools
AUTO_PERCENT_RANGE = (1, 100)


@dataclass(frozen=True)
class Deferral:
    """What an agent defers: the parts it names (``tools``) and the auto threshold (``auto_percent``)."""

    tools: tuple[PartID, ...] = ()
    auto_percent: int | None = None
    native: bool = False  # the provider's own deferred loading and search, where the model's provider has one

    @classmethod
    def of(cls, stored: Mapping[str, Any] | None) -> Deferral:
        """The deferral of the stored JSON (``agents.defer``); missing, nothing is deferred."""
        if not stored:
            return NOTHING_DEFERRED
        return cls(tuple(stored.get("tools") or ()), stored.get("auto_percent"), bool(stored.get("native")))

    def as_dict(self) -> dict[str, Any]:
        """The stored (and API) shape: ``{"tools": [...], "auto_percent": int | null}``, with ``"native": true``
        when chosen (a deferral stored without it is hango's own; the API reads it as false)."""
        shape: dict[str, Any] = {"tools": list(self.tools), "auto_percent": self.auto_percent}
        return {**shape, "native": True} if self.native else shape

    def native_on(self, model: str) -> bool:
        """Whether a call of ``model`` (``<provider>/<model>``) defers natively: the agent chose it and
        the model's provider has deferred loading (Anthropic); otherwise hango's ``tool_search`` serves."""
        return self.native and model.partition("/")[0] == NATIVE_PROVIDER

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


def check_native(deferral: Deferral, model: str) -> None:
    """Refuse (422 ``native_deferral_needs_anthropic``) a native deferral for a model whose provider has
    no deferred loading hango speaks."""
    if deferral.native and not deferral.native_on(model):
        raise Unprocessable(
            f"defer.native needs an {NATIVE_PROVIDER}/ model (its tool search and defer_loading); "
            f"{model.partition('/')[0]!r} models use hango's own tool_search: set defer.native to false",
            code=NATIVE_NEEDS_ANTHROPIC,
        )


def check_parts(deferral: Deferral, parts: Iterable[PartID]) -> None:
    """``check_deferral`` on the tool ``parts`` of an agent (or of a try's call, ``Deferral.changed``)."""
    if deferral.tools and defers_everything(deferral, parts):
        raise Unprocessable(
            "defer.tools defers every tool of the agent: at least one tool must stay loaded "
            "(a request of deferred tools only is refused by the provider)",
            code=DEFERS_EVERYTHING,
        )
