"""``GET /v1/me``: who the API key belongs to."""

from __future__ import annotations

from flask.views import MethodView
from marshmallow import Schema, fields

from hango import tenancy
from hango.api import Blueprint

blp = Blueprint("me", __name__, url_prefix="/v1/me", description="The caller")


class MeSchema(Schema):
    tenant_id = fields.UUID(attribute="tenant.id")
    tenant_name = fields.String(attribute="tenant.name")
    tenant_slug = fields.String(attribute="tenant.slug")
    user_id = fields.UUID(attribute="user.id")
    email = fields.String(attribute="user.email")
    role = fields.String()
    api_key_id = fields.UUID()


@blp.route("")
class Me(MethodView):
    @blp.response(200, MeSchema)
    def get(self) -> dict:
        """The caller's tenant, user, role and key."""
        who = tenancy.principal()
        tenant, user = tenancy.store().identity(who.user_id)
        return {"tenant": tenant, "user": user, "role": who.role, "api_key_id": who.api_key_id}
