"""A native deferral: an Anthropic agent's deferred tools sent with ``defer_loading`` and Anthropic's BM25
search (no hango ``tool_search``), the provider's search result revealing the tools it references,
the inspector's figures and wire view as the provider counts and receives them."""

from __future__ import annotations

import uuid

from hango.agent.toolset import TOOL_SEARCH
from hango.messages import ToolUseBlock
from hango.store import TenantStore
from tests.fakes.anthropic_tool_search import BM25, search_answer
from tests.fakes.provider_server import CHAT_COMPLETIONS, MESSAGES
from tests.inspector.conftest import Lab, by_id, user
from tests.inspector.test_deferred_tools import GIT_TOOLS, LOADED, results_of
from tests.support.mcp import store_server
from tests.support.queue import drain

DEFERRED = ["grep", *(f"git__{name}" for name in GIT_TOOLS)]  # the names the model calls
SEARCH_TOOL = {"type": "tool_search_tool_bm25_20251119", "name": BM25}


def native_agent(lab: Lab) -> str:
    """An Anthropic agent with three loaded built-ins, ``grep`` and the ``git`` server deferred natively."""
    defer = {"tools": ["tool:grep", "tool:git/*"], "native": True}
    agent = lab.agent(tools=[*LOADED, "grep"], defer=defer)
    lab.store(lambda s: store_server(s, uuid.UUID(agent), "git", GIT_TOOLS))
    return agent


def test_a_native_request_carries_the_deferred_definitions_marked_defer_loading_and_the_bm25_tool(lab: Lab):
    session = lab.session(native_agent(lab), [user("hi")])

    wire = lab.inspect(session, format="anthropic")
    lab.say(session, "go")

    tools = lab.fake.bodies(MESSAGES)[0]["tools"]
    names = [t.get("name") for t in tools]
    assert names[: len(LOADED)] == LOADED and TOOL_SEARCH not in names
    assert sorted(names[len(LOADED) : -1]) == sorted(DEFERRED) and tools[-1] == SEARCH_TOOL
    assert all(t.get("defer_loading") is True for t in tools[len(LOADED) : -1])
    assert not any("defer_loading" in t for t in tools[: len(LOADED)])
    assert wire["tools"] == tools  # the wire view shows exactly what is sent


def test_a_natively_deferred_tool_is_shown_deferred_and_not_counted_until_referenced(lab: Lab):
    session = lab.session(native_agent(lab), [user("hi")])

    body = lab.inspect(session)

    parts = by_id(body)
    for part in ["tool:grep", *(f"tool:git/{name}" for name in GIT_TOOLS)]:
        assert parts[part]["deferred"] is True and parts[part]["included"] is False, part
        assert parts[part]["tokens"] > 0
    assert f"tool:{TOOL_SEARCH}" not in parts
    assert body["total_before"] == body["total_after"]


def test_a_native_search_referencing_a_tool_then_its_call_runs_the_tool_and_the_inspector_shows_it_revealed(
    lab: Lab,
):
    session = lab.session(native_agent(lab), [user("hi")])
    lab.fake.reply(
        search_answer("find text in files", ["grep"], ToolUseBlock("g1", "grep", {"pattern": "hello"})),
        "done",
    )

    assert lab.say(session, "look for hello").status_code == 201

    messages = lab.messages(session)
    answer = next(m for m in messages if any(b["type"] == "tool_search_tool_result" for b in m["content"]))
    assert [b["type"] for b in answer["content"]] == [
        "server_tool_use",
        "tool_search_tool_result",
        "tool_use",
    ]
    assert not results_of(messages)["g1"].get("is_error")  # the referenced tool ran in the same answer
    first, second = lab.fake.bodies(MESSAGES)
    assert second["tools"] == first["tools"]  # a reveal changes no tool: the cached prefix holds
    replayed = next(m for m in second["messages"] if m["role"] == "assistant")
    assert [b["type"] for b in replayed["content"]][:2] == ["server_tool_use", "tool_search_tool_result"]
    parts = by_id(lab.inspect(session))
    assert parts["tool:grep"]["revealed_at"] == answer["seq"] and parts["tool:grep"]["included"] is True
    assert parts["tool:grep"]["deferred"] is False
    assert parts["tool:git/git_log"]["deferred"] is True  # the others stay deferred


def test_a_native_deferral_on_a_run_whose_model_is_not_anthropic_keeps_hangos_tool_search(lab: Lab):
    defer = {"tools": ["tool:grep"], "native": True}
    agent = lab.agent(
        model="openai/gpt-test", tools=[*LOADED, "grep"], defer=defer
    )  # the store does not check
    session = lab.session(agent, [user("hi")])

    assert lab.say(session, "go").status_code == 201

    names = [t["function"]["name"] for t in lab.fake.bodies(CHAT_COMPLETIONS)[0]["tools"]]
    assert TOOL_SEARCH in names and "grep" not in names


def test_a_natively_revealed_tool_whose_search_a_compaction_summarized_is_sent_loaded(lab: Lab):
    session = lab.session(native_agent(lab), [user("hi")])
    lab.fake.reply(search_answer("find text in files", ["grep"], "found it"))
    assert lab.say(session, "look for hello").status_code == 201
    lab.summary(
        session, lab.messages(session)[-1]["seq"], "The user asked to look for hello; grep was found."
    )

    lab.fake.reply("ok")
    assert lab.say(session, "again").status_code == 201

    tools = {t.get("name"): t for t in lab.fake.bodies(MESSAGES)[-1]["tools"]}
    assert "defer_loading" not in tools["grep"]  # no reference left to load it from: sent loaded
    assert tools["git__git_log"]["defer_loading"] is True and BM25 in tools
    assert by_id(lab.inspect(session))["tool:grep"]["included"] is True


def test_a_try_s_native_search_reveals_in_its_own_state_only(lab: Lab):
    session = lab.session(native_agent(lab), [user("hi")])
    lab.fake.reply(search_answer("find text", ["grep"], ToolUseBlock("g1", "grep", {"pattern": "x"})), "ok")

    tried = lab.try_(session, {"message": "look for hello", "mode": "turn"})
    assert tried.status_code == 202, tried.get_json()
    drain(lab.who.client.application)

    assert lab.who.get(f"/v1/runs/{tried.get_json()['id']}").get_json()["status"] == "completed"
    with lab.engine.connect() as conn:
        assert TenantStore(conn, lab.tenant_id).revealed_tools.for_session(uuid.UUID(session)) == []
    assert by_id(lab.inspect(session))["tool:grep"]["deferred"] is True
