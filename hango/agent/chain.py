"""The chain: an ordered stack of middleware that assembles every model request.

Stack order is outermost first. System blocks are sent in stack order after
``system:agent``; model and tool wrappers run outermost first, the provider (or
a capture handler) innermost.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from functools import reduce
from typing import TYPE_CHECKING

from hango.agent.draft import Draft
from hango.agent.estimator import estimate_block
from hango.agent.middleware.base import Middleware, ModelHandler, ToolHandler
from hango.agent.overrides import apply_system
from hango.agent.parts import SUMMARY, PartID, SourcedBlock, SourcedMessage, system_part
from hango.agent.report import NOTHING, OVERRIDDEN, LeftOut
from hango.agent.state import RunState, ToolCall
from hango.agent.tools.base import Tool
from hango.agent.toolset import Toolset, toolset_of
from hango.messages import Block, Message, Response, TextBlock, ToolResultBlock

if TYPE_CHECKING:
    from hango.agent.deps import RunContext

SUMMARY_PREFIX = "Summary of the earlier conversation:\n\n"


class Chain:
    def __init__(self, stack: Sequence[Middleware]) -> None:
        self.stack = tuple(stack)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(m.name for m in self.stack)

    def before_run(self, state: RunState, ctx: RunContext) -> None:
        """Run every run hook once, outermost first."""
        for middleware in self.stack:
            middleware.before_run(state, ctx)

    def contributed_blocks(self, state: RunState, tools: Toolset | None = None) -> list[SourcedBlock]:
        """``system:agent`` then every contributor's blocks, each tagged with its part id (``tools``: the
        call's toolset when the caller has made it already)."""
        agent = state.agent
        tools = tools or toolset_of(agent, state)
        blocks = (
            [SourcedBlock(system_part("agent"), Block(agent.system_prompt))] if agent.system_prompt else []
        )
        for middleware in self.stack:
            blocks.extend(middleware.system_blocks(agent, state, tools))
        return blocks

    def toolset(self, state: RunState) -> Toolset:
        """The toolset of ``state``'s next call (``hango.agent.toolset``)."""
        return toolset_of(state.agent, state)

    def system_blocks(self, state: RunState) -> list[SourcedBlock]:
        """The contributed blocks with the agent's system overrides applied.

        This happens before any model wrapper runs, so the prompt-cache slot
        picks its breakpoint among the blocks that are really sent.
        """
        return apply_system(self.contributed_blocks(state), state.overrides)

    def tools(self, state: RunState) -> dict[str, Tool]:
        """Every tool the stack provides, by name (the allowlist decides what is sent)."""
        return {tool.name: tool for m in self.stack for tool in m.tools(state.agent, state)}

    def draft(
        self, state: RunState, max_tokens: int = 4096, history: Sequence[SourcedMessage] | None = None
    ) -> Draft:
        """The next request before the model wrappers: blocks, tools, and the history after the summary
        (``history``: ``history_messages(state)`` when the caller has built it already). Its report
        names the system blocks the overrides left out."""
        tools = toolset_of(state.agent, state)  # once a call: the contributors and the report read it
        blocks = self.contributed_blocks(state, tools)
        dropped = [b for b in blocks if state.overrides.excludes(b.part)]
        left_out = LeftOut(
            "chain", OVERRIDDEN, tuple(b.part for b in dropped), sum(estimate_block(b.block) for b in dropped)
        )
        report = replace(NOTHING, toolset=tools, dropped_with=self._dropped_with(blocks, tools))
        if state.overrides:  # the blocks with no override, the tools' own included
            whole = (
                blocks if not state.overrides.agent else self.contributed_blocks(state, tools.unoverridden())
            )
            report = report.keeping(system=tuple(whole))
        return Draft(
            model=state.agent.model,
            system=tuple(apply_system(blocks, state.overrides)),
            tools=tuple(t.definition for t in self.tools(state).values()),
            messages=tuple(history_messages(state) if history is None else history),
            max_tokens=max_tokens,
            report=report.leaving_out(left_out),
        )

    def _dropped_with(self, blocks: list[SourcedBlock], tools: Toolset) -> tuple[tuple[PartID, PartID], ...]:
        """The blocks of contributors that sent none because overrides left out every tool they speak of,
        each with the first of those tools (by part) whose return alone brings the block back."""
        if not tools.overrides.agent:
            return ()
        sent = {b.part for b in blocks}
        out = []
        for middleware in self.stack:
            part = system_part(middleware.name)
            if not middleware.speaks_of or part in sent or middleware.speaks_of & tools.sent:
                continue
            back = sorted(s.part for s in map(tools.state, middleware.speaks_of) if s.excluded_by == s.part)
            if back:
                out.append((part, back[0]))
        return tuple(out)

    def call_model(self, draft: Draft, state: RunState, handler: ModelHandler) -> Response:
        """Send ``draft`` through every model wrapper to ``handler``."""
        return self._wrapped("wrap_model_call", state, handler)(draft)

    def call_tool(self, call: ToolCall, state: RunState, handler: ToolHandler) -> ToolResultBlock:
        """Send one tool call through every tool wrapper to ``handler``."""
        return self._wrapped("wrap_tool_call", state, handler)(call)

    def _wrapped(self, hook: str, state: RunState, handler):
        """``handler`` wrapped by every middleware's ``hook``, the outermost first."""
        return reduce(
            lambda inner, m: lambda value: getattr(m, hook)(value, state, inner),
            reversed(self.stack),
            handler,
        )


def history_messages(state: RunState) -> list[SourcedMessage]:
    """The summary part (when there is one) and every stored message after it."""
    through = state.summary.through_seq if state.summary else 0
    messages = [SourcedMessage(m.part, m.message) for m in state.history if m.seq > through]
    if state.summary:
        messages.insert(0, summary_message(state.summary.text))
    return messages


def summary_message(text: str) -> SourcedMessage:
    """The ``summary`` part: a user message standing in for the messages it covers."""
    return SourcedMessage(SUMMARY, Message("user", (TextBlock(SUMMARY_PREFIX + text),)))
