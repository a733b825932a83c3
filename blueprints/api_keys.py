"""API keys: ``/v1/api-keys``. A member manages their own keys; owners and admins manage all."""

from __future__ import annotations

import uuid

import sqlalchemy as sa
from flask import current_app, g
from flask.views import MethodView
from marshmallow import Schema, fields, validate

from blueprints.common import JsonInteger, error_response, page_of, paged
from hango import authz, tenancy
from hango.api import Blueprint
from hango.auth import generate_key
from hango.errors import Conflict, Unprocessable
from hango.store.pages import Page

blp = Blueprint("api_keys", __name__, url_prefix="/v1/api-keys", description="API keys")

MAX_RATE_LIMIT = 1_000_000
ROLE_NOT_ALLOWED = (
    "`role_not_allowed`: only owners and admins set `rate_limit_per_minute` or act for another member,"
    " and only owners act for an owner."
)


class ApiKeySchema(Schema):
    id = fields.UUID(dump_only=True)
    user_id = fields.UUID(metadata={"description": "whose key; the caller by default"})
    name = fields.String(load_default="", validate=validate.Length(max=200))
    prefix = fields.String(dump_only=True)
    rate_limit_per_minute = JsonInteger(validate=validate.Range(min=1, max=MAX_RATE_LIMIT))
    created_at = fields.DateTime(dump_only=True)
    last_used_at = fields.DateTime(dump_only=True, allow_none=True)
    revoked_at = fields.DateTime(dump_only=True, allow_none=True)


class NewApiKeySchema(ApiKeySchema):
    api_key = fields.String(
        dump_only=True, metadata={"description": "the secret: shown in this response only"}
    )


class ApiKeyPatchSchema(ApiKeySchema):
    class Meta:
        exclude = ("user_id",)


ApiKeyPageSchema = page_of(ApiKeySchema, "ApiKeyPage")


def _check_rate_limit_field(body: dict) -> None:
    """Refuse a rate limit from a member: it is the tenant's policy, not the key holder's."""
    if "rate_limit_per_minute" in body and not tenancy.principal().is_admin:
        raise Unprocessable("only owners and admins set rate_limit_per_minute", code="role_not_allowed")


def _key_holder(user_id: uuid.UUID) -> uuid.UUID:
    """``user_id`` when the caller may create a key for them; 422 otherwise."""
    if user_id == tenancy.principal().user_id:
        return user_id
    member = tenancy.store().members.get(user_id)
    if member is None:
        raise Unprocessable(
            "no such member in this tenant", code="unknown_user", details={"user_id": str(user_id)}
        )
    authz.require_manages(member.role)
    return user_id


@blp.route("")
class ApiKeyList(MethodView):
    @paged(blp)
    @blp.response(200, ApiKeyPageSchema)
    def get(self, args: dict) -> Page:
        """List API keys (revoked ones too): a member's own, or all for owners and admins."""
        return tenancy.store().api_keys.page(args["cursor"], args["limit"], user_id=authz.visible_owner())

    @blp.arguments(ApiKeySchema)
    @blp.response(201, NewApiKeySchema)
    @error_response(
        blp, 422, f"`invalid`: the body is not valid. `unknown_user`: no such member. {ROLE_NOT_ALLOWED}"
    )
    def post(self, body: dict) -> dict:
        """Create an API key; its secret is in this response and nowhere else."""
        _check_rate_limit_field(body)
        user_id = _key_holder(body.get("user_id", tenancy.principal().user_id))
        rate_limit = body.get("rate_limit_per_minute", current_app.config["HANGO"].default_rate_limit)
        key = generate_key()
        row = tenancy.store().api_keys.create(user_id, body["name"], key, rate_limit)
        tenancy.audit("api_key.create", "api_key", row.id, {"prefix": key.prefix, "user_id": str(user_id)})
        return {**row._asdict(), "api_key": key.secret}


@blp.route("/<uuid:key_id>")
class ApiKeyItem(MethodView):
    @blp.arguments(ApiKeyPatchSchema(partial=True))
    @blp.response(200, ApiKeySchema)
    @error_response(blp, 404, "`not_found`: no such key, or not one of the caller's.")
    @error_response(blp, 422, f"`invalid`: the body is not valid. {ROLE_NOT_ALLOWED}")
    def patch(self, body: dict, key_id: uuid.UUID) -> sa.Row:
        """Rename a key, or (owners and admins) change its rate limit."""
        _check_rate_limit_field(body)
        key = tenancy.store().api_keys.update(key_id, **body) if body else g.api_key
        tenancy.audit("api_key.update", "api_key", key_id, {"fields": sorted(body)})
        return key

    @blp.response(204)
    @error_response(blp, 404, "`not_found`: no such key, or not one of the caller's.")
    @error_response(blp, 409, "`last_api_key`: this is the caller's last active key.")
    def delete(self, key_id: uuid.UUID) -> None:
        """Revoke a key: it stops working at once and stays listed with `revoked_at`."""
        keys = tenancy.store().api_keys
        if g.api_key.user_id == tenancy.principal().user_id and keys.active_of(g.api_key.user_id) == [key_id]:
            raise Conflict("you cannot revoke your last active API key", code="last_api_key")
        keys.revoke(key_id)
        tenancy.audit("api_key.delete", "api_key", key_id, {"prefix": g.api_key.prefix})
