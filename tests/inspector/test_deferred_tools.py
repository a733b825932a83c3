"""Deferred tools: not sent until hango's ``tool_search`` reveals them, shown by the inspector as deferred
with per-server subtotals, revealed for the rest of the session (stored), after the tools sent first."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from hango.agent.toolset import TOOL_SEARCH
from hango.messages import Message, ToolUseBlock
from hango.store import TenantStore
from tests.fakes.provider_server import CHAT_COMPLETIONS, MESSAGES
from tests.inspector.conftest import ANTHROPIC, OFFLINE, Lab, assistant, by_id, excluding, user
from tests.ledger.helpers import oldest_first
from tests.support.mcp import store_server
from tests.support.queue import drain

GIT_TOOLS = ["git_log", "git_status", "git_diff"]
LOADED = ["ls", "read_file", "write_file"]


def sent_tools(lab: Lab, index: int = -1) -> list[str]:
    """The tool names of the ``index``-th /v1/messages body the fake provider received, in order."""
    return [tool["name"] for tool in lab.fake.bodies(MESSAGES)[index]["tools"]]


def deferring_agent(lab: Lab, model: str = ANTHROPIC) -> str:
    """An agent with three loaded built-ins, ``grep`` deferred and the ``git`` server's tools deferred."""
    agent = lab.agent(model=model, tools=[*LOADED, "grep"], defer={"tools": ["tool:grep", "tool:git/*"]})
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
    assert body["tools_sent"] == len(sent_tools(lab, 0))
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


@pytest.mark.parametrize(("model", "path"), [(ANTHROPIC, MESSAGES), ("openai/gpt-test", CHAT_COMPLETIONS)])
def test_a_run_searches_finds_a_deferred_tool_and_calls_it_and_the_reveal_is_sent_after_the_loaded_tools(
    lab: Lab, model: str, path: str
):
    agent = deferring_agent(lab, model=model)
    session = lab.session(agent, [user("hi")])
    lab.fake.reply(
        Message("assistant", (ToolUseBlock("s1", TOOL_SEARCH, {"query": "find text in files by pattern"}),)),
        Message("assistant", (ToolUseBlock("g1", "grep", {"pattern": "hello"}),)),
        "done",
    )
    assert lab.say(session, "look for hello").status_code == 201

    first, second, third = (wire_tools(body) for body in lab.fake.bodies(path))
    assert "grep" not in first and TOOL_SEARCH in first
    assert second[: len(first)] == first and "grep" in second[len(first) :]  # revealed after the loaded ones
    assert second == third
    results = results_of(lab.messages(session))
    assert "grep" in results["s1"]["content"] and not results["s1"].get("is_error")
    assert not results["g1"].get("is_error")  # the revealed tool ran
    asked = next(m["seq"] for m in lab.messages(session) if any(b.get("id") == "s1" for b in m["content"]))
    parts = by_id(lab.inspect(session))
    assert parts["tool:grep"]["revealed_at"] == asked and parts["tool:grep"]["included"] is True
    assert parts["tool:grep"]["deferred"] is False


def test_an_offline_run_searches_finds_a_deferred_tool_and_calls_it(lab: Lab):
    agent = deferring_agent(lab, model="offline/echo")
    session = lab.session(agent, [])
    assert (
        lab.say(session, '/tool tool_search {"query": "search file contents for a pattern"}').status_code
        == 201
    )
    assert lab.say(session, '/tool grep {"pattern": "hello"}').status_code == 201

    results = list(results_of(lab.messages(session)).values())
    assert "grep" in results[0]["content"] and not results[0].get("is_error")
    assert not results[1].get("is_error")  # grep ran: it was revealed by the first turn's search
    assert by_id(lab.inspect(session))["tool:grep"]["included"] is True


def wire_tools(body: dict[str, Any]) -> list[str]:
    """The tool names of a request body, Anthropic's or OpenAI's, in order."""
    return [tool.get("name") or tool["function"]["name"] for tool in body["tools"]]


