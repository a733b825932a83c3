"""What a ``chat`` span carries: GenAI conventions, hango ids, cache figures; content only on opt-in."""

from __future__ import annotations

import json

from opentelemetry.trace import Span

from hango import telemetry
from hango.agent.state import RunState
from hango.messages import Request, Response, message_to_dict
from hango.providers import split_model
from hango.telemetry import names


def start(span: Span, state: RunState, request: Request, provider: str) -> None:
    """Attributes known before the call."""
    span.set_attributes(
        {
            names.GEN_AI_SYSTEM: provider,
            names.GEN_AI_OPERATION: "chat",
            # The model as the provider knows it; ``gen_ai.system`` names the provider.
            names.GEN_AI_REQUEST_MODEL: split_model(request.model)[1],
            names.GEN_AI_REQUEST_MAX_TOKENS: request.max_tokens,
            names.TENANT_ID: str(state.tenant_id),
            names.SESSION_ID: str(state.session_id),
            names.AGENT_ID: str(state.agent.id),
            names.RUN_ID: str(state.run_id or ""),
            names.PURPOSE: state.purpose,
            names.CONTEXT_OVERRIDES: len(state.overrides),
            names.CONTEXT_EXCLUDED_TOKENS: state.excluded_tokens,
            names.CONTEXT_TRY: state.purpose == "context_try",
        }
    )
    if state.trace_content:
        prompt = [message_to_dict(m) for m in request.messages]
        span.set_attribute(names.GEN_AI_PROMPT, json.dumps(prompt, ensure_ascii=False))


def finish(span: Span, state: RunState, response: Response) -> None:
    """Attributes of the answer, and the cache-read ratio metric."""
    usage = response.usage
    all_input = usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens
    ratio = usage.cache_read_tokens / all_input if all_input else 0.0
    span.set_attributes(
        {
            names.GEN_AI_RESPONSE_FINISH_REASONS: [response.stop_reason],
            names.GEN_AI_USAGE_INPUT_TOKENS: usage.input_tokens,
            names.GEN_AI_USAGE_OUTPUT_TOKENS: usage.output_tokens,
            names.CACHE_READ_TOKENS: usage.cache_read_tokens,
            names.CACHE_WRITE_TOKENS: usage.cache_write_tokens,
            names.CACHE_READ_RATIO: ratio,
        }
    )
    if state.trace_content:
        span.set_attribute(
            names.GEN_AI_COMPLETION, json.dumps(message_to_dict(response.message), ensure_ascii=False)
        )
    telemetry.meter().create_histogram(names.METRIC_CACHE_READ_RATIO).record(
        ratio, {names.PURPOSE: state.purpose}
    )
