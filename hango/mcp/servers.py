"""A tenant's MCP servers: registering one, reaching it, and reading its tools into the store.

No web request talks to a server except attach and refresh (``read_tools``);
inspect, preview, suggestions and the CLI read the stored list. A worker's pool
asks ``still_attached`` which of the servers it holds connections to still exist
and are attached to an agent: the others' connections close (a delete or detach
reaches every worker process through the database, with no message to send).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from typing import Any

import sqlalchemy as sa

from hango import secret_box
from hango.config import Config
from hango.db.schema import agent_mcp_servers, mcp_servers
from hango.errors import BadGateway, Conflict, ServiceUnavailable, Unprocessable
from hango.mcp.addresses import RefusedAddress, check_endpoint, parse_url
from hango.mcp.calls import Key
from hango.mcp.catalog import catalog_servers
from hango.mcp.connection import Limits, ServerFailure, Target
from hango.mcp.tool_lists import ToolList, read_tool_list, unavailable
from hango.store import TenantStore

HEADER_NAME = re.compile(r"^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,100}$")
MAX_HEADERS = 20
MAX_HEADER_VALUE = 8_000
# headers the transport owns: a tenant setting them could confuse the session or the proxy in front
RESERVED_HEADERS = frozenset(
    {"host", "content-length", "content-type", "transfer-encoding", "connection", "accept"}
    | {"mcp-session-id", "mcp-protocol-version", "last-event-id"}
)


def register(store: TenantStore, config: Config, created_by: uuid.UUID, body: dict[str, Any]) -> sa.Row:
    """Add a catalog server by name, or a Streamable HTTP server by URL with its headers sealed."""
    name, catalog, url = body["name"], body.get("catalog"), body.get("url")
    headers: dict[str, str] = body.get("headers") or {}
    if (catalog is None) == (url is None):
        raise Unprocessable("give either catalog (an operator catalog server) or url", code="invalid")
    fields: dict[str, Any] = {"catalog": catalog, "url": url, "header_names": sorted(headers)}
    if catalog is not None:
        if headers:
            raise Unprocessable("headers go with a url, not with a catalog server", code="invalid")
        listed = catalog_servers(config)
        if catalog not in listed:
            known = ", ".join(sorted(listed)) or "none"
            raise Unprocessable(
                f"no catalog server {catalog!r} (the catalog lists: {known})", code="unknown_catalog"
            )
    else:
        _check_url(url, config)
        _check_headers(headers)
        fields["headers_sealed"] = _sealed(config, headers) if headers else None
    row = store.mcp_servers.create(created_by, name, **fields)
    if row is None:
        raise Conflict(f"the tenant already has an MCP server called {name!r}", code="name_taken")
    return row


def _check_url(url: str, config: Config) -> None:
    try:
        check_endpoint(parse_url(url), config.mcp_networks)
    except RefusedAddress as exc:
        raise Unprocessable(f"url refused: {exc}", code="address_refused") from None


def _check_headers(headers: dict[str, str]) -> None:
    if len(headers) > MAX_HEADERS:
        raise Unprocessable(f"at most {MAX_HEADERS} headers", code="invalid")
    for name, value in headers.items():
        if not HEADER_NAME.match(name) or name.lower() in RESERVED_HEADERS:
            raise Unprocessable(f"header {name[:100]!r} is not a header a server may be sent", code="invalid")
        if len(value) > MAX_HEADER_VALUE or any(c in value for c in "\r\n\x00"):
            raise Unprocessable(
                f"header {name!r}: its value is too long or holds a line break", code="invalid"
            )


def _sealed(config: Config, headers: dict[str, str]) -> bytes:
    try:
        return secret_box.seal(config.secret_key, headers)
    except secret_box.SecretKeyMissing as exc:
        raise ServiceUnavailable(str(exc), code="secret_key_missing") from None


def target(server: sa.Row, config: Config) -> Target:
    """Where ``server`` is, its headers opened; ServerFailure when the operator took its command away."""
    if server.catalog is not None:
        command = catalog_servers(config).get(server.catalog)
        if command is None:
            raise ServerFailure(
                f"server {server.name!r}: the operator's catalog no longer lists {server.catalog!r}"
            )
        return Target(server.name, command=command)
    headers: dict[str, str] = {}
    if server.headers_sealed is not None:
        try:
            headers = secret_box.unseal(config.secret_key, server.headers_sealed)
        except secret_box.SecretKeyMissing as exc:
            raise ServerFailure(f"server {server.name!r}: {exc}") from None
    return Target(server.name, url=server.url, headers=headers)


def read_tools(store: TenantStore, config: Config, server: sa.Row) -> sa.Row:
    """List the server's tools now and store the list with its hash (502 when the server fails)."""
    try:
        listing: ToolList = read_tool_list(
            target(server, config), Limits.from_config(config), config.mcp_list_timeout
        )
    except ServerFailure as exc:
        raise BadGateway(str(exc), code="mcp_server_failed") from None
    stored = store.mcp_servers.store_tools(server.id, listing.tools, listing.hash)
    assert stored is not None  # the request's transaction holds the row it just read
    return stored


def chosen_tools(server: sa.Row, tools: list[str] | None) -> list[str] | None:
    """``tools`` (None: all of them), checked against the server's stored list."""
    if tools is None:
        return None
    listed = {tool["name"] for tool in server.tools or []}
    unknown = [name for name in tools if name not in listed]
    if unknown:
        raise Unprocessable(
            f"server {server.name!r} lists no tool {', '.join(map(repr, unknown[:5]))}", code="unknown_tool"
        )
    return sorted(set(tools))


def attached_tools(store: TenantStore, agent_id: uuid.UUID) -> list[tuple[str, str]]:
    """(server, tool) of each tool the agent's attached servers' stored lists give it: the chosen ones
    hango can call (``tool_lists.unavailable``), by server then in the list's order."""
    out: list[tuple[str, str]] = []
    for server in store.mcp_servers.for_agent(agent_id):
        chosen = None if server.chosen is None else set(server.chosen)
        out += [
            (server.name, tool["name"])
            for tool in server.tools or []
            if unavailable(tool) is None and (chosen is None or tool["name"] in chosen)
        ]
    return out


def still_attached(engine: sa.Engine) -> Callable[[set[Key]], set[Key]]:
    """Of some (tenant, server) keys, the ones whose server exists and is attached to an agent."""

    def kept(keys: set[Key]) -> set[Key]:
        query = (
            sa.select(mcp_servers.c.tenant_id, mcp_servers.c.id)
            .join(
                agent_mcp_servers,
                sa.and_(
                    agent_mcp_servers.c.server_id == mcp_servers.c.id,
                    agent_mcp_servers.c.tenant_id == mcp_servers.c.tenant_id,
                ),
            )
            .where(sa.tuple_(mcp_servers.c.tenant_id, mcp_servers.c.id).in_(list(keys)))
            .distinct()
        )
        with engine.connect() as conn:
            return {(row.tenant_id, row.id) for row in conn.execute(query)}

    return kept
