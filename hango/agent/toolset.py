"""The toolset: one frozen value per call of the tools the call may carry, where each comes from, and its state.

Tools come from sources: the built-ins the agent enables (``agent.tools``), the
names its skills' ``allowed_tools`` add, the subagent's ``task``, and each tool
source serving tools of its own (``hango.agent.state.ServedTool``: each MCP server's,
loaded by its source's run hook). A tool is enabled when one of those sources enables it, and
sent when it is enabled and no override leaves it out (its own, or its server's
as a whole). Every reader of what a call carries reads this one rule: the
allowlist slot, the contributors whose text names a tool, compaction's summarizer
call, and the run's dispatch of a tool call (only a sent tool runs, through the
``Tool`` its source made: a try's sources make tools that call no server).

An agent may **defer** tools (``AgentConfig.defer``: listed tools or servers, or every server's
tools once their definitions pass a share of the context window): a deferred tool is enabled
but not sent until hango's ``tool_search`` (one more source, enabled while anything is deferred)
reveals it for the rest of the session (``RunState.revealed``). Revealed tools are sent after
the tools sent from the start, in the order they were revealed, so a reveal keeps the cached
prefix of the tools before it.

With a native deferral on a provider that has deferred loading (``Deferral.native_on``: Anthropic)
the deferred tools are *sent deferred* instead of left out: every deferring tool's definition goes
after the loaded ones marked deferred, with the provider's own search and no ``tool_search``; the
provider's search result references the tools it loads, and those are revealed as hango's search
reveals them (the figures: a deferred tool is no input until referenced).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property

from hango.agent.deferral import TOOL_SEARCH
from hango.agent.estimator import estimate_tool
from hango.agent.overrides import Overrides
from hango.agent.parts import PartID, covering_parts, part_of, tool_part
from hango.agent.state import AgentConfig, RunState, ServedTool
from hango.messages import ToolDef

AGENT = "agent"  # the source of the built-ins the agent enables by name
SKILLS = "skills"  # the source of the names a skill's ``allowed_tools`` enables


@dataclass(frozen=True)
class ToolState:
    """One tool of a call: its part, its source, whether a source enables it (the allowlist), and the
    override that leaves it out (None when it is sent, or was never enabled)."""

    name: str
    part: PartID
    source: str
    enabled: bool
    excluded_by: PartID | None = None
    deferred: bool = False  # deferred and not revealed yet: ``tool_search`` finds it
    revealed_at: int | None = None  # the seq of the answer whose ``tool_search`` call revealed it

    @property
    def sent(self) -> bool:
        return self.enabled and self.excluded_by is None and not self.deferred


@dataclass(frozen=True)
class Toolset:
    """The tools one call may carry (``enabled``) and sends (``sent``), by the name the model calls."""

    enabled: frozenset[str]
    sent: frozenset[str]
    served: Mapping[str, ServedTool]
    overrides: Overrides
    skills: frozenset[str] = frozenset()
    deferred: frozenset[str] = frozenset()  # enabled, deferred and not revealed: not sent
    # the deferred tools revealed in the session, by name: the seq of the answer that revealed each
    revealed: Mapping[str, int] = field(default_factory=dict)
    native: bool = False  # deferred tools are sent deferred, searched by the provider (no ``tool_search``)

    @property
    def defers(self) -> bool:
        """Whether the agent defers any tool of this call (then ``tool_search`` is enabled)."""
        return bool(self.deferred or self.revealed)

    def answered_by(self, name: str) -> dict[str, str]:
        """Who answers a call of ``name``, as the run's tool events keep it (nothing for a built-in)."""
        served = self.served.get(name)
        return {} if served is None else served.answered_by()

    def span_of(self, name: str) -> dict[str, str]:
        """Who answers a call of ``name``, as its span's attributes say (nothing for a built-in)."""
        served = self.served.get(name)
        return {} if served is None else served.span_attributes()

    def part(self, name: str) -> PartID:
        """The part of the tool the model knows as ``name`` (a served tool's may be a substitute's)."""
        return _part(name, self.served)

    def served_sources(self, names: Iterable[str]) -> list[PartID]:
        """The sources serving the tools ``names`` (each MCP server's ``tool:<server>/*``), each once, in
        the order of its first tool."""
        served = (self.served.get(name) for name in names)
        return list(dict.fromkeys(tool.source for tool in served if tool is not None))

    def state(self, name: str) -> ToolState:
        """What the call does with the tool ``name``: its part, source, and whether it is sent or why not."""
        part = self.part(name)
        served = self.served.get(name)
        source = served.source if served is not None else SKILLS if name in self.skills else AGENT
        enabled = name in self.enabled
        excluded_by = next((p for p in covering_parts(part) if self.overrides.excludes(p)), None)
        deferred = enabled and name in self.deferred
        return ToolState(
            name, part, source, enabled, excluded_by if enabled else None, deferred, self.revealed.get(name)
        )

    @cached_property
    def states(self) -> tuple[ToolState, ...]:
        """The state of every enabled tool, in name order."""
        return tuple(self.state(name) for name in sorted(self.enabled))

    def deferrable_parts(self) -> set[PartID]:
        """The parts of the enabled tools an agent may defer: every one but ``tool_search`` itself."""
        return {self.part(name) for name in self.enabled if name != TOOL_SEARCH}

    def unoverridden(self) -> Toolset:
        """This toolset with no override: every enabled tool sent but the deferred ones."""
        return replace(self, sent=self.enabled - self.deferred, overrides=Overrides())

    def in_sending_order(self, tools: Iterable[ToolDef]) -> tuple[ToolDef, ...]:
        """Of ``tools`` (in the stack's order), the sent ones: those sent from the start in that order,
        then the revealed ones in the order they were revealed (seq, then name)."""
        sent = [t for t in tools if t.name in self.sent]
        first = [t for t in sent if t.name not in self.revealed]
        later = sorted(
            (t for t in sent if t.name in self.revealed), key=lambda t: (self.revealed[t.name], t.name)
        )
        return (*first, *later)

    def deferred_of(self, tools: Iterable[ToolDef]) -> tuple[ToolDef, ...]:
        """Of ``tools``, the deferred ones not revealed and no override leaves out: what ``tool_search`` finds."""
        return tuple(t for t in tools if t.name in self.deferred and not self._excluded(t.name))

    def sent_deferred(self, tools: Iterable[ToolDef], referenced: frozenset[str]) -> tuple[ToolDef, ...]:
        """Of ``tools`` (in the stack's order), those a native deferral sends marked deferred: every deferred
        tool not revealed, and every revealed one a search result of the call's messages still references
        (``referenced``: the provider loads it from there), that no override leaves out. One order, so a
        reveal changes no tool; a revealed tool whose search a compaction summarized is sent loaded. None
        without a native deferral."""
        if not self.native:
            return ()
        deferring = self.deferred | (self.revealed.keys() & referenced)
        return tuple(
            replace(t, deferred=True) for t in tools if t.name in deferring and not self._excluded(t.name)
        )

    def left_out(self, tools: tuple[ToolDef, ...]) -> list[ToolDef]:
        """Of ``tools``, the enabled ones an override leaves out (a deferred one too)."""
        if not self.deferred:
            return [t for t in tools if t.name in self.enabled and t.name not in self.sent]
        return [t for t in tools if t.name in self.enabled and self._excluded(t.name)]

    def _excluded(self, name: str) -> bool:
        """Whether an override leaves the tool ``name`` out (its own, or its server's)."""
        return bool(self.overrides.agent) and self.overrides.excludes_tool(self.part(name))


