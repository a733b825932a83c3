"""The contract of ``GET /v1/sessions/{id}/context``: one schema per answer it can give.

The route answers the inspect response by default, one part with ``full``, the
provider-neutral request with ``format=request``, and the exact wire body with
``format=anthropic`` or ``format=openai``; the OpenAPI document lists them under
``anyOf`` (the wire bodies are open objects, so more than one may match).
"""

from __future__ import annotations

from marshmallow import Schema, fields

from hango.agent.ledger.verdict import OUTLOOKS, UNITS
from hango.providers import WIRE_FORMATS

NULLABLE_INT = {"allow_none": True}


class PartSchema(Schema):
    id = fields.String(required=True, metadata={"description": "the part id, e.g. `message:7`"})
    kind = fields.String(required=True, metadata={"enum": ["system", "tool", "message", "summary"]})
    target = fields.String(
        required=True,
        metadata={
            "enum": ["agent", "session"],
            "description": "the override route that stores this part's override",
        },
    )
    label = fields.String(required=True)
    preview = fields.String(required=True, metadata={"description": "the first 200 characters as sent"})
    truncated = fields.Boolean(required=True, metadata={"description": "whether the preview was cut"})
    tokens = fields.Integer(
        required=True, metadata={"description": "the part as sent (a replaced part: the replacement)"}
    )
    original_tokens = fields.Integer(
        required=True,
        allow_none=True,
        metadata={"description": "a replaced part's tokens before the replacement"},
    )
    included = fields.Boolean(required=True)
    override = fields.String(required=True, allow_none=True, metadata={"enum": ["exclude", "replace", None]})
    paired = fields.Boolean(required=True, metadata={"description": "excluded as a tool pair companion"})
    paired_with = fields.List(
        fields.String(), required=True, metadata={"description": "every part sent or left out with this one"}
    )
    stale = fields.Boolean(required=True)
    excluded_by = fields.String(
        required=True,
        allow_none=True,
        metadata={
            "description": "left out because of this part's override: the part that pulled a companion in, "
            "or the excluded tool whose block this is (`system:subagent` goes with `tool:task`)"
        },
    )
    cached_prefix = fields.Boolean(
        required=True,
        metadata={"description": "in a prefix the cache holds for the next call (none once it expired)"},
    )
    cache_loss_tokens = fields.Integer(
        required=True,
        metadata={
            "description": "the tokens of `cache.expected_read_tokens` (what the next call reads of the "
            "prefixes the provider holds from the previous call) that the next call no longer reads when "
            "this part changes, in the same unit (`cache.unit`); 0 when nothing is held "
            "(`cache.outlook`: `first_call`, `expired`, `none`)"
        },
    )
    role = fields.String(
        required=True, allow_none=True, metadata={"description": "a message's (or the summary's) role"}
    )
    tools = fields.List(
        fields.String(), required=True, metadata={"description": "the tools it defines, calls or answers"}
    )
    deferred = fields.Boolean(
        metadata={
            "description": "a tool part the agent defers and `tool_search` has not revealed: not sent "
            "(`included` false; `tokens` what it would cost, saved each call); other parts have none"
        },
    )
    revealed_at = fields.Integer(
        allow_none=True,
        metadata={
            "description": "a deferred tool part `tool_search` revealed: the seq of the answer whose search "
            "revealed it (sent from then on, after the tools sent from the start); null otherwise"
        },
    )
    server = fields.String(
        allow_none=True,
        metadata={
            "description": "a tool part's MCP server (`tool:<server>/<tool>`); null for a built-in tool; "
            "other parts have none"
        },
    )


class UnavailableToolSchema(Schema):
    tool = fields.String(required=True, metadata={"description": "the tool's name on its server"})
    reason = fields.String(required=True, metadata={"enum": ["task_required"]})
    why = fields.String(required=True, metadata={"description": "the reason in words"})


class ToolGroupSchema(Schema):
    server = fields.String(
        required=True,
        allow_none=True,
        metadata={"description": "the MCP server; null for the built-in tools"},
    )
    part = fields.String(
        required=True,
        allow_none=True,
        metadata={
            "description": "`tool:<server>/*`: the part an override of the whole server names (it leaves out "
            "every tool the server's stored list holds at each call); null for the built-in tools"
        },
    )
    label = fields.String(required=True, metadata={"description": "`built-in` or `server <name>`"})
    tools = fields.Integer(required=True, metadata={"description": "its tools in the next call, sent or not"})
    sent = fields.Integer(required=True, metadata={"description": "of those, the tools sent"})
    tokens_before = fields.Integer(
        required=True, metadata={"description": "its tools' estimates, all of them"}
    )
    tokens = fields.Integer(required=True, metadata={"description": "the sent tools' estimates"})
    override = fields.String(
        required=True,
        allow_none=True,
        metadata={"enum": ["exclude", None], "description": "the server's own"},
    )
    stale = fields.Boolean(
        required=True,
        metadata={"description": "the server's override waits for a server that gives no tool now"},
    )
    cached_prefix = fields.Boolean(required=True)
    cache_loss_tokens = fields.Integer(
        required=True,
        metadata={"description": "what a change of the group costs the cache: its first tool's"},
    )
    deferred = fields.Integer(
        required=True,
        metadata={"description": "of its tools, the deferred ones `tool_search` has not revealed (not sent)"},
    )
    deferred_tokens = fields.Integer(
        required=True, metadata={"description": "their estimates: what deferring them saves each call"}
    )
    unavailable = fields.List(
        fields.Nested(UnavailableToolSchema),
        required=True,
        metadata={"description": "the server's chosen tools hango never sends (not parts), each with why"},
    )


