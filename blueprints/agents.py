"""Agents: ``/v1/agents``."""

from __future__ import annotations

from typing import Any

from flask import g
from flask.views import MethodView
from marshmallow import Schema, ValidationError, fields, post_load, validate, validates

from blueprints.common import JsonBoolean, JsonInteger, error_response, page_of, paged
from hango import contract, tenancy
from hango.agent import options
from hango.agent.deferral import (
    AUTO_PERCENT_RANGE,
    DEFERS_EVERYTHING,
    MAX_DEFERRED,
    NATIVE_NEEDS_ANTHROPIC,
    NOTHING_DEFERRED,
    Deferral,
    check_deferral,
    check_native,
)
from hango.agent.parts import MAX_PART_CHARS, TOOL_PART_PATTERN, MalformedPart, kind_of
from hango.api import Blueprint
from hango.mcp.servers import attached_tools

blp = Blueprint("agents", __name__, url_prefix="/v1/agents", description="Agents")


TOOL_PARTS = "a built-in `tool:<name>`, an MCP server's tool `tool:<server>/<tool>` or a whole server `tool:<server>/*`"
DEFERS_EVERYTHING_ANSWER = (
    f"`invalid`: the body is not valid. `{DEFERS_EVERYTHING}`: `defer.tools` would leave none of the "
    "agent's tools (its built-ins and its attached MCP servers' tools) loaded; one must stay loaded. "
    f"`{NATIVE_NEEDS_ANTHROPIC}`: `defer.native` is true for a model that is not `anthropic/`."
)


class DeferSchema(Schema):
    """The tools the agent keeps out of a request until the model finds them with `tool_search`."""

    tools = fields.List(
        fields.String(
            validate=validate.Length(min=1, max=MAX_PART_CHARS), metadata={"pattern": TOOL_PART_PATTERN}
        ),
        load_default=list,
        validate=validate.Length(max=MAX_DEFERRED),
        metadata={"uniqueItems": True, "description": f"part ids to defer: {TOOL_PARTS}"},
    )
    auto_percent = JsonInteger(
        allow_none=True,
        load_default=None,
        validate=validate.Range(*AUTO_PERCENT_RANGE),
        metadata={
            "description": "defer every MCP server's tools when their definitions together pass this "
            "percent of the context window (built-ins never); null: never"
        },
    )

    native = JsonBoolean(
        load_default=False,
        dump_default=False,  # a deferral stored before the choice existed is hango's own
        metadata={
            "description": "true: the provider's own deferred loading (an `anthropic/` model only: the "
            "deferred definitions are sent with `defer_loading` and Anthropic's BM25 tool search finds "
            "them); false: hango's own `tool_search`, on every provider"
        },
    )

    @validates("tools")
    def _tools(self, value: list[str], **_kw) -> None:
        for part in value:
            if not _is_tool_part(part):
                raise ValidationError(f"{part[:200]!r} is not a tool part id: {TOOL_PARTS}")
        if len(set(value)) != len(value):
            raise ValidationError("defer.tools must not repeat a part")

    @post_load
    def _whole(self, data: dict, **_kw) -> dict:
        # a PATCH replaces the whole deferral: what it leaves out is nothing deferred
        return Deferral(
            tuple(data.get("tools", ())), data.get("auto_percent"), data.get("native", False)
        ).as_dict()


def _is_tool_part(part: str) -> bool:
    try:
        return kind_of(part) == "tool"
    except MalformedPart:
        return False


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
    defer = fields.Nested(DeferSchema, load_default=NOTHING_DEFERRED.as_dict)
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
    @error_response(blp, 422, DEFERS_EVERYTHING_ANSWER)
    def post(self, body: dict):
        """Create an agent owned by the caller."""
        check_deferral(Deferral.of(body["defer"]), body["tools"], ())  # no server is attached yet
        check_native(Deferral.of(body["defer"]), body["model"])
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
    @error_response(blp, 422, DEFERS_EVERYTHING_ANSWER)
    def patch(self, body: dict, agent_id):
        """Change an agent's model, prompt, tools, deferred tools, settings or context window."""
        _check_patched_deferral(g.agent, body)
        agent = tenancy.store().agents.update(agent_id, **body) if body else g.agent
        tenancy.audit("agent.update", "agent", agent_id, {"fields": sorted(body)})
        return agent

    @blp.response(204)
    def delete(self, agent_id) -> None:
        """Delete an agent with its sessions, memory and skills."""
        tenancy.store().agents.delete(agent_id)
        tenancy.audit("agent.delete", "agent", agent_id)


def _check_patched_deferral(agent: Any, body: dict) -> None:
    """The deferral checks on the agent as the PATCH leaves it (its tools, model or deferral may change)."""
    if "tools" in body or "defer" in body:
        tools, defer = body.get("tools", agent.tools), body.get("defer", agent.defer)
        check_deferral(Deferral.of(defer), tools, attached_tools(tenancy.store(), agent.id))
    if "model" in body or "defer" in body:
        check_native(Deferral.of(body.get("defer", agent.defer)), body.get("model", agent.model))