def toolset_of(agent: AgentConfig, state: RunState) -> Toolset:
    """The toolset of ``state``'s next call: the tools its sources enable, less the ones an override
    leaves out (the tool's own, or its MCP server's as a whole) and the deferred ones not revealed."""
    skills = frozenset(name for skill in state.skills for name in skill.allowed_tools)
    served = state.served_tools
    enabled = frozenset(agent.tools) | skills | served.keys()
    deferring = deferred_names(agent, enabled, served)
    revealed = {name: seq for name, seq in state.revealed.items() if name in deferring}
    deferred = deferring - revealed.keys()
    native = agent.defer.native_on(agent.model)
    if deferring and not native:
        enabled |= {TOOL_SEARCH}
    overrides = state.overrides
    if not overrides.agent:
        return Toolset(enabled, enabled - deferred, served, overrides, skills, deferred, revealed, native)
    sent = frozenset(name for name in enabled - deferred if not overrides.excludes_tool(_part(name, served)))
    return Toolset(enabled, sent, served, overrides, skills, deferred, revealed, native)


def deferred_names(
    agent: AgentConfig, enabled: frozenset[str], served: Mapping[str, ServedTool]
) -> frozenset[str]:
    """The enabled tools the agent defers: those its list names (a tool, or its server as a whole), and
    with ``auto`` every served tool once their definitions together pass ``auto_percent`` of the context
    window. It reads the agent and the tools alone, so it is the same from call to call (no flapping)."""
    defer = agent.defer
    if not defer:
        return frozenset()
    named = frozenset(
        name for name in enabled if defer.names_part(_part(name, served), _source(name, served))
    )
    if defer.auto_percent is None or not served:
        return named
    definitions = sum(estimate_tool(tool.definition) for tool in served.values())
    past = definitions * 100 > defer.auto_percent * agent.context_window
    return named | frozenset(served) if past else named


def _source(name: str, served: Mapping[str, ServedTool]) -> PartID | None:
    """The part of the source serving ``name`` (its server's ``tool:<server>/*``), None for a built-in."""
    tool = served.get(name)
    return None if tool is None else tool.source


def _part(name: str, served: Mapping[str, ServedTool]) -> PartID:
    tool = served.get(name)
    return tool_part(name) if tool is None else part_of(tool.definition)