class GroupTotalSchema(Schema):
    before = fields.Integer(required=True)
    after = fields.Integer(required=True)


class TotalsSchema(Schema):
    system = fields.Nested(GroupTotalSchema, required=True)
    tools = fields.Nested(GroupTotalSchema, required=True)
    messages = fields.Nested(GroupTotalSchema, required=True)


class LastCallSchema(Schema):
    """The last ``run`` call of a message run of the session that ended keeping its turn (never a try's,
    a cancelled or failed run's, or a summarize call)."""

    purpose = fields.String(required=True, metadata={"description": "`run`"})
    estimated = fields.Integer(required=True, allow_none=True)
    reported = fields.Integer(required=True)
    run_id = fields.UUID(required=True, metadata={"description": "the run that made it"})
    at = fields.DateTime(required=True, metadata={"description": "when the call was recorded"})


class CalibrationSchema(Schema):
    ratio = fields.Float(required=True, metadata={"description": "median reported ÷ estimated input tokens"})
    calls = fields.Integer(required=True, metadata={"description": "how many calls the median is over"})


def _one_of(values: tuple[str, ...], description: str) -> fields.String:
    """A required string field that takes one of ``values``."""
    return fields.String(required=True, metadata={"enum": list(values), "description": description})


def simulated_at_field() -> fields.String:
    """The field that labels a simulated price with the reference model whose prices it is at."""
    return fields.String(
        allow_none=True,
        metadata={
            "description": "a simulated price: the reference model (`<provider>/<model>`) whose prices it is at, "
            "for a provider that only stands in for one (`offline`); null for a real price"
        },
    )


class CostSchema(Schema):
    usd = fields.Float(
        required=True, allow_none=True, metadata={"description": "US dollars; null when the price is unknown"}
    )
    source = fields.String(
        required=True,
        allow_none=True,
        metadata={"description": "genai-prices <version>, HANGO_PRICES or free"},
    )
    reason = fields.String(
        required=True, allow_none=True, metadata={"description": "why the price is unknown"}
    )
    simulated_at = simulated_at_field()


class NextCallCostSchema(CostSchema):
    tokens = fields.Dict(
        keys=fields.String(),
        values=fields.Integer(),
        required=True,
        metadata={"description": "input (uncached), cache_read, cache_write and output (0: not known yet)"},
    )


class NextCallCacheSchema(Schema):
    expected_read_tokens = fields.Integer(
        required=True, metadata={"description": "what the next call would read from the prompt cache"}
    )
    miss_reason = fields.String(
        required=True,
        allow_none=True,
        metadata={
            "description": "prefix_changed, expired, below_minimum, first_call, beyond_lookback or null"
        },
    )
    miss_part = fields.String(
        required=True,
        allow_none=True,
        metadata={
            "description": "the first changed part (beyond_lookback: where the unreachable cached prefix ended)"
        },
    )
    miss_cause = fields.String(required=True, allow_none=True)
    outlook = _one_of(
        OUTLOOKS,
        "`live`: the previous call's cache lives; `expired`: it is older than the cache lifetime, so no "
        "change costs cache; `first_call`: nothing sent yet (a change is priced as the cache the next call "
        "writes); `none`: the provider caches nothing",
    )
    unit = _one_of(
        UNITS,
        "the unit of `expected_read_tokens` and every `cache_loss_tokens`: `provider` (the estimate scaled "
        "by the previous call's reported prompt), `calibrated` (by the agent's calibration ratio) or "
        "`estimate`",
    )
    badge = fields.String(
        required=True,
        metadata={"description": "hit, miss, first (nothing cached yet) or none (no read expected)"},
    )
    words = fields.String(
        required=True, metadata={"description": "the predicted verdict and its cause in plain words"}
    )


