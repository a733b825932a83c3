"""MCP servers: ``/v1/mcp-servers`` (the tenant's servers) and ``/v1/agents/{id}/mcp-servers`` (attached)."""

from __future__ import annotations

import uuid

import sqlalchemy as sa
from flask import current_app, g
from flask.views import MethodView
from marshmallow import Schema, fields, validate

from blueprints.common import ReasonSchema, error_response, found, page_of, paged
from hango import tenancy
from hango.api import Blueprint
from hango.mcp import servers, tool_lists
from hango.mcp.addresses import MAX_URL
from hango.mcp.catalog import MAX_NAME, NAME, NAME_RULE
from hango.store.pages import Page

blp = Blueprint("mcp_servers", __name__, url_prefix="/v1", description="MCP servers")

NOT_FOUND = "`not_found`: no such MCP server (or agent), or the caller may not change it."
FAILED = "`mcp_server_failed`: the server could not be reached, or did not list its tools in time."


class McpToolSchema(Schema):
    name = fields.String()
    description = fields.String()
    input_schema = fields.Dict()
    unavailable = fields.Function(
        tool_lists.unavailable,
        allow_none=True,
        metadata={"description": "why hango never sends this tool (`task_required`), or null"},
    )


class McpServerSchema(Schema):
    id = fields.UUID(dump_only=True)
    name = fields.String(
        required=True,
        validate=validate.And(
            validate.Length(min=1, max=MAX_NAME, error=f"a server name is {NAME_RULE}"),
            validate.Regexp(NAME.pattern, error=f"a server name is {NAME_RULE}"),
        ),
    )
    catalog = fields.String(
        allow_none=True,
        validate=validate.Length(max=32),
        metadata={"description": "the name of an operator catalog (stdio) server"},
    )
    url = fields.String(
        allow_none=True,
        validate=validate.Length(max=MAX_URL),
        metadata={"description": "a Streamable HTTP endpoint; it must resolve to a public address"},
    )
    headers = fields.Dict(
        keys=fields.String(),
        values=fields.String(),
        load_only=True,
        metadata={"description": "sent with every request (a bearer token...); write-only, stored encrypted"},
    )
    header_names = fields.List(fields.String(), dump_only=True)
    tools = fields.List(fields.Nested(McpToolSchema), dump_only=True, allow_none=True)
    tools_hash = fields.String(dump_only=True, allow_none=True)
    tools_read_at = fields.DateTime(dump_only=True, allow_none=True)
    created_at = fields.DateTime(dump_only=True)


class RefreshSchema(ReasonSchema):
    """Why the tool list is read again (optional)."""


class AttachSchema(Schema):
    tools = fields.List(
        fields.String(validate=validate.Length(min=1, max=128)),
        allow_none=True,
        load_default=None,
        validate=validate.Length(max=1000),
        metadata={"description": "the server's tools the agent gets; null or left out: all of them"},
    )


class AttachedSchema(McpServerSchema):
    chosen = fields.List(fields.String(), dump_only=True, allow_none=True, data_key="chosen_tools")


McpServerPageSchema = page_of(McpServerSchema, "McpServerPage")
AttachedListSchema = Schema.from_dict(
    {"items": fields.List(fields.Nested(AttachedSchema))}, name="AttachedMcpServers"
)


def _config():
    return current_app.config["HANGO"]


def _detail(server: sa.Row, **more) -> dict:
    """What an audit row says of a server: its name and kind, never its URL's secrets or headers."""
    return {"name": server.name, "transport": "stdio" if server.catalog else "http", **more}


def _changed(before: sa.Row, after: sa.Row) -> bool:
    """Whether reading the server's tools found another list than the one stored (a cache-miss cause for
    every agent it is attached to); a first reading changes nothing that was sent."""
    return before.tools_hash is not None and before.tools_hash != after.tools_hash


