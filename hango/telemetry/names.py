"""Every span, attribute and metric name hango emits, in one place."""

from __future__ import annotations

# spans
SPAN_RUN = "agent.run"
SPAN_CHAT = "chat"
SPAN_TOOL = "tool.{name}"
SPAN_SUMMARIZE = "agent.summarize"
SPAN_CONTEXT_INSPECT = "agent.context_inspect"
SPAN_CONTEXT_TRY = "context_try"
SPAN_CONTEXT_SUGGEST = "agent.context_suggest"
CONTEXT_SUGGESTIONS = "hango.context.suggestions"
CONTEXT_SUGGESTED_TOKENS = "hango.context.suggested_tokens"
SPAN_SESSION_COMPACT = "session_compact"

# GenAI semantic conventions
GEN_AI_SYSTEM = "gen_ai.system"
GEN_AI_OPERATION = "gen_ai.operation.name"
GEN_AI_REQUEST_MODEL = "gen_ai.request.model"
GEN_AI_REQUEST_MAX_TOKENS = "gen_ai.request.max_tokens"
GEN_AI_RESPONSE_FINISH_REASONS = "gen_ai.response.finish_reasons"
GEN_AI_USAGE_INPUT_TOKENS = "gen_ai.usage.input_tokens"
GEN_AI_USAGE_OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
GEN_AI_PROMPT = "gen_ai.prompt"
GEN_AI_COMPLETION = "gen_ai.completion"

# hango attributes
TENANT_ID = "hango.tenant_id"
SESSION_ID = "hango.session_id"
RUN_ID = "hango.run_id"
AGENT_ID = "hango.agent_id"
PURPOSE = "hango.purpose"
RUN_STATUS = "hango.run.status"
RUN_TURNS = "hango.run.turns"
TOOL_NAME = "hango.tool.name"
TOOL_ERROR = "hango.tool.is_error"
CACHE_READ_TOKENS = "hango.cache.read_tokens"
CACHE_WRITE_TOKENS = "hango.cache.write_tokens"
CACHE_READ_RATIO = "hango.cache.read_ratio"
ESTIMATED_INPUT_TOKENS = "hango.estimate.input_tokens"
SUMMARY_THROUGH_SEQ = "hango.summary.through_seq"

# the context inspector
CONTEXT_PARTS_SYSTEM = "hango.context.parts.system"
CONTEXT_PARTS_TOOLS = "hango.context.parts.tools"
CONTEXT_PARTS_MESSAGES = "hango.context.parts.messages"
CONTEXT_TOKENS_BEFORE = "hango.context.tokens.before"
CONTEXT_TOKENS_AFTER = "hango.context.tokens.after"
CONTEXT_WOULD_COMPACT = "hango.context.would_compact"
CONTEXT_OVERRIDES = "hango.context.overrides"
CONTEXT_EXCLUDED_TOKENS = "hango.context.excluded_tokens"
CONTEXT_TRY = "hango.context.try"
EVENT_OVERRIDE_STALE = "agent.context_override_stale"
EVENT_OVERRIDE_PAIRED = "agent.context_override_paired"
EVENT_OVERRIDES_DROPPED = "agent.context_overrides_dropped"

# metrics
METRIC_CACHE_READ_RATIO = "hango.cache.read_ratio"
METRIC_TOKENS = "hango.tokens"
METRIC_MODEL_CALLS = "hango.model.calls"
METRIC_CONTEXT_INSPECT_DURATION = "hango.context.inspect.duration"
METRIC_CONTEXT_TRY = "hango.context.try"
METRIC_CONTEXT_OVERRIDES_ACTIVE = "hango.context.overrides.active"
