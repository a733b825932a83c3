"""An agent's skills: ``/v1/agents/{id}/skills``."""

from __future__ import annotations

import uuid

import sqlalchemy as sa
from flask.views import MethodView
from marshmallow import Schema, ValidationError, fields, validate, validates

from blueprints.common import error_response, found, page_of, paged
from hango import tenancy
from hango.agent import options
from hango.api import Blueprint
from hango.errors import Conflict
from hango.paths import PathRefused, path_text
from hango.store.pages import Page

blp = Blueprint(
    "skills", __name__, url_prefix="/v1/agents/<uuid:agent_id>/skills", description="Agent skills"
)

SKILL_NAME = r"^[a-z0-9][a-z0-9_-]{0,63}$"
MAX_DESCRIPTION_CHARS = 1_000
MAX_BODY_CHARS = 100_000
NOT_FOUND = "`not_found`: no such agent or skill."


class SkillSummarySchema(Schema):
    id = fields.UUID(dump_only=True)
    agent_id = fields.UUID(dump_only=True)
    name = fields.String(
        required=True,
        validate=validate.Regexp(SKILL_NAME, error="a skill name is 1-64 of a-z, 0-9, '_' and '-'"),
    )
    description = fields.String(load_default="", validate=validate.Length(max=MAX_DESCRIPTION_CHARS))
    allowed_tools = fields.List(
        fields.String(validate=validate.OneOf(options.BUILTIN_TOOLS)),
        load_default=list,
        metadata={
            "description": "tools the skill adds to the agent's list while it is in use",
            "uniqueItems": True,
        },
    )
    created_at = fields.DateTime(dump_only=True)
    updated_at = fields.DateTime(dump_only=True)

    @validates("name")
    def _name(self, value: str, **_kw) -> None:
        # The pattern's `$` lets a trailing newline through; the name is a path segment (/skills/<name>/).
        try:
            path_text(value)
        except PathRefused as exc:
            raise ValidationError(str(exc)) from exc

    @validates("allowed_tools")
    def _allowed_tools(self, value: list[str], **_kw) -> None:
        if len(set(value)) != len(value):
            raise ValidationError("allowed_tools must not repeat")


class SkillSchema(SkillSummarySchema):
    body = fields.String(load_default="", validate=validate.Length(max=MAX_BODY_CHARS))


class SkillPutSchema(SkillSchema):
    class Meta:
        exclude = ("name",)


SkillPageSchema = page_of(SkillSummarySchema, "SkillPage")


def _skill(agent_id: uuid.UUID, name: str) -> sa.Row:
    """The agent's skill called ``name``, or 404."""
    return found(tenancy.store().skills.get(agent_id, name), "skill")


def _audit(action: str, skill: sa.Row) -> None:
    tenancy.audit(action, "skill", skill.id, {"agent_id": str(skill.agent_id), "name": skill.name})


@blp.route("")
class SkillList(MethodView):
    @paged(blp)
    @blp.response(200, SkillPageSchema)
    @error_response(blp, 404, "`not_found`: no such agent.")
    def get(self, args: dict, agent_id: uuid.UUID) -> Page:
        """List the agent's skills (without their bodies)."""
        return tenancy.store().skills.page(agent_id, args["cursor"], args["limit"])

    @blp.arguments(SkillSchema)
    @blp.response(201, SkillSchema)
    @error_response(blp, 404, NOT_FOUND)
    @error_response(blp, 409, "`skill_exists`: the agent has a skill with this name.")
    def post(self, body: dict, agent_id: uuid.UUID) -> sa.Row:
        """Add a skill to the agent."""
        skill = tenancy.store().skills.create(agent_id, **body)
        if skill is None:
            raise Conflict("the agent already has a skill with this name", code="skill_exists")
        _audit("skill.create", skill)
        return skill


NAME_PARAMETER = {
    "in": "path",
    "name": "name",
    "required": True,
    "schema": {"type": "string", "pattern": SKILL_NAME},
}


@blp.route("/<string:name>", parameters=[NAME_PARAMETER])
class SkillItem(MethodView):
    @blp.response(200, SkillSchema)
    @error_response(blp, 404, "`not_found`: no such agent or skill.")
    def get(self, agent_id: uuid.UUID, name: str) -> sa.Row:
        """One skill with its body."""
        return _skill(agent_id, name)

    @blp.arguments(SkillPutSchema)
    @blp.response(200, SkillSchema)
    @error_response(blp, 404, NOT_FOUND)
    def put(self, body: dict, agent_id: uuid.UUID, name: str) -> sa.Row:
        """Replace a skill's description, body and allowed tools (omitted fields are reset)."""
        skill = found(tenancy.store().skills.update(agent_id, name, **body), "skill")
        _audit("skill.update", skill)
        return skill

    @blp.response(204)
    @error_response(blp, 404, NOT_FOUND)
    def delete(self, agent_id: uuid.UUID, name: str) -> None:
        """Delete a skill."""
        skill = _skill(agent_id, name)
        tenancy.store().skills.delete(agent_id, name)
        _audit("skill.delete", skill)