class InspectSchema(Schema):
    session_id = fields.String(required=True)
    agent_id = fields.String(required=True)
    model = fields.String(required=True)
    wire_format = fields.String(
        required=True,
        metadata={
            "enum": [*WIRE_FORMATS, "request"],
            "description": "the `format` of the agent's provider",
        },
    )
    counted = fields.String(required=True, metadata={"enum": ["provider", "estimate"]})
    total_before = fields.Integer(required=True, metadata={"description": "in the unit of `counted`"})
    total_after = fields.Integer(required=True, metadata={"description": "in the unit of `counted`"})
    totals = fields.Nested(
        TotalsSchema,
        required=True,
        metadata={"description": "per group, in the unit `totals_unit` says; they add up to the totals"},
    )
    totals_unit = fields.String(
        required=True,
        metadata={
            "enum": ["estimate", "provider_scaled"],
            "description": "`provider_scaled`: the provider counted the request and the group estimates are "
            "scaled to its count (largest remainder); `estimate`: hango's estimates",
        },
    )
    context_window = fields.Integer(required=True)
    compact_at = fields.Integer(required=True)
    output_reserve = fields.Integer(
        required=True, metadata={"description": "the next call's `max_tokens`: room kept for the answer"}
    )
    free = fields.Integer(
        required=True,
        metadata={
            "description": "context_window - total_after - output_reserve; negative when the input and the "
            "output reserve together exceed the window (the provider would refuse the call)"
        },
    )
    free_before_compaction = fields.Integer(
        required=True, metadata={"description": "tokens left until compact_at; 0 once past it"}
    )
    would_compact = fields.Boolean(required=True)
    last_call = fields.Nested(LastCallSchema, required=True, allow_none=True)
    calibrated_total = fields.Integer(
        required=True, allow_none=True, metadata={"description": "total_after calibrated"}
    )
    calibrated_totals = fields.Dict(
        keys=fields.String(), values=fields.Integer(), required=True, allow_none=True
    )
    calibration = fields.Nested(CalibrationSchema, required=True, allow_none=True)
    cache = fields.Nested(
        NextCallCacheSchema, required=True, metadata={"description": "the next call's prompt cache outlook"}
    )
    next_call_cost = fields.Nested(
        NextCallCostSchema, required=True, metadata={"description": "the next call's expected input cost"}
    )
    system = fields.List(fields.Nested(PartSchema), required=True)
    tools = fields.List(fields.Nested(PartSchema), required=True)
    tool_groups = fields.List(
        fields.Nested(ToolGroupSchema),
        required=True,
        metadata={
            "description": "`tools` by source: the built-in tools, then each MCP server's, each with its "
            "subtotal (estimates; they add up to `totals.tools` in the unit `estimate`)"
        },
    )
    tools_sent = fields.Integer(
        required=True,
        metadata={"description": "the tools the next call sends (its groups' `sent`, added up)"},
    )
    messages = fields.List(fields.Nested(PartSchema), required=True)
    compaction = fields.Dict(
        allow_none=True,
        metadata={
            "description": "when the next call compacts (or `compaction=preview`): what it would summarize; "
            "null when the history has no place to cut (nothing before the last turn to summarize)"
        },
    )


class FullPartSchema(Schema):
    id = fields.String(required=True)
    kind = fields.String(required=True)
    content = fields.Raw(required=True, metadata={"description": "text, a tool definition or content blocks"})
    replacement = fields.String(
        required=True, allow_none=True, metadata={"description": "what is sent instead"}
    )
    tokens = fields.Integer(required=True, metadata={"description": "as sent"})
    original_tokens = fields.Integer(required=True, metadata={"description": "of `content`"})


class NeutralBlockSchema(Schema):
    text = fields.String(required=True)
    cache_control = fields.Boolean(required=True)


class NeutralToolSchema(Schema):
    name = fields.String(required=True)
    description = fields.String(required=True)
    input_schema = fields.Dict(required=True)


class NeutralMessageSchema(Schema):
    role = fields.String(required=True, metadata={"enum": ["user", "assistant"]})
    content = fields.List(fields.Dict(), required=True)
    cache_control = fields.Boolean(required=True)


class NeutralRequestSchema(Schema):
    model = fields.String(required=True)
    max_tokens = fields.Integer(required=True)
    system = fields.List(fields.Nested(NeutralBlockSchema), required=True)
    tools = fields.List(fields.Nested(NeutralToolSchema), required=True)
    messages = fields.List(fields.Nested(NeutralMessageSchema), required=True)


class AnthropicBodySchema(Schema):
    """The ``POST /v1/messages`` body, exactly as the adapter sends it."""

    model = fields.String(required=True)
    max_tokens = fields.Integer(required=True)
    system = fields.List(fields.Dict(), metadata={"description": "text blocks; `cache_control` objects"})
    tools = fields.List(fields.Dict())
    messages = fields.List(fields.Dict(), required=True)


class OpenAIBodySchema(Schema):
    """The ``POST /chat/completions`` body, exactly as the adapter sends it."""

    model = fields.String(required=True)
    max_tokens = fields.Integer(required=True)
    tools = fields.List(fields.Dict())
    messages = fields.List(fields.Dict(), required=True)


ANSWERS = [InspectSchema, FullPartSchema, NeutralRequestSchema, AnthropicBodySchema, OpenAIBodySchema]
