"""This month's token usage and MCP tool calls: ``GET /v1/usage``."""

from __future__ import annotations

import datetime as dt

from flask.views import MethodView
from marshmallow import Schema, fields

from hango import tenancy
from hango.api import Blueprint

blp = Blueprint("usage", __name__, url_prefix="/v1/usage", description="Token usage and quota")


class UsageTotalSchema(Schema):
    purpose = fields.String()
    provider = fields.String()
    model = fields.String()
    calls = fields.Integer()
    input_tokens = fields.Integer()
    output_tokens = fields.Integer()
    cache_read_tokens = fields.Integer()
    cache_write_tokens = fields.Integer()


class McpCallsSchema(Schema):
    server = fields.String(metadata={"description": "the tenant's MCP server, by name"})
    tool = fields.String(metadata={"description": "the tool's name on that server"})
    calls = fields.Integer()
    errors = fields.Integer(metadata={"description": "calls that gave the model an error result"})


class UsageSchema(Schema):
    period_start = fields.DateTime()
    period_end = fields.DateTime()
    totals = fields.List(fields.Nested(UsageTotalSchema), metadata={"description": "per purpose and model"})
    mcp_calls = fields.List(
        fields.Nested(McpCallsSchema),
        metadata={"description": "the runs' MCP tool calls per server and tool"},
    )
    used_tokens = fields.Integer(metadata={"description": "input + output + cache read + cache write"})
    token_quota = fields.Integer(allow_none=True)
    quota_left = fields.Integer(
        allow_none=True, metadata={"description": "quota minus used, never below 0; null when unlimited"}
    )


@blp.route("")
class Usage(MethodView):
    @blp.response(200, UsageSchema)
    def get(self) -> dict:
        """This UTC calendar month's token totals per purpose and model, its MCP tool calls per server and
        tool, and the quota left."""
        return tenancy.store().usage.this_month(dt.datetime.now(dt.UTC))
