"""Members: ``/v1/members``."""

from __future__ import annotations

import uuid

import sqlalchemy as sa
from flask import g
from flask.views import MethodView
from marshmallow import Schema, fields, validate

from blueprints.common import error_response, page_of, paged
from hango import authz, tenancy
from hango.api import Blueprint
from hango.errors import Conflict
from hango.store.pages import Page

blp = Blueprint("members", __name__, url_prefix="/v1/members", description="Members and their roles")

ROLES = ("owner", "admin", "member")


class MemberSchema(Schema):
    user_id = fields.UUID(dump_only=True)
    email = fields.Email(required=True, validate=validate.Length(max=320))
    name = fields.String(
        load_default="",
        validate=validate.Length(max=200),
        metadata={"description": "the user's name, used only when the user is new"},
    )
    role = fields.String(load_default="member", validate=validate.OneOf(ROLES))
    created_at = fields.DateTime(dump_only=True)


MemberPageSchema = page_of(MemberSchema, "MemberPage")

LAST_OWNER = "`last_owner`: the tenant would be left without an owner."
ROLE_NOT_ALLOWED = "`role_not_allowed`: only an owner adds, changes or removes an owner."


def _keep_an_owner(member: sa.Row) -> None:
    """Refuse (409 ``last_owner``) to remove or demote the tenant's only owner."""
    if member.role == "owner" and tenancy.store().members.owners() == [member.user_id]:
        raise Conflict("the tenant's last owner cannot be removed or demoted", code="last_owner")


def _role_change(current: sa.Row | None, role: str) -> dict[str, str]:
    """The audit detail of giving ``role`` to a new member or to ``current``, once the caller may:
    422 ``role_not_allowed`` past the caller's rank, 409 ``last_owner`` demoting the only owner."""
    authz.require_manages(role)
    if current is None:
        return {"role": role}
    authz.require_manages(current.role)
    if role != "owner":
        _keep_an_owner(current)
    return {"role": role, "previous_role": current.role}


@blp.route("")
class MemberList(MethodView):
    @paged(blp)
    @blp.response(200, MemberPageSchema)
    def get(self, args: dict) -> Page:
        """List the tenant's members with their roles."""
        return tenancy.store().members.page(args["cursor"], args["limit"])

    @blp.arguments(MemberSchema)
    @blp.response(201, MemberSchema)
    @blp.alt_response(
        200, schema=MemberSchema, success=True, description="Already a member: the role changed."
    )
    @error_response(blp, 409, LAST_OWNER)
    @error_response(blp, 422, f"`invalid`: the body is not valid. {ROLE_NOT_ALLOWED}")
    def post(self, body: dict) -> tuple[sa.Row, int]:
        """Add a member by email (creating the user when new), or set an existing member's role."""
        members = tenancy.store().members
        current = members.by_email(body["email"])
        detail = _role_change(current, body["role"])
        member = members.put(body["email"], body["role"], body["name"])
        tenancy.audit("member.create", "member", member.user_id, detail)
        return member, 201 if current is None else 200


@blp.route("/<uuid:user_id>")
class MemberItem(MethodView):
    @blp.response(204)
    @error_response(blp, 404, "`not_found`: no such member in the tenant.")
    @error_response(blp, 409, LAST_OWNER)
    @error_response(blp, 422, ROLE_NOT_ALLOWED)
    def delete(self, user_id: uuid.UUID) -> None:
        """Remove a member, with their API keys in this tenant."""
        authz.require_manages(g.member.role)
        _keep_an_owner(g.member)
        tenancy.store().members.remove(user_id)
        tenancy.audit("member.delete", "member", user_id, {"role": g.member.role})