def results_of(messages: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Every stored tool result, by the id of the call it answers."""
    return {b["tool_use_id"]: b for m in messages for b in m["content"] if b["type"] == "tool_result"}


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
    tried = lab.try_(session, {"message": "look for hello", "mode": "turn"})
    assert tried.status_code == 202, tried.get_json()
    drain(lab.who.client.application)

    assert lab.who.get(f"/v1/runs/{tried.get_json()['id']}").get_json()["status"] == "completed"
    assert "grep" in sent_tools(lab, 1)  # the try's next call sends what its search revealed

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
    assert past >= 1024  # a window the API takes
    for window, expected in ((past, 3), (under, 0), (past, 3)):
        assert lab.who.patch(f"/v1/agents/{agent}", json={"context_window": window}).status_code == 200
        shown = [groups(lab.inspect(session))["git"]["deferred"] for _ in range(3)]
        assert shown == [expected] * 3, (window, shown)


def test_the_call_after_a_reveal_misses_the_cache_at_the_revealed_tool_with_cause_tools_revealed(lab: Lab):
    agent = deferring_agent(lab)
    session = lab.session(agent, [user("hi " * 800)])  # a prefix past the cache's minimum
    lab.fake.reply(
        Message("assistant", (ToolUseBlock("s1", TOOL_SEARCH, {"query": "find text in files by pattern"}),)),
        Message("assistant", (ToolUseBlock("g1", "grep", {"pattern": "hello"}),)),
        "done",
    )
    assert lab.say(session, "look for hello").status_code == 201

    first, revealed, after = (call["cache"] for call in oldest_first(lab, session))
    assert first["miss_reason"] == "first_call"
    assert (revealed["miss_reason"], revealed["miss_part"]) == ("prefix_changed", "tool:grep")
    assert revealed["miss_cause"] == "tools_revealed" and "revealed a deferred tool" in revealed["words"]
    assert after["miss_cause"] != "tools_revealed"  # a reveal changes the one call after it


def test_a_try_defers_or_undefers_a_server_for_its_own_calls_only(lab: Lab):
    agent = deferring_agent(lab)
    session = lab.session(agent, [user("hi")])

    assert lab.try_(session, {"undefer": ["tool:git/*"]}).status_code == 200
    assert {"git__git_log", "git_log"} & set(sent_tools(lab)) and "grep" not in sent_tools(lab)
    assert lab.try_(session, {"defer": ["tool:read_file"]}).status_code == 200
    assert "read_file" not in sent_tools(lab) and TOOL_SEARCH in sent_tools(lab)
    lab.fake.reply(
        Message("assistant", (ToolUseBlock("s1", TOOL_SEARCH, {"query": "read a file's contents"}),)), "ok"
    )
    turn = lab.try_(session, {"mode": "turn", "message": "open it", "defer": ["tool:read_file"]})
    assert turn.status_code == 202, turn.get_json()
    drain(lab.who.client.application)
    assert "read_file" not in sent_tools(lab, -2) and "read_file" in sent_tools(
        lab, -1
    )  # found by the search

    assert lab.inspect(session)["tools"] == lab.inspect(session)["tools"]
    assert by_id(lab.inspect(session))["tool:read_file"]["deferred"] is False  # the agent's own: unchanged
    for body, code in (
        ({"undefer": ["tool:ls"]}, "not_deferred"),
        ({"defer": ["tool:nope"]}, "unknown_part"),
        ({"defer": ["tool:ls", "tool:read_file", "tool:write_file"]}, "defers_every_tool"),
    ):
        refused = lab.try_(session, body)
        assert refused.status_code == 422 and refused.get_json()["error"]["code"] == code, body


def test_a_reveal_is_kept_across_a_compaction_that_summarizes_the_search(lab: Lab):
    agent = deferring_agent(lab)
    session = lab.session(agent, [user("hi")])
    lab.fake.reply(
        Message("assistant", (ToolUseBlock("s1", TOOL_SEARCH, {"query": "find text in files by pattern"}),)),
        "found it",
    )
    assert lab.say(session, "look for hello").status_code == 201
    last = lab.messages(session)[-1]["seq"]
    lab.summary(session, last, "The user asked to look for hello; tool_search loaded grep.")

    parts = by_id(lab.inspect(session))
    assert "summary" in parts and not any(p.startswith("message:") for p in parts)  # the search is summarized
    assert parts["tool:grep"]["included"] is True and parts["tool:grep"]["revealed_at"] is not None
    lab.fake.reply("ok")
    assert lab.say(session, "again").status_code == 201
    assert "grep" in sent_tools(lab)


def test_the_inspectors_price_of_a_reveal_is_what_the_call_after_it_reads_and_writes(lab: Lab):
    agent = lab.agent(model=OFFLINE, tools=[*LOADED, "grep"], defer={"tools": ["tool:grep"]})
    session = lab.session(agent, [user("hello"), assistant("a long answer " * 400)])
    assert lab.say(session, "first").status_code == 201  # the offline provider's simulated cache holds it

    body = lab.inspect(session)
    expected, loss = body["cache"]["expected_read_tokens"], by_id(body)["tool:grep"]["cache_loss_tokens"]
    written, grep = body["next_call_cost"]["tokens"]["cache_write"], by_id(body)["tool:grep"]["tokens"]
    seq = lab.messages(session)[-1]["seq"]
    lab.store(lambda s: s.revealed_tools.reveal(uuid.UUID(session), [("tool:grep", "grep")], seq))
    assert lab.say(session, "second").status_code == 201

    call = oldest_first(lab, session)[-1]
    assert expected > 0 and loss == expected  # a reveal comes before every breakpoint: nothing is read
    assert call["usage"]["cache_read_tokens"] == expected - loss
    # what it no longer reads it writes again, with the revealed tool and what the inspect foresaw
    appended = call["estimated_input_tokens"] - body["total_after"] - grep  # the run's own user message
    assert call["usage"]["cache_write_tokens"] - appended == written + loss + grep
    assert (call["cache"]["miss_part"], call["cache"]["miss_cause"]) == ("tool:grep", "tools_revealed")
