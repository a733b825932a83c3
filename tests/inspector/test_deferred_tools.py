"""Deferred tools: not sent until hango's ``tool_search`` reveals them, shown by the inspector as deferred
with per-server subtotals, revealed for the rest of the session (stored), after the tools sent first."""

from __future__ import annotations

import uuid
from typing import Any

from hango.agent.toolset import TOOL_SEARCH
from hango.messages import Message, ToolUseBlock
from hango.store import TenantStore
from tests.fakes.provider_server import MESSAGES
from tests.inspector.conftest import Lab, by_id, excluding, user
from tests.support.mcp import store_server

GIT_TOOLS = ["git_log", "git_status", "git_diff"]
LOADED = ["ls", "read_file", "write_file"]


def sent_tools(lab: Lab, index: int = -1) -> list[str]:
    """The tool names of the ``index``-th /v1/messages body the fake provider received, in order."""
    return [tool["name"] for tool in lab.fake.bodies(MESSAGES)[index]["tools"]]


def deferring_agent(lab: Lab, **defer: Any) -> str:
    """An agent with three loaded built-ins, ``grep`` deferred and the ``git`` server's tools deferred."""
    agent = lab.agent(tools=[*LOADED, "grep"], defer={"tools": ["tool:grep", "tool:git/*"], **defer})
    lab.store(lambda s: store_server(s, uuid.UUID(agent), "git", GIT_TOOLS))
    return agent


def groups(body: dict[str, Any]) -> dict[str | None, dict[str, Any]]:
    return {group["server"]: group for group in body["tool_groups"]}


def test_a_deferred_tool_is_not_sent_and_the_inspector_shows_it_deferred_with_per_server_subtotals(lab: Lab):
    agent = deferring_agent(lab)
    session = lab.session(agent, [user("hi")])

    body = lab.inspect(session)
    lab.say(session, "go")

    parts = by_id(body)
    deferred = ["tool:grep", *(f"tool:git/{name}" for name in GIT_TOOLS)]
    assert sent_tools(lab, 0) == [*LOADED, TOOL_SEARCH]  # nothing deferred is sent; the search is
    for part in deferred:
        assert parts[part]["deferred"] is True and parts[part]["included"] is False, part
        assert parts[part]["tokens"] > 0 and parts[part]["revealed_at"] is None
    assert parts[f"tool:{TOOL_SEARCH}"]["included"] is True
    git, built_in = groups(body)["git"], groups(body)[None]
    git_tokens = sum(parts[f"tool:git/{name}"]["tokens"] for name in GIT_TOOLS)
    assert (git["sent"], git["tokens"], git["deferred"], git["deferred_tokens"]) == (0, 0, 3, git_tokens)
    assert (built_in["deferred"], built_in["deferred_tokens"]) == (1, parts["tool:grep"]["tokens"])
    # a deferred tool is no override's doing: the totals before and after overrides both leave it out
    assert body["total_before"] == body["total_after"]
    search = next(t for t in lab.fake.bodies(MESSAGES)[0]["tools"] if t["name"] == TOOL_SEARCH)
    assert "git" in search["description"] and "1 built-in tool" in search["description"]


def test_a_run_searches_finds_a_deferred_tool_and_calls_it_and_the_reveal_is_sent_after_the_loaded_tools(
    lab: Lab,
):
    agent = deferring_agent(lab)
    session = lab.session(agent, [user("hi")])
    lab.fake.reply(
        Message("assistant", (ToolUseBlock("s1", TOOL_SEARCH, {"query": "find text in files by pattern"}),)),
        Message("assistant", (ToolUseBlock("g1", "grep", {"pattern": "hello"}),)),
        "done",
    )
    assert lab.say(session, "look for hello").status_code == 201

    first, second, third = (sent_tools(lab, i) for i in range(3))
    assert "grep" not in first
    assert second[: len(first)] == first and "grep" in second[len(first) :]  # revealed after the loaded ones
    assert second == third
    found = lab.fake.bodies(MESSAGES)[1]["messages"][-1]["content"][0]
    assert found["tool_use_id"] == "s1" and not found.get("is_error") and "grep" in found["content"]
    called = lab.fake.bodies(MESSAGES)[2]["messages"][-1]["content"][0]
    assert called["tool_use_id"] == "g1" and not called.get("is_error")
    asked = next(m["seq"] for m in lab.messages(session) if any(b.get("id") == "s1" for b in m["content"]))
    parts = by_id(lab.inspect(session))
    assert parts["tool:grep"]["revealed_at"] == asked and parts["tool:grep"]["included"] is True
    assert parts["tool:grep"]["deferred"] is False


def test_a_reveal_survives_a_new_app_and_an_exclusion_leaves_the_revealed_tool_out(lab: Lab, make_lab):
    agent = deferring_agent(lab)
    session = lab.session(agent, [user("hi")])
    lab.fake.reply(
        Message("assistant", (ToolUseBlock("s1", TOOL_SEARCH, {"query": "git history of commits"}),)), "ok"
    )
    assert lab.say(session, "what changed?").status_code == 201

    again = make_lab()  # another app: nothing kept in a worker's memory
    revealed = [p for p in again.inspect(session)["tools"] if p["revealed_at"] is not None]
    assert "tool:git/git_log" in [p["id"] for p in revealed] and all(p["included"] for p in revealed)
    assert again.put_agent(agent, excluding("tool:git/git_log")).status_code == 200
    parts = by_id(again.inspect(session))
    assert parts["tool:git/git_log"]["included"] is False and parts["tool:git/git_log"]["deferred"] is False


def test_a_try_reveals_in_its_own_state_only(lab: Lab):
    agent = deferring_agent(lab)
    session = lab.session(agent, [user("hi")])
    lab.fake.reply(
        Message("assistant", (ToolUseBlock("s1", TOOL_SEARCH, {"query": "search file contents"}),)), "ok"
    )
    tried = lab.try_(session, {"message": "look for hello", "turns": 3})
    assert tried.status_code in (200, 202), tried.get_json()

    with lab.engine.connect() as conn:
        assert TenantStore(conn, lab.tenant_id).revealed_tools.for_session(uuid.UUID(session)) == []
    assert by_id(lab.inspect(session))["tool:grep"]["deferred"] is True


def test_auto_defers_the_servers_tools_exactly_past_the_threshold_and_the_list_does_not_flap(lab: Lab):
    agent = lab.agent(tools=LOADED, context_window=100_000, defer={"tools": [], "auto_percent": 10})
    lab.store(lambda s: store_server(s, uuid.UUID(agent), "git", GIT_TOOLS))
    session = lab.session(agent, [user("hi")])
    git = groups(lab.inspect(session))["git"]
    share = git["tokens"] * 100 / 100_000  # the git tools' share of the window, all sent: under 10 %
    assert git["deferred"] == 0 and share < 10

    # the same tools, a window that makes them just past the threshold, and just under it
    past = int(git["tokens"] * 100 / 10) - 1
    under = past + 2
    for window, expected in ((past, 3), (under, 0), (past, 3)):
        assert lab.who.patch(f"/v1/agents/{agent}", json={"context_window": max(window, 1024)}).status_code == 200
        if window < 1024:
            continue
        shown = [groups(lab.inspect(session))["git"]["deferred"] for _ in range(3)]
        assert shown == [expected] * 3, (window, shown)
