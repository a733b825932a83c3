"""A server's tool list, read at attach and refresh, with the hash that tells when it changed.

A listing is bounded as a whole: one deadline (``HANGO_MCP_LIST_TIMEOUT``) for the connect and
every page, at most ``MAX_PAGES`` pages, ``MAX_TOOLS`` tools, ``MAX_TOOL_BYTES`` for one tool's
definition and ``MAX_LIST_BYTES`` for the whole list (their canonical JSON). Past any of them the
listing fails naming the bound, and nothing is stored: the list stored before stays as it was.

No name the MCP specification allows refuses a server: a name a model provider cannot take is
sent under a substitute (``hango.agent.parts.model_tool_name``). A tool hango cannot call is
stored with the fact that says why (``unavailable``) and never sent.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
import time
from dataclasses import dataclass
from typing import Any

from mcp.types import PaginatedRequestParams

from hango.mcp.connection import Connection, Limits, NoAnswerInTime, ServerFailure, Target

MAX_TOOLS = 1000  # more than any real server lists
MAX_PAGES = 50
MAX_TOOL_BYTES = 64_000  # one tool's name, description and schema: a model reads all of it every turn
MAX_LIST_BYTES = 1_000_000  # the whole stored list, what every inspect and run of its agents reads
# the shape the MCP specification gives a tool's name; a part id holds it as it is
TOOL_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,128}$")
TASK_REQUIRED = "task_required"
# why a listed tool is never sent, in words the inspector shows: the one table of these reasons
UNAVAILABLE = {
    TASK_REQUIRED: 'the server runs this tool only as a task (execution.taskSupport "required"), '
    "which hango does not support",
}


class ListRefused(ServerFailure):
    """The listing passed one of its bounds; the message names it."""


@dataclass(frozen=True)
class ToolList:
    """The tools one server listed: name, description and input schema each, and their hash."""

    tools: list[dict[str, Any]]
    hash: str


def list_hash(tools: list[dict[str, Any]]) -> str:
    """The SHA-256 of the list's canonical JSON: equal lists, equal hashes."""
    return hashlib.sha256(_canonical(tools)).hexdigest()


def _canonical(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def unavailable(tool: dict[str, Any]) -> str | None:
    """Why a stored tool is never sent to a model (a key of ``UNAVAILABLE``), or None."""
    if tool.get("task_support") == "required":
        return TASK_REQUIRED
    return None


def read_tool_list(target: Target, limits: Limits, deadline: float) -> ToolList:
    """Connect and list every page of the server's tools within ``deadline`` seconds in all, then
    disconnect; ServerFailure (``ListRefused`` past a bound) when it cannot."""
    ends = time.monotonic() + deadline
    overdue = ListRefused(
        f"server {target.name!r} did not list its tools within {deadline:g} s (HANGO_MCP_LIST_TIMEOUT)"
    )
    connect = dataclasses.replace(limits, connect_timeout=min(limits.connect_timeout, deadline))
    connection = Connection.open(target, connect)
    try:
        tools: list[dict[str, Any]] = []
        cursor: str | None = None
        for _ in range(MAX_PAGES):
            left = ends - time.monotonic()
            if left <= 0:
                raise overdue
            params = PaginatedRequestParams(cursor=cursor) if cursor else None
            try:
                page = connection.request(
                    lambda session, p=params: session.list_tools(params=p), min(limits.call_timeout, left)
                )
            except NoAnswerInTime:
                if ends - time.monotonic() <= 0.5:
                    raise overdue from None
                raise
            tools += [_tool(target, tool) for tool in page.tools]
            _check_count(target, tools)
            cursor = page.next_cursor
            if not cursor:
                break
        else:
            raise ListRefused(
                f"server {target.name!r} had more tools after {MAX_PAGES} pages (MAX_PAGES): "
                "hango stores a whole list or none"
            )
    finally:
        connection.close()
    return _checked(target, tools)


def _check_count(target: Target, tools: list[dict[str, Any]]) -> None:
    if len(tools) > MAX_TOOLS:
        raise ListRefused(f"server {target.name!r} lists more than {MAX_TOOLS} tools (MAX_TOOLS)")


def _checked(target: Target, tools: list[dict[str, Any]]) -> ToolList:
    names = [tool["name"] for tool in tools]
    if len(set(names)) != len(names):
        twice = next(name for name in names if names.count(name) > 1)
        raise ServerFailure(f"server {target.name!r} lists the tool {twice[:128]!r} twice")
    size = len(_canonical(tools))
    if size > MAX_LIST_BYTES:
        raise ListRefused(
            f"server {target.name!r}: its tool list is {size:,} bytes, past {MAX_LIST_BYTES:,} (MAX_LIST_BYTES)"
        )
    return ToolList(tools, list_hash(tools))


def _tool(target: Target, tool: Any) -> dict[str, Any]:
    stored = {"name": tool.name, "description": tool.description or "", "input_schema": tool.input_schema}
    if not TOOL_NAME.match(tool.name):
        raise ListRefused(
            f"server {target.name!r} lists a tool named {tool.name[:128]!r}, outside the MCP "
            "specification's names (1-128 letters, digits, '_', '-' or '.')"
        )
    execution = getattr(tool, "execution", None)
    if execution is not None and execution.task_support == "required":
        stored["task_support"] = "required"  # only when said: the lists stored before keep their hashes
    size = len(_canonical(stored))
    if size > MAX_TOOL_BYTES:
        raise ListRefused(
            f"server {target.name!r}: the tool {tool.name!r} is {size:,} bytes, past {MAX_TOOL_BYTES:,} "
            "(MAX_TOOL_BYTES)"
        )
    return stored
