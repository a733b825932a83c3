"""The caller's tenant: ``/v1/tenant``."""

from __future__ import annotations

import sqlalchemy as sa
from flask.views import MethodView
from marshmallow import Schema, fields, validate

from blueprints.common import JsonBoolean, JsonInteger
from hango import tenancy
from hango.api import Blueprint

blp = Blueprint("tenant", __name__, url_prefix="/v1/tenant", description="The tenant and its settings")

MAX_TOKEN_QUOTA = 10**15


class TenantSchema(Schema):
    id = fields.UUID(dump_only=True)
    name = fields.String(validate=validate.Length(min=1, max=200))
    slug = fields.String(dump_only=True)
    trace_llm_content = JsonBoolean(
        metadata={"description": "put message content on trace spans (off by default)"}
    )
    token_quota = JsonInteger(
        allow_none=True,
        validate=validate.Range(min=0, max=MAX_TOKEN_QUOTA),
        metadata={"description": "tokens per UTC calendar month; null means unlimited"},
    )
    created_at = fields.DateTime(dump_only=True)


@blp.route("")
class Tenant(MethodView):
    @blp.response(200, TenantSchema)
    def get(self) -> sa.Row:
        """The caller's tenant and its settings."""
        return tenancy.store().tenant()

    @blp.arguments(TenantSchema)
    @blp.response(200, TenantSchema)
    def patch(self, body: dict) -> sa.Row:
        """Rename the tenant or change its content tracing or monthly token quota (owners and admins)."""
        store = tenancy.store()
        tenant = store.update_tenant(**body) if body else store.tenant()
        tenancy.audit("tenant.update", "tenant", tenant.id, {"fields": sorted(body)})
        return tenant