@blp.route("/mcp-servers")
class McpServerList(MethodView):
    @paged(blp)
    @blp.response(200, McpServerPageSchema)
    def get(self, args: dict) -> Page:
        """List the tenant's MCP servers with their stored tool lists."""
        return tenancy.store().mcp_servers.page(args["cursor"], args["limit"])

    @blp.arguments(McpServerSchema)
    @blp.response(201, McpServerSchema)
    @error_response(blp, 409, "`name_taken`: the tenant has a server with this name.")
    @error_response(
        blp, 422, "`invalid`: the body is not valid, or gives neither or both of catalog and url."
    )
    @error_response(blp, 503, "`secret_key_missing`: headers need HANGO_SECRET_KEY on the server.")
    def post(self, body: dict) -> sa.Row:
        """Register an MCP server: an operator catalog server by name, or a Streamable HTTP URL (owners and admins)."""
        server = servers.register(tenancy.store(), _config(), tenancy.principal().user_id, body)
        tenancy.audit("mcp_server.create", "mcp_server", server.id, _detail(server))
        return server


@blp.route("/mcp-servers/<uuid:server_id>")
class McpServerItem(MethodView):
    @blp.response(200, McpServerSchema)
    @error_response(blp, 404, NOT_FOUND)
    def get(self, server_id: uuid.UUID) -> sa.Row:
        """One MCP server with its stored tool list (never its header values)."""
        return g.mcp_server

    @blp.response(204)
    @error_response(blp, 404, NOT_FOUND)
    def delete(self, server_id: uuid.UUID) -> None:
        """Delete an MCP server; the agents it was attached to lose its tools (owners and admins)."""
        tenancy.store().mcp_servers.delete(server_id)
        tenancy.audit("mcp_server.delete", "mcp_server", server_id, _detail(g.mcp_server))


@blp.route("/mcp-servers/<uuid:server_id>/refresh")
class McpServerRefresh(MethodView):
    @blp.arguments(RefreshSchema, required=False)
    @blp.response(200, McpServerSchema)
    @error_response(blp, 404, NOT_FOUND)
    @error_response(blp, 502, FAILED)
    def post(self, body: dict, server_id: uuid.UUID) -> sa.Row:
        """Read the server's tool list again and store it with its hash (owners and admins)."""
        server = servers.read_tools(tenancy.store(), _config(), g.mcp_server)
        detail = _detail(
            server,
            tools=len(server.tools),
            tools_hash=server.tools_hash,
            tools_changed=_changed(g.mcp_server, server),
            reason=body["reason"],
        )
        tenancy.audit("mcp_server.refresh", "mcp_server", server_id, detail)
        return server


@blp.route("/agents/<uuid:agent_id>/mcp-servers")
class AgentMcpServers(MethodView):
    @blp.response(200, AttachedListSchema)
    @error_response(blp, 404, "`not_found`: no such agent.")
    def get(self, agent_id: uuid.UUID) -> dict:
        """The MCP servers attached to the agent, with their stored tool lists and the tools chosen."""
        return {"items": tenancy.store().mcp_servers.for_agent(agent_id)}


@blp.route("/agents/<uuid:agent_id>/mcp-servers/<uuid:server_id>")
class AgentMcpServer(MethodView):
    @blp.arguments(AttachSchema)
    @blp.response(200, AttachedSchema)
    @error_response(blp, 404, NOT_FOUND)
    @error_response(
        blp, 422, "`unknown_tool`: the server lists no such tool. `invalid`: the body is not valid."
    )
    @error_response(blp, 502, FAILED)
    def put(self, body: dict, agent_id: uuid.UUID, server_id: uuid.UUID) -> sa.Row:
        """Attach an MCP server to the agent (all its tools, or those named): its tools are listed and stored now."""
        store = tenancy.store()
        stored = found(store.mcp_servers.get(server_id), "MCP server")
        server = servers.read_tools(store, _config(), stored)
        chosen = servers.chosen_tools(server, body["tools"])
        store.mcp_servers.attach(agent_id, server_id, chosen)
        detail = _detail(server, tools=chosen, tools_changed=_changed(stored, server))
        tenancy.audit("agent.mcp_attach", "agent", agent_id, detail)
        return next(row for row in store.mcp_servers.for_agent(agent_id) if row.id == server_id)

    @blp.response(204)
    @error_response(blp, 404, NOT_FOUND)
    def delete(self, agent_id: uuid.UUID, server_id: uuid.UUID) -> None:
        """Detach an MCP server from the agent."""
        store = tenancy.store()
        server = found(store.mcp_servers.get(server_id), "MCP server")
        found(store.mcp_servers.detach(agent_id, server_id) or None, "attached MCP server")
        tenancy.audit("agent.mcp_detach", "agent", agent_id, _detail(server))
