"""How the call ledger shows a model call: its usage, cache verdict, cost and parts.

``GET …/calls`` lists calls in these shapes, and a ``try`` run's ``result`` shows its
calls as ``GET …/calls/{call_id}`` does, so the runs area reads them from here too.
"""

from __future__ import annotations

from marshmallow import Schema, fields

from blueprints.context_schemas import CostSchema
from hango.agent.ledger.causes import CAUSES


class CallUsageSchema(Schema):
    input_tokens = fields.Integer()
    output_tokens = fields.Integer()
    cache_read_tokens = fields.Integer()
    cache_write_tokens = fields.Integer()
    prompt_tokens = fields.Integer(
        metadata={"description": "the prompt the provider counted: input, cache read and cache write"}
    )


class CallCacheSchema(Schema):
    expected_read_tokens = fields.Integer(metadata={"description": "what the call should have read"})
    reported_read_tokens = fields.Integer(metadata={"description": "what the provider reported"})
    miss_reason = fields.String(
        allow_none=True,
        metadata={
            "description": "prefix_changed, expired, below_minimum, first_call, beyond_lookback or unexplained"
        },
    )
    miss_part = fields.String(
        allow_none=True,
        metadata={
            "description": "the first changed part (beyond_lookback: where the unreachable cached prefix ended)"
        },
    )
    miss_cause = fields.String(
        allow_none=True,
        metadata={
            "description": "why that part changed, from what was recorded since the previous call",
            "enum": [*CAUSES, None],
        },
    )
    badge = fields.String(metadata={"description": "hit, miss, first (nothing cached yet) or none"})
    words = fields.String(metadata={"description": "the verdict and its cause in plain words"})


class CallSchema(Schema):
    id = fields.UUID()
    purpose = fields.String()
    run_id = fields.UUID(allow_none=True)
    model = fields.String()
    started_at = fields.DateTime()
    duration_ms = fields.Integer()
    usage = fields.Nested(CallUsageSchema)
    estimated_input_tokens = fields.Integer(allow_none=True)
    parts_count = fields.Integer()
    cache = fields.Nested(CallCacheSchema)
    cost = fields.Nested(CostSchema, metadata={"description": "from the reported usage"})


class PricedCallsSchema(Schema):
    """What some calls cost: how many, how many the price table priced, and those summed."""

    calls = fields.Integer()
    priced_calls = fields.Integer()
    usd = fields.Float(
        allow_none=True, metadata={"description": "the priced calls' total; null when none is"}
    )


class CallPartSchema(Schema):
    id = fields.String(
        metadata={"description": "a part id, or `scratch:<try>:<seq>` for a message only a try sent"}
    )
    kind = fields.String(metadata={"enum": ["system", "tool", "message", "summary", "transcript", "scratch"]})
    label = fields.String(
        metadata={
            "description": "a tool as every surface names it: `read_file`, or `<server>/<tool>` for an MCP tool"
        }
    )
    server = fields.String(
        allow_none=True,
        metadata={
            "description": "a tool part's MCP server (`tool:<server>/<tool>`); null for any other part"
        },
    )
    tokens = fields.Integer()
    preview = fields.String(allow_none=True, metadata={"description": "null when changed_since_call"})
    hash = fields.String()
    cache_breakpoint = fields.Boolean()
    changed_since_call = fields.Boolean()
    since_previous = fields.String(
        allow_none=True,
        metadata={"description": "same, changed or added against the previous call; null for the first"},
    )
    cost_usd = fields.Float(
        allow_none=True,
        metadata={"description": "its share of the call's input cost, at the rate it was read at"},
    )
    cost_so_far = fields.Nested(
        PricedCallsSchema,
        allow_none=True,
        metadata={
            "description": "its cost over every call of the session it rode in so far; null when none added to it"
        },
    )


class CallDetailSchema(CallSchema):
    previous_id = fields.UUID(allow_none=True, metadata={"description": "the previous call of its lineage"})
    removed_since_previous = fields.List(
        fields.String(), metadata={"description": "parts it no longer sends"}
    )
    parts = fields.List(fields.Nested(CallPartSchema))
    tools_sent = fields.Integer(metadata={"description": "the tool parts it sent"})
    input_usd = fields.Float(
        allow_none=True,
        metadata={
            "description": "its input's cost (its parts' `cost_usd`, added up); null when one is unknown"
        },
    )
