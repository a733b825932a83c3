"""The audit log: ``GET /v1/audit`` (owners and admins)."""

from __future__ import annotations

from flask.views import MethodView
from marshmallow import Schema, fields, validate

from blueprints.common import PageArgsSchema, page_of, paged
from hango import tenancy
from hango.api import Blueprint
from hango.audit import ACTIONS
from hango.store.pages import Page

blp = Blueprint("audit", __name__, url_prefix="/v1/audit", description="The audit log")


class AuditArgsSchema(PageArgsSchema):
    action = fields.String(load_default=None, validate=validate.OneOf(ACTIONS))
    object_type = fields.String(load_default=None, validate=validate.Length(min=1, max=50))
    object_id = fields.String(load_default=None, validate=validate.Length(min=1, max=200))


class AuditEntrySchema(Schema):
    id = fields.UUID()
    actor_user_id = fields.UUID(allow_none=True)
    actor_email = fields.String(
        allow_none=True, metadata={"description": "the actor's email; null: the system"}
    )
    api_key_id = fields.UUID(allow_none=True)
    action = fields.String()
    object_type = fields.String()
    object_id = fields.String(allow_none=True)
    detail = fields.Dict(
        metadata={"description": "what changed (field names, role, prefix, path), never content"}
    )
    created_at = fields.DateTime()


AuditPageSchema = page_of(AuditEntrySchema, "AuditPage")


@blp.route("")
class AuditLog(MethodView):
    @paged(blp, AuditArgsSchema)
    @blp.response(200, AuditPageSchema)
    def get(self, args: dict) -> Page:
        """A page of the tenant's audit log, newest first, filtered by action and object."""
        return tenancy.store().audit.page(
            args["cursor"],
            args["limit"],
            action=args["action"],
            object_type=args["object_type"],
            object_id=args["object_id"],
        )
