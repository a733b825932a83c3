"""The two phases of a turn: a model call, then the tool calls of its answer.

The one turn loop (``hango.agent.turn_loop``) drives them for a run, a scratch turn and a subagent.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

from hango import run_events, telemetry
from hango.agent.middleware.base import ModelHandler
from hango.agent.state import RunState, ToolCall
from hango.agent.tools.base import ToolChain, ToolContext, run_tool
from hango.agent.toolset import toolset_of
from hango.messages import (
    Message,
    Response,
    ToolResultBlock,
    ToolUseBlock,
    message_from_dict,
    message_to_dict,
)
from hango.telemetry import names

NUL = "\x00"


def model_phase(chain: ToolChain, state: RunState, handler: ModelHandler) -> Response:
    """Assemble the next request through the chain and send it to ``handler``; the answer is storable."""
    return storable(chain.call_model(chain.draft(state), state, handler))


def storable(response: Response) -> Response:
    """``response`` with every NUL character (PostgreSQL stores none, in text or jsonb) made U+FFFD."""
    content = message_to_dict(response.message)
    clean = _without_nul(content)
    return response if clean == content else replace(response, message=message_from_dict(clean))


def _without_nul(value: Any) -> Any:
    if isinstance(value, str):
        return value.replace(NUL, "\ufffd")
    if isinstance(value, dict):
        return {_without_nul(key): _without_nul(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_without_nul(item) for item in value]
    return value


def tool_uses(message: Message) -> list[ToolUseBlock]:
    return [b for b in message.content if isinstance(b, ToolUseBlock)]


def tool_phase(chain: ToolChain, state: RunState, ctx: ToolContext, uses: list[ToolUseBlock]) -> Message:
    """Run every tool call of an answer through the tool wrappers; one user message holds the results."""
    tools = chain.tools(state)
    toolset = toolset_of(state.agent, state)

    def execute(call: ToolCall) -> ToolResultBlock:
        tool = tools.get(call.use.name) if call.use.name in toolset.sent else None
        span_name = names.SPAN_TOOL.format(name=call.use.name)
        # who answers a call of a served tool, as its events say and as its span says (``Toolset``)
        served = toolset.answered_by(call.use.name) if tool is not None else {}
        spanned = toolset.span_of(call.use.name) if tool is not None else {}
        named = {"name": call.use.name, "tool_use_id": call.use.id, **served}
        state.steps.emit(run_events.TOOL_STARTED, **named)
        clock = time.monotonic()
        with telemetry.tracer().start_as_current_span(span_name, record_exception=False) as span:
            result = run_tool(tool, call.use, ctx)
            span.set_attributes(
                {
                    names.GEN_AI_OPERATION: names.OPERATION_EXECUTE_TOOL,
                    names.GEN_AI_TOOL_NAME: call.use.name,
                    names.GEN_AI_TOOL_CALL_ID: call.use.id,
                    names.TOOL_ERROR: result.is_error,
                    **spanned,
                }
            )
        state.steps.emit(
            run_events.TOOL_FINISHED,
            **named,
            duration_ms=int((time.monotonic() - clock) * 1000),
            error=result.is_error,
        )
        return result

    results = []
    for use in uses:
        state.steps.check()  # a step boundary: a cancelled run stops before its next tool
        results.append(chain.call_tool(ToolCall(use), state, execute))
    return Message("user", tuple(results))
