"""This month's token usage: ``GET /v1/usage``."""

from __future__ import annotations

import datetime as dt

from flask.views import MethodView
from marshmallow import Schema, fields

from hango import tenancy
from hango.api import Blueprint
from hango.store.usage import TOKEN_COLUMNS, month_start, next_month

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


class UsageSchema(Schema):
    period_start = fields.DateTime()
    period_end = fields.DateTime()
    totals = fields.List(fields.Nested(UsageTotalSchema), metadata={"description": "per purpose and model"})
    used_tokens = fields.Integer(metadata={"description": "input + output + cache read + cache write"})
    token_quota = fields.Integer(allow_none=True)
    quota_left = fields.Integer(
        allow_none=True, metadata={"description": "quota minus used, never below 0; null when unlimited"}
    )


@blp.route("")
class Usage(MethodView):
    @blp.response(200, UsageSchema)
    def get(self) -> dict:
        """This UTC calendar month's token totals per purpose and model, and the quota left."""
        store = tenancy.store()
        start = month_start(dt.datetime.now(dt.UTC))
        end = next_month(start)
        totals = store.usage.totals(start, end)
        used = sum(getattr(row, name) for row in totals for name in TOKEN_COLUMNS)
        quota = store.tenant().token_quota
        return {
            "period_start": start,
            "period_end": end,
            "totals": totals,
            "used_tokens": used,
            "token_quota": quota,
            "quota_left": None if quota is None else max(quota - used, 0),
        }
