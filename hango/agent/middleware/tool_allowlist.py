"""The last slot: only the tools the agent enables (plus skills' ``allowed_tools`` and the tools of its
attached MCP servers) are sent."""

from __future__ import annotations

from hango.agent.draft import Draft
from hango.agent.estimator import estimate_tool
from hango.agent.middleware.base import Middleware, ModelHandler
from hango.agent.parts import PartID, part_of, tool_part
from hango.agent.report import OVERRIDDEN, LeftOut
from hango.agent.state import AgentConfig, RunState
from hango.messages import Response


def enabled_tools(agent: AgentConfig, state: RunState) -> frozenset[str]:
    """The tools the agent enables, widened by its skills' ``allowed_tools``; an attached MCP server's
    tools (those chosen at attach) are enabled by the attach."""
    widened = {name for skill in state.skills for name in skill.allowed_tools}
    return frozenset(agent.tools) | widened | state.server_tools.keys()


def allowed_tools(agent: AgentConfig, state: RunState) -> frozenset[str]:
    """The tool names a call may send and execute: enabled and not excluded by an override (the tool's
    own, or its MCP server's as a whole)."""
    overrides = state.overrides
    enabled = enabled_tools(agent, state)
    if not overrides.agent:
        return enabled
    return frozenset(name for name in enabled if not overrides.excludes_tool(_part(name, state)))


def _part(name: str, state: RunState) -> PartID:
    """The part of the tool the model knows as ``name`` (an MCP tool's may be a substitute's)."""
    served = state.server_tools.get(name)
    return tool_part(name) if served is None else part_of(served.definition)


class ToolAllowlistMiddleware(Middleware):
    """Innermost of the stack, so no middleware after it can add a tool back (an excluded one included)."""

    name = "tool_allowlist"

    def wrap_model_call(self, draft: Draft, state: RunState, call_next: ModelHandler) -> Response:
        allowed = allowed_tools(state.agent, state)
        enabled = enabled_tools(state.agent, state)  # once a call: the set grows with the attached servers
        excluded = [t for t in draft.tools if t.name in enabled and t.name not in allowed]
        left_out = LeftOut(
            self.name,
            OVERRIDDEN,
            tuple(part_of(t) for t in excluded),
            sum(estimate_tool(t) for t in excluded),
        )
        sent = tuple(t for t in draft.tools if t.name in allowed)
        return call_next(draft.with_(tools=sent, report=draft.report.leaving_out(left_out)))
