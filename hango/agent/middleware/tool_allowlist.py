"""The last slot: only the tools the agent enables (plus skills' ``allowed_tools``) are sent."""

from __future__ import annotations

from hango.agent.draft import Draft
from hango.agent.middleware.base import Middleware, ModelHandler
from hango.agent.state import AgentConfig, RunState
from hango.agent.types import Response


def allowed_tools(agent: AgentConfig, state: RunState) -> frozenset[str]:
    """The tool names a run may send and execute."""
    widened = {name for skill in state.skills for name in skill.allowed_tools}
    return frozenset(agent.tools) | widened


class ToolAllowlistMiddleware(Middleware):
    """Innermost of the stack, so no middleware after it can add a tool back."""

    name = "tool_allowlist"

    def wrap_model_call(self, draft: Draft, state: RunState, call_next: ModelHandler) -> Response:
        allowed = allowed_tools(state.agent, state)
        return call_next(draft.with_(tools=tuple(t for t in draft.tools if t.name in allowed)))
