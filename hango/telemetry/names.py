"""Every span, attribute and metric name hango emits, in one place."""

from __future__ import annotations

# spans
SPAN_RUN = "agent.run"
SPAN_CHAT = "chat"
SPAN_TOOL = "execute_tool {name}"
SPAN_SUMMARIZE = "agent.summarize"
SPAN_CONTEXT_INSPECT = "agent.context_inspect"
SPAN_CONTEXT_TRY = "context_try"
SPAN_CONTEXT_SUGGEST = "agent.context_suggest"
CONTEXT_SUGGESTIONS = "hango.context.suggestions"
CONTEXT_SUGGESTED_TOKENS = "hango.context.suggested_tokens"
SPAN_SESSION_COMPACT = "session_compact"
SPAN_JOB = "process {task}"  # a queue worker's job (messaging semconv: operation, then destination)

# GenAI semantic conventions (OpenTelemetry semconv, gen-ai spans)
GEN_AI_PROVIDER_NAME = "gen_ai.provider.name"
GEN_AI_OPERATION = "gen_ai.operation.name"
OPERATION_CHAT = "chat"
OPERATION_EXECUTE_TOOL = "execute_tool"
GEN_AI_REQUEST_MODEL = "gen_ai.request.model"
GEN_AI_REQUEST_MAX_TOKENS = "gen_ai.request.max_tokens"
GEN_AI_RESPONSE_FINISH_REASONS = "gen_ai.response.finish_reasons"
GEN_AI_USAGE_INPUT_TOKENS = "gen_ai.usage.input_tokens"  # every input token, cached ones included
GEN_AI_USAGE_OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
GEN_AI_USAGE_CACHE_READ_TOKENS = "gen_ai.usage.cache_read.input_tokens"
GEN_AI_USAGE_CACHE_CREATION_TOKENS = "gen_ai.usage.cache_creation.input_tokens"
GEN_AI_SYSTEM_INSTRUCTIONS = "gen_ai.system_instructions"  # content: on the tenant's opt-in only
GEN_AI_INPUT_MESSAGES = "gen_ai.input.messages"  # content: on the tenant's opt-in only
GEN_AI_OUTPUT_MESSAGES = "gen_ai.output.messages"  # content: on the tenant's opt-in only
GEN_AI_TOOL_NAME = "gen_ai.tool.name"
GEN_AI_TOOL_CALL_ID = "gen_ai.tool.call.id"
MCP_SERVER = "hango.mcp.server"  # the tenant's MCP server that ran a tool call (its name)
MCP_SERVER_ID = "hango.mcp.server.id"  # that server's id
MCP_TOOL = "hango.mcp.tool"  # the tool's name on that server

# messaging semantic conventions (a queued job, as its worker processes it)
MESSAGING_SYSTEM = "messaging.system"
MESSAGING_OPERATION_TYPE = "messaging.operation.type"
MESSAGING_DESTINATION = "messaging.destination.name"
MESSAGING_MESSAGE_ID = "messaging.message.id"

# resource
SERVICE_NAME = "service.name"
PROJECT_NAME = "openinference.project.name"  # the project a trace backend such as Phoenix files spans under

# hango attributes
TENANT_ID = "hango.tenant_id"
SESSION_ID = "hango.session_id"
RUN_ID = "hango.run_id"
AGENT_ID = "hango.agent_id"
PURPOSE = "hango.purpose"
RUN_STATUS = "hango.run.status"
RUN_TURNS = "hango.run.turns"
TOOL_ERROR = "hango.tool.is_error"
CACHE_READ_RATIO = "hango.cache.read_ratio"
TOOL_SEARCHES = "hango.tool_search.requests"  # the provider's own tool searches an answer made
CACHE_EXPECTED_READ_TOKENS = "hango.cache.expected_read_tokens"
CACHE_MISS_REASON = "hango.cache.miss_reason"
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
