"""A server's tool list, read at attach and refresh, with the hash that tells when it changed."""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any

from mcp.types import PaginatedRequestParams

from hango.mcp.connection import Connection, Limits, ServerFailure, Target

MAX_TOOLS = 1000  # more than any real server lists; a server past it is refused, nothing stored
MAX_PAGES = 50
# what a model provider accepts as a tool name, with the server's name and "__" before it
TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,30}$")


@dataclass(frozen=True)
class ToolList:
    """The tools one server listed: name, description and input schema each, and their hash."""

    tools: list[dict[str, Any]]
    hash: str


def list_hash(tools: list[dict[str, Any]]) -> str:
    """The SHA-256 of the list's canonical JSON: equal lists, equal hashes."""
    canonical = json.dumps(tools, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


def read_tool_list(target: Target, limits: Limits) -> ToolList:
    """Connect, list every page of the server's tools, disconnect; ServerFailure when it cannot."""
    connection = Connection.open(target, limits)
    try:
        tools: list[dict[str, Any]] = []
        cursor: str | None = None
        for _ in range(MAX_PAGES):
            params = PaginatedRequestParams(cursor=cursor) if cursor else None
            page = connection.request(lambda session, p=params: session.list_tools(params=p))
            tools += [_tool(tool) for tool in page.tools]
            if len(tools) > MAX_TOOLS:
                raise ServerFailure(f"server {target.name!r} lists more than {MAX_TOOLS} tools")
            cursor = page.next_cursor
            if not cursor:
                break
    finally:
        connection.close()
    names = [tool["name"] for tool in tools]
    bad = [name for name in names if not TOOL_NAME.match(name)]
    if bad or len(set(names)) != len(names):
        raise ServerFailure(
            f"server {target.name!r} lists tool names hango cannot send to a model: "
            f"{', '.join(map(repr, bad[:5])) or 'a name twice'} (1-30 letters, digits, '_' or '-')"
        )
    return ToolList(tools, list_hash(tools))


def _tool(tool: Any) -> dict[str, Any]:
    return {"name": tool.name, "description": tool.description or "", "input_schema": tool.input_schema}
