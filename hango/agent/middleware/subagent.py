"""Subagents: the ``task`` tool runs a short-lived agent through the same chain with a fresh history."""

from __future__ import annotations

import dataclasses

from hango.agent.gateway import Gateway
from hango.agent.middleware.base import Middleware
from hango.agent.parts import SourcedBlock, system_part
from hango.agent.state import AgentConfig, RunState, StoredMessage
from hango.agent.tools.base import Tool, ToolContext, ToolFailure, schema
from hango.agent.toolset import Toolset
from hango.agent.turn_loop import Sink, take_turns
from hango.errors import QuotaExhausted
from hango.messages import Block, Message, TextBlock, ToolDef, text_of

SUBAGENT_MAX_TURNS = 6

INSTRUCTIONS = (
    "You can hand a self-contained piece of work to a subagent with the `task` tool. The subagent "
    "starts with an empty conversation, has your tools (except `task`), memory and skills, works "
    f"for at most {SUBAGENT_MAX_TURNS} turns and returns its final answer as text. Describe the "
    "task completely: the subagent sees nothing of this conversation."
)

TASK = ToolDef(
    name="task",
    description="Run a subagent on a self-contained task and return its final answer.",
    input_schema=schema(
        {"description": {"type": "string", "minLength": 1, "maxLength": 20_000}}, ("description",)
    ),
)


def run_subagent(description: str, ctx: ToolContext) -> str:
    """Drive a child run in memory: fresh history, no ``task`` tool, usage billed as ``subagent``."""
    parent = ctx.state
    agent = dataclasses.replace(parent.agent, tools=tuple(t for t in parent.agent.tools if t != "task"))
    child = dataclasses.replace(
        parent,
        agent=agent,
        history=[StoredMessage(1, Message("user", (TextBlock(description),)))],
        mode=parent.mode.calling("subagent"),
        handles=dataclasses.replace(parent.handles, compactor=None),
        summary=None,
        overrides=parent.overrides.agent_only(),
    )
    gateway = Gateway(ctx.deps, child, ctx.deps.config.run_timeout)
    ending = take_turns(dataclasses.replace(ctx, state=child), gateway, OwnHistory(), SUBAGENT_MAX_TURNS)
    # Every ending has an answer here: the one ending without (quota) raised in ``OwnHistory.out_of_quota``.
    assert ending.response is not None
    return text_of(ending.response.message) or "(the subagent returned no text)"


class OwnHistory(Sink):
    """The subagent's turns: kept in its own history only, with no step boundaries of their own (they are
    inside its parent's tool call); the tools of its last answer never run, and the quota ends the tool."""

    runs_last_tools = False

    def before_call(self, state: RunState) -> None:
        """No boundary: the parent's tool call is the step."""

    def after_call(self, state: RunState) -> None:
        """No boundary: the parent's tool call is the step."""

    def keep(self, state: RunState, message: Message) -> None:
        state.history.append(StoredMessage(state.last_seq + 1, message))

    def out_of_quota(self, error: QuotaExhausted) -> None:
        # An error result, so the turn is stored; the parent's next call meets the same quota and
        # the run ends ``quota_exhausted`` on a valid history.
        raise ToolFailure(f"the subagent stopped: {error.message}") from error


class SubagentMiddleware(Middleware):
    name = "subagent"
    speaks_of = frozenset({TASK.name})

    def system_blocks(self, agent: AgentConfig, state: RunState, tools: Toolset) -> list[SourcedBlock]:
        if not self.speaks_of & tools.sent:
            return []
        return [SourcedBlock(system_part("subagent"), Block(INSTRUCTIONS))]

    def tools(self, agent: AgentConfig, state: RunState) -> list[Tool]:
        return [Tool(TASK, lambda args, ctx: run_subagent(args["description"], ctx))]
