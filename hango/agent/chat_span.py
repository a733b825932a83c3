"""What a ``chat`` span carries: GenAI conventions, hango ids, cache figures; content only on opt-in.

Content follows the OpenTelemetry GenAI shape: ``gen_ai.system_instructions`` is a
list of text parts, ``gen_ai.input.messages``/``gen_ai.output.messages`` are lists of
``{"role", "parts"}`` with ``text``, ``tool_call`` and ``tool_call_response`` parts.
"""

from __future__ import annotations

import json
from typing import Any

from opentelemetry.trace import Span

from hango import telemetry
from hango.agent.ledger.verdict import Verdict
from hango.agent.state import RunState
from hango.messages import ContentBlock, Message, Request, Response, ServerToolBlock, TextBlock, ToolUseBlock
from hango.providers import split_model
from hango.telemetry import names


def genai_part(block: ContentBlock) -> dict[str, Any]:
    """One content block as a GenAI message part."""
    if isinstance(block, TextBlock):
        return {"type": "text", "content": block.text}
    if isinstance(block, ToolUseBlock):
        return {"type": "tool_call", "id": block.id, "name": block.name, "arguments": block.input}
    if isinstance(block, ServerToolBlock):  # the provider's own tool: its kind, no content
        return {"type": block.data.get("type", "server_tool")}
    return {"type": "tool_call_response", "id": block.tool_use_id, "response": block.content}


def genai_message(message: Message, **extra: Any) -> dict[str, Any]:
    """One message as a GenAI ``{"role", "parts"}`` object (``extra``: e.g. its ``finish_reason``)."""
    return {"role": message.role, "parts": [genai_part(b) for b in message.content], **extra}


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def start(span: Span, state: RunState, request: Request, provider: str, excluded_tokens: int) -> None:
    """Attributes known before the call (``excluded_tokens``: what the overrides left out of it, by its
    draft's report)."""
    span.set_attributes(
        {
            names.GEN_AI_PROVIDER_NAME: provider,
            names.GEN_AI_OPERATION: names.OPERATION_CHAT,
            # The model as the provider knows it; ``gen_ai.provider.name`` names the provider.
            names.GEN_AI_REQUEST_MODEL: split_model(request.model)[1],
            names.GEN_AI_REQUEST_MAX_TOKENS: request.max_tokens,
            names.TENANT_ID: str(state.tenant_id),
            names.SESSION_ID: str(state.session_id),
            names.AGENT_ID: str(state.agent.id),
            names.RUN_ID: str(state.run_id or ""),
            names.PURPOSE: state.mode.purpose,
            names.CONTEXT_OVERRIDES: len(state.overrides),
            names.CONTEXT_EXCLUDED_TOKENS: excluded_tokens,
            names.CONTEXT_TRY: state.mode.purpose == "context_try",
        }
    )
    if state.trace_content:
        system = [{"type": "text", "content": b.text} for b in request.system]
        span.set_attribute(names.GEN_AI_SYSTEM_INSTRUCTIONS, _json(system))
        span.set_attribute(names.GEN_AI_INPUT_MESSAGES, _json([genai_message(m) for m in request.messages]))


def cache_verdict(span: Span, verdict: Verdict) -> None:
    """The tokens the call should have read from the prompt cache, and why it did not (when it did not)."""
    span.set_attribute(names.CACHE_EXPECTED_READ_TOKENS, verdict.expected_read_tokens)
    if verdict.miss_reason is not None:
        span.set_attribute(names.CACHE_MISS_REASON, verdict.miss_reason)


def finish(span: Span, state: RunState, response: Response) -> None:
    """Attributes of the answer, and the cache-read ratio metric."""
    usage = response.usage
    all_input = usage.prompt_tokens
    ratio = usage.cache_read_tokens / all_input if all_input else 0.0
    span.set_attributes(
        {
            names.GEN_AI_RESPONSE_FINISH_REASONS: [response.stop_reason],
            names.GEN_AI_USAGE_INPUT_TOKENS: all_input,
            names.GEN_AI_USAGE_OUTPUT_TOKENS: usage.output_tokens,
            names.GEN_AI_USAGE_CACHE_READ_TOKENS: usage.cache_read_tokens,
            names.GEN_AI_USAGE_CACHE_CREATION_TOKENS: usage.cache_write_tokens,
            names.CACHE_READ_RATIO: ratio,
            **({names.TOOL_SEARCHES: response.tool_searches} if response.tool_searches else {}),
        }
    )
    if state.trace_content:
        output = genai_message(response.message, finish_reason=response.stop_reason)
        span.set_attribute(names.GEN_AI_OUTPUT_MESSAGES, _json([output]))
    telemetry.meter().create_histogram(names.METRIC_CACHE_READ_RATIO).record(
        ratio, {names.PURPOSE: state.mode.purpose}
    )
