"""A whole-turn try says what its ``tool_search`` calls did: each query, the tools it revealed, whether the
turn then called one, beside the deferral the try ran with (the A/B of a server deferred or not)."""

from __future__ import annotations

from typing import Any

from hango.agent.toolset import TOOL_SEARCH
from hango.messages import Message, ToolUseBlock
from tests.inspector.conftest import Lab, user
from tests.inspector.test_deferred_tools import deferring_agent, sent_tools
from tests.support.queue import drain


def turn(lab: Lab, session: str, body: dict[str, Any]) -> dict[str, Any]:
    """Queue a whole-turn try, run it on the worker, and read its run back."""
    sent = lab.try_(session, {"mode": "turn", "message": "look for hello", **body})
    assert sent.status_code == 202, sent.get_json()
    drain(lab.who.client.application)
    run = lab.who.get(f"/v1/runs/{sent.get_json()['id']}")
    assert run.status_code == 200 and run.get_json()["status"] == "completed", run.get_json()
    return run.get_json()["result"]


def test_a_turn_try_result_says_what_each_search_revealed_and_whether_the_turn_called_it(lab: Lab):
    session = lab.session(deferring_agent(lab), [user("hi")])
    lab.fake.reply(
        Message("assistant", (ToolUseBlock("s1", TOOL_SEARCH, {"query": "read a file's contents"}),)),
        Message("assistant", (ToolUseBlock("r1", "read_file", {"path": "/notes.md"}),)),
        "done",
    )
    result = turn(lab, session, {"defer": ["tool:read_file"]})

    assert [t["name"] for t in result["tools"]] == [TOOL_SEARCH, "read_file"]
    (search,) = result["searches"]
    assert search["query"] == "read a file's contents"
    assert search["revealed"] == ["tool:read_file", "tool:grep"] and search["called"] == ["read_file"]
    assert result["deferral"] == {"defer": ["tool:read_file"], "undefer": []}
    assert "read_file" not in sent_tools(lab, -3) and "read_file" in sent_tools(lab, -2)


def test_a_turn_try_that_undefers_a_server_calls_its_tool_with_no_search(lab: Lab):
    session = lab.session(deferring_agent(lab), [user("hi")])
    first = lab.try_(session, {"undefer": ["tool:git/*"]})
    assert first.status_code == 200, first.get_json()
    git_log = next(name for name in sent_tools(lab) if name.endswith("git_log"))
    lab.fake.reply(Message("assistant", (ToolUseBlock("g1", git_log, {"repo_path": "/"}),)), "done")
    result = turn(lab, session, {"undefer": ["tool:git/*"]})

    assert [t["name"] for t in result["tools"]] == [git_log]
    assert result["searches"] == []
    assert result["deferral"] == {"defer": [], "undefer": ["tool:git/*"]}
    assert git_log in sent_tools(lab, -2) and TOOL_SEARCH in sent_tools(lab, -2)  # grep stays deferred


def test_a_turn_try_whose_search_finds_nothing_called_says_so(lab: Lab):
    session = lab.session(deferring_agent(lab), [user("hi")])
    lab.fake.reply(
        Message("assistant", (ToolUseBlock("s1", TOOL_SEARCH, {"query": "git history of commits"}),)), "done"
    )
    result = turn(lab, session, {})

    (search,) = result["searches"]
    assert search["revealed"] == ["tool:git/git_diff", "tool:git/git_log", "tool:git/git_status"]
    assert search["called"] == [] and result["deferral"] == {"defer": [], "undefer": []}


def test_a_turn_try_lists_no_search_for_a_tool_search_that_failed(lab: Lab):
    agent = lab.agent(tools=["ls", "read_file"])  # defers nothing: no tool_search to call
    session = lab.session(agent, [user("hi")])
    lab.fake.reply(Message("assistant", (ToolUseBlock("s1", TOOL_SEARCH, {"query": "anything"}),)), "done")
    result = turn(lab, session, {})

    assert [(t["name"], t["is_error"]) for t in result["tools"]] == [(TOOL_SEARCH, True)]
    assert result["searches"] == []
