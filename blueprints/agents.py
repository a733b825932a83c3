"""Agents: ``/v1/agents``."""

from __future__ import annotations

from flask import g
from flask.views import MethodView
from marshmallow import Schema, ValidationError, fields, validate, validates

from blueprints.common import JsonInteger, page_of, paged
from hango import contract, tenancy
from hango.agent import options
from hango.api import Blueprint

blp = Blueprint("agents", __name__, url_prefix="/v1/agents", description="Agents")


class AgentSchema(Schema):
    id = fields.UUID(dump_only=True)
    owner_id = fields.UUID(dump_only=True)
    name = fields.String(required=True, validate=validate.Length(min=1, max=200))
    model = fields.String(
        load_default=options.DEFAULT_MODEL,
        validate=validate.Length(min=3, max=200),
        metadata={
            "pattern": f"^({'|'.join(options.PROVIDERS)})/[^\\x00]+$",
            "description": "<provider>/<model>",
        },
    )
    system_prompt = fields.String(load_default="", validate=validate.Length(max=200_000))
    tools = fields.List(
        fields.String(validate=validate.OneOf(options.BUILTIN_TOOLS)),
        load_default=lambda: list(options.BUILTIN_TOOLS),
        validate=validate.Length(max=len(options.BUILTIN_TOOLS)),
        metadata={"uniqueItems": True},
    )
    settings = fields.Dict(
        keys=fields.String(),
        load_default=dict,
        metadata={"additionalProperties": {"$ref": f"#/components/schemas/{contract.JSON_VALUE}"}},
    )
    context_window = JsonInteger(
        load_default=options.DEFAULT_CONTEXT_WINDOW,
        validate=validate.Range(min=1024, max=options.MAX_CONTEXT_WINDOW),
    )
    created_at = fields.DateTime(dump_only=True)
    updated_at = fields.DateTime(dump_only=True)

    @validates("model")
    def _model(self, value: str, **_kw) -> None:
        provider, _, name = value.partition("/")
        if provider not in options.PROVIDERS or not name:
            raise ValidationError(f"model must be <provider>/<model> with a provider in {options.PROVIDERS}")

    @validates("settings")
    def _settings(self, value: dict, **_kw) -> None:
        if any(contract.json_depth(v) > contract.JSON_DEPTH for v in value.values()):
            raise ValidationError(
                f"settings values nest at most {contract.JSON_DEPTH} arrays or objects deep"
            )

    @validates("tools")
    def _tools(self, value: list[str], **_kw) -> None:
        if len(set(value)) != len(value):
            raise ValidationError("tools must not repeat")


class AgentPatchSchema(AgentSchema):
    class Meta:
        partial = True


AgentPageSchema = page_of(AgentSchema, "AgentPage")


@blp.route("")
class AgentList(MethodView):
    @paged(blp)
    @blp.response(200, AgentPageSchema)
    def get(self, args: dict) -> dict:
        """List the tenant's agents."""
        result = tenancy.store().agents.page(args["cursor"], args["limit"])
        return {"items": result.items, "next_cursor": result.next_cursor}

    @blp.arguments(AgentSchema)
    @blp.response(201, AgentSchema)
    def post(self, body: dict):
        """Create an agent owned by the caller."""
        agent = tenancy.store().agents.create(tenancy.principal().user_id, **body)
        tenancy.audit("agent.create", "agent", agent.id, {"model": agent.model})
        return agent


@blp.route("/<uuid:agent_id>")
class AgentItem(MethodView):
    @blp.response(200, AgentSchema)
    def get(self, agent_id):
        """One agent."""
        return g.agent

    @blp.arguments(AgentPatchSchema(partial=True))
    @blp.response(200, AgentSchema)
    def patch(self, body: dict, agent_id):
        """Change an agent's model, prompt, tools, settings or context window."""
        agent = tenancy.store().agents.update(agent_id, **body) if body else g.agent
        tenancy.audit("agent.update", "agent", agent_id, {"fields": sorted(body)})
        return agent

    @blp.response(204)
    def delete(self, agent_id) -> None:
        """Delete an agent with its sessions, memory and skills."""
        tenancy.store().agents.delete(agent_id)
        tenancy.audit("agent.delete", "agent", agent_id)
