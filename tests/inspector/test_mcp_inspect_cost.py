"""What an inspect costs with MCP servers attached, in counts that do not move with the machine's load:
the SQL statements, the tool definitions estimated again, and the toolsets made, against the number
of servers (``scripts/bench/mcp.py`` measures the time)."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from hango.agent.estimator import Estimator
from hango.agent.ledger import record
from hango.agent.middleware import mcp_tools
from hango.agent.toolset import Toolset
from hango.inspector import snapshot
from hango.store.mcp_servers import McpServers
from tests.inspector.conftest import Lab
from tests.support.mcp import store_server
from tests.support.sql import MAX_INSPECT_STATEMENTS, count_statements

TOOLS_EACH = 15
HISTORY = [
    ("user" if seq % 2 else "assistant", [{"type": "text", "text": f"message {seq}"}]) for seq in range(1, 41)
]


def session_with_servers(lab: Lab, servers: int) -> str:
    """A session of a built-in agent with ``servers`` servers of ``TOOLS_EACH`` tools attached."""
    agent = lab.agent(model="offline/echo")

    def attach(store: Any) -> None:
        for n in range(servers):
            tools = [f"tool_{k}" for k in range(TOOLS_EACH)]
            store_server(store, uuid.UUID(agent), f"a{servers}-s{n}", tools)

    lab.store(attach)
    return lab.session(agent, HISTORY)


def counted(monkeypatch: pytest.MonkeyPatch, owner: Any, name: str) -> list[int]:
    """Count the calls of ``owner.name`` from now on (one element a call)."""
    calls: list[int] = []
    original = getattr(owner, name)

    def counting(*args: Any, **kw: Any) -> Any:
        calls.append(1)
        return original(*args, **kw)

    monkeypatch.setattr(owner, name, counting)
    return calls


def test_inspect_within_1_10x_of_built_ins_only_does_no_per_part_work_that_grows_with_the_server_count(
    lab: Lab, monkeypatch: pytest.MonkeyPatch
):
    sessions = {servers: session_with_servers(lab, servers) for servers in (0, 1, 4)}
    for session in sessions.values():  # the first inspect of a stored list estimates its definitions
        assert len(lab.inspect(session)["tools"]) >= 8

    estimated = counted(monkeypatch, Estimator, "_estimate_tool")
    passes = counted(monkeypatch, Toolset, "__init__")
    # per tool, once per worker: the stored list read and parsed, the ledger's part, the inspector's view
    per_tool = [
        counted(monkeypatch, McpServers, "tool_lists"),
        counted(monkeypatch, mcp_tools, "_parsed"),
        counted(monkeypatch, record, "_sent_tool"),
        counted(monkeypatch, snapshot, "_tool_fields"),
    ]
    figures = {}
    for servers, session in sessions.items():
        for calls in (estimated, passes, *per_tool):
            calls.clear()
        with count_statements(lab.app_engine) as statements:
            inspected = lab.inspect(session)
        sent = sum(1 for part in inspected["tools"] if part["server"] is not None and part["included"])
        assert sent == servers * TOOLS_EACH
        figures[servers] = (len(statements), len(estimated), len(passes), *(len(c) for c in per_tool))

    # one query reads every attached server; a stored list's definitions are estimated once per worker,
    # not at each inspect; each reader of a call's toolset makes it once, not once a tool
    assert figures[0] == figures[1] == figures[4], figures
    assert figures[4][0] <= MAX_INSPECT_STATEMENTS and figures[4][1] == 0, figures


def test_a_repeated_inspect_reads_no_stored_tool_list_and_makes_no_tool_part_again(
    lab: Lab, monkeypatch: pytest.MonkeyPatch
):
    session = session_with_servers(lab, 2)
    reads = counted(monkeypatch, McpServers, "tool_lists")
    parsed = counted(monkeypatch, mcp_tools, "_parsed")
    sent_parts = counted(monkeypatch, record, "_sent_tool")
    views = counted(monkeypatch, snapshot, "_tool_fields")

    first = lab.inspect(session)
    # the first inspect reads both lists in one statement and makes each of their tools' part and view
    # (and a built-in's, when no request of this worker made it yet)
    assert (len(reads), len(parsed)) == (1, 2)
    assert len(sent_parts) == len(views) >= 2 * TOOLS_EACH

    for calls in (reads, parsed, sent_parts, views):
        calls.clear()
    again = lab.inspect(session)

    assert (len(reads), len(parsed), len(sent_parts), len(views)) == (0, 0, 0, 0)
    assert again["tools"] == first["tools"]
