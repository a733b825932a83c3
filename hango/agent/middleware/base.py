"""The middleware protocol: small classes that implement only the hooks they need.

- prompt contributor: ``system_blocks(agent, state) -> list[SourcedBlock]``
- tool provider: ``tools(agent, state) -> list[Tool]``
- run hook: ``before_run(state, ctx)`` — load what the run needs, once per run, through ``ctx.store``
- model wrapper: ``wrap_model_call(draft, state, next) -> Response``
- tool wrapper: ``wrap_tool_call(call, state, next) -> ToolResultBlock``
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import TYPE_CHECKING, ClassVar

from hango.agent.draft import Draft
from hango.agent.parts import SourcedBlock
from hango.agent.state import AgentConfig, RunState, ToolCall
from hango.messages import Response, ToolResultBlock

if TYPE_CHECKING:
    from hango.agent.deps import RunContext
    from hango.agent.tools.base import Tool
    from hango.agent.toolset import Toolset

ModelHandler = Callable[[Draft], Response]
ToolHandler = Callable[[ToolCall], ToolResultBlock]


class Middleware:
    """A no-op for every hook; subclasses override the hooks they implement."""

    name: ClassVar[str]
    # The tools its system block speaks of: it sends the block only when the call sends one of them
    # (``Chain.draft`` reports a block an override left out that way, ``Report.dropped_with``).
    speaks_of: ClassVar[frozenset[str]] = frozenset()

    def system_blocks(self, agent: AgentConfig, state: RunState, tools: Toolset) -> list[SourcedBlock]:
        return []

    def tools(self, agent: AgentConfig, state: RunState) -> list[Tool]:
        return []

    def before_run(self, state: RunState, ctx: RunContext) -> None:
        return None

    def wrap_model_call(self, draft: Draft, state: RunState, call_next: ModelHandler) -> Response:
        return call_next(draft)

    def wrap_tool_call(self, call: ToolCall, state: RunState, call_next: ToolHandler) -> ToolResultBlock:
        return call_next(call)

    def implements(self, hook: str) -> bool:
        """True when this middleware overrides ``hook``."""
        return getattr(type(self), hook) is not getattr(Middleware, hook)


class Switchable(Middleware, ABC):
    """A middleware the agent turns off with ``settings[<name>] = False``: then it loads and sends nothing.

    Subclasses implement ``load`` (the run hook's work) and ``blocks`` (the prompt contribution).
    """

    def enabled(self, agent: AgentConfig) -> bool:
        return agent.settings.get(self.name) is not False

    def before_run(self, state: RunState, ctx: RunContext) -> None:
        if self.enabled(state.agent):
            self.load(state, ctx)

    def system_blocks(self, agent: AgentConfig, state: RunState, tools: Toolset) -> list[SourcedBlock]:
        return self.blocks(agent, state, tools) if self.enabled(agent) else []

    @abstractmethod
    def load(self, state: RunState, ctx: RunContext) -> None:
        """What the run hook loads when the middleware is on."""

    @abstractmethod
    def blocks(self, agent: AgentConfig, state: RunState, tools: Toolset) -> list[SourcedBlock]:
        """The system blocks it sends when it is on."""
