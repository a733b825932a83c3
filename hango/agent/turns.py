"""One turn of the agent loop: a model call, then the tool calls of its answer.

The run loop and the subagent tool both drive turns; they differ only in where
the messages go (stored per turn, or kept in memory).
"""

from __future__ import annotations

from collections.abc import Callable

from hango import telemetry
from hango.agent.chain import Chain
from hango.agent.middleware.base import ModelHandler
from hango.agent.middleware.tool_allowlist import allowed_tools
from hango.agent.state import RunState, StoredMessage, ToolCall
from hango.agent.tools.base import ToolContext, run_tool
from hango.agent.types import Message, Response, ToolResultBlock, ToolUseBlock
from hango.telemetry import names


def model_phase(chain: Chain, state: RunState, handler: ModelHandler) -> Response:
    """Assemble the next request through the chain and send it to ``handler``."""
    return chain.call_model(chain.draft(state.agent, state), state, handler)


def tool_uses(message: Message) -> list[ToolUseBlock]:
    return [b for b in message.content if isinstance(b, ToolUseBlock)]


def tool_phase(chain: Chain, state: RunState, ctx: ToolContext, uses: list[ToolUseBlock]) -> Message:
    """Run every tool call of an answer through the tool wrappers; one user message holds the results."""
    tools = chain.tools(state.agent, state)
    allowed = allowed_tools(state.agent, state)

    def execute(call: ToolCall) -> ToolResultBlock:
        tool = tools.get(call.use.name) if call.use.name in allowed else None
        with telemetry.tracer().start_as_current_span(names.SPAN_TOOL.format(name=call.use.name)) as span:
            result = run_tool(tool, call.use, ctx)
            span.set_attributes({names.TOOL_NAME: call.use.name, names.TOOL_ERROR: result.is_error})
        return result

    results = tuple(chain.call_tool(ToolCall(use), state, execute) for use in uses)
    return Message("user", results)


def converse(
    chain: Chain,
    state: RunState,
    handler: ModelHandler,
    ctx_for_turn: Callable[[], ToolContext],
    max_turns: int,
) -> Response:
    """Turns kept in ``state.history`` only (no storage) until the model stops calling tools."""
    response = model_phase(chain, state, handler)
    for _ in range(max_turns - 1):
        uses = tool_uses(response.message)
        if not uses:
            break
        results = tool_phase(chain, state, ctx_for_turn(), uses)
        state.history += [
            StoredMessage(state.last_seq + 1, response.message),
            StoredMessage(state.last_seq + 2, results),
        ]
        response = model_phase(chain, state, handler)
    return response
