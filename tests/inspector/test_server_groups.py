"""The inspector per MCP server (issue 39, part 3): tools grouped by server, a server excluded as a whole.

The servers are the operator catalog's reference ``mcp-server-git`` (12 tools) and ``mcp-server-time``
(2), attached through the API; the fake provider records what each call sent.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from hango.mcp import connection
from hango.mcp.tool_lists import list_hash
from tests.fakes.provider_server import MESSAGES
from tests.inspector.conftest import OFFLINE, Lab, assistant, by_id, excluding, override_set, user
from tests.inspector.test_suggestions import answered, of_kind, suggestions
from tests.ledger.helpers import diff, oldest_first
from tests.support.clients import error_code
from tests.support.mcp import BIN, TIME_TOOLS, attach, write_catalog

GIT = "tool:git/*"
CATALOG_TIME = {"command": str(BIN / "mcp-server-time")}
PARIS = ["--local-timezone", "Europe/Paris"]


@pytest.fixture
def agent(lab: Lab) -> str:
    """An agent with two built-in tools and the ``git`` and ``time`` servers attached."""
    agent = lab.agent(tools=["read_file", "ls"])
    attach(lab.who, agent, "git", catalog="git")
    attach(lab.who, agent, "time", catalog="time")
    return agent


def groups(body: dict[str, Any]) -> dict[str | None, dict[str, Any]]:
    return {group["server"]: group for group in body["tool_groups"]}


def preview(lab: Lab, session: str, body: dict[str, Any]) -> dict[str, Any]:
    response = lab.who.post(f"/v1/sessions/{session}/context/preview", json=body)
    assert response.status_code == 200, response.get_json()
    return response.get_json()


def sent_names(lab: Lab) -> list[str]:
    return sorted(tool["name"] for tool in lab.fake.bodies(MESSAGES)[-1]["tools"])


def test_inspect_groups_tools_by_server_with_a_subtotal_each(lab: Lab, agent: str):
    body = lab.inspect(lab.session(agent, [user("hello")]))

    assert [(g["server"], g["label"], g["part"], g["tools"]) for g in body["tool_groups"]] == [
        (None, "built-in", None, 2),
        ("git", "server git", GIT, 12),
        ("time", "server time", "tool:time/*", len(TIME_TOOLS)),
    ]
    for group in body["tool_groups"]:
        mine = [p for p in body["tools"] if p["server"] == group["server"]]
        assert len(mine) == group["tools"] == group["sent"]
        assert group["tokens"] == group["tokens_before"] == sum(p["tokens"] for p in mine) > 0
        assert group["override"] is None and group["stale"] is False
    assert {p["id"]: p["server"] for p in body["tools"]}["tool:git/git_status"] == "git"
    assert sum(g["tokens"] for g in body["tool_groups"]) == sum(p["tokens"] for p in body["tools"])


def test_excluding_a_server_drops_all_its_tools_and_prices_the_cache_loss(lab: Lab, agent: str):
    session = lab.session(agent, [user("hello")])
    assert lab.say(session, "first call").status_code == 201
    before = lab.inspect(session)
    git = groups(before)["git"]

    shown = preview(lab, session, {"agent": excluding(GIT)})

    pending = shown["pending"]
    assert pending["tokens_saved"] == git["tokens"]
    # the tools come first in the cached prefix: what is still sent of it is written again, the
    # server's own tools are saved, not lost
    assert 0 < pending["cache_loss_tokens"] < git["cache_loss_tokens"]
    after = groups(shown)["git"]
    assert (after["override"], after["sent"], after["tokens"], after["tokens_before"]) == (
        "exclude",
        0,
        0,
        git["tokens_before"],
    )
    git_parts = [p for p in shown["tools"] if p["server"] == "git"]
    assert {(p["included"], p["override"], p["excluded_by"]) for p in git_parts} == {(False, None, GIT)}
    assert groups(shown)["time"]["sent"] == len(TIME_TOOLS)

    saved = lab.put_agent(agent, excluding(GIT))
    assert saved.status_code == 200, saved.get_json()
    saved_view = lab.inspect(session)
    assert groups(saved_view)["git"] == after
    assert saved_view["total_after"] == shown["total_after"] < before["total_after"]
    sent_tokens = sum(p["tokens"] for p in saved_view["tools"] if p["included"])
    assert sent_tokens == sum(p["tokens"] for p in before["tools"]) - git["tokens"]
    assert lab.say(session, "again").status_code == 201
    assert sent_names(lab) == sorted(["ls", "read_file", *(f"time__{name}" for name in TIME_TOOLS)])


def test_a_servers_exclusion_and_one_of_its_tools_stand_side_by_side(lab: Lab, agent: str):
    session = lab.session(agent, [user("hello")])
    saved = lab.put_agent(agent, excluding(GIT, "tool:time/convert_time"))
    assert saved.status_code == 200, saved.get_json()

    body = lab.inspect(session)

    time = groups(body)["time"]
    assert (time["override"], time["sent"], time["tools"]) == (None, 1, 2)
    assert by_id(body)["tool:time/convert_time"]["override"] == "exclude"
    assert by_id(body)["tool:time/convert_time"]["excluded_by"] is None


def test_a_server_exclusion_leaves_out_the_tools_a_refresh_adds(lab: Lab, agent: str):
    """The override names the server, not its tools of today: a tool its list gains is left out too."""
    session = lab.session(agent, [user("hello")])
    assert lab.put_agent(agent, excluding(GIT)).status_code == 200

    def gain_a_tool(store):
        server = next(s for s in store.mcp_servers.for_agent(uuid.UUID(agent)) if s.name == "git")
        listed = [*server.tools, {"name": "git_blame", "description": "who wrote it", "input_schema": {}}]
        store.mcp_servers.store_tools(server.id, listed, list_hash(listed))

    lab.store(gain_a_tool)
    body = lab.inspect(session)

    assert (groups(body)["git"]["tools"], groups(body)["git"]["sent"]) == (13, 0)
    assert by_id(body)["tool:git/git_blame"]["excluded_by"] == GIT
    assert [p["id"] for p in body["tools"] if p["stale"]] == []


def test_a_detached_servers_exclusion_is_kept_and_shown_stale(lab: Lab, agent: str):
    session = lab.session(agent, [user("hello")])
    assert lab.put_agent(agent, excluding(GIT)).status_code == 200
    [git] = [
        s for s in lab.who.get(f"/v1/agents/{agent}/mcp-servers").get_json()["items"] if s["name"] == "git"
    ]
    assert lab.who.delete(f"/v1/agents/{agent}/mcp-servers/{git['id']}").status_code == 204

    body = lab.inspect(session)

    stale = by_id(body)[GIT]
    assert (stale["stale"], stale["included"], stale["server"], stale["label"]) == (
        True,
        False,
        "git",
        "server git",
    )
    assert (groups(body)["git"]["tools"], groups(body)["git"]["stale"]) == (0, True)
    assert lab.put_agent(agent, excluding(GIT)).status_code == 200  # resending the stored set keeps it


def test_a_server_part_is_refused_where_no_such_server_is_attached_or_replaced(lab: Lab, agent: str):
    session = lab.session(agent, [user("hello")])

    unknown = lab.put_agent(agent, excluding("tool:github/*"))
    replaced = lab.put_agent(agent, override_set(replace={GIT: "fewer tools"}))

    assert (unknown.status_code, error_code(unknown)) == (422, "unknown_part")
    assert (replaced.status_code, error_code(replaced)) == (422, "replace_not_allowed_for_tools")
    assert lab.inspect(session)["tool_groups"][1]["override"] is None


def test_a_try_can_leave_a_server_out_for_one_call(lab: Lab, agent: str):
    session = lab.session(agent, [user("hello")])

    answer = lab.try_(session, {"exclude": [GIT]})

    assert answer.status_code == 200, answer.get_json()
    assert answer.get_json()["excluded"] == [GIT]
    assert sent_names(lab) == sorted(["ls", "read_file", *(f"time__{name}" for name in TIME_TOOLS)])


def test_unused_tool_offers_a_server_none_of_whose_tools_was_called_as_one_exclusion(make_lab):
    lab = make_lab(suggest_tool_min_answers=3)
    agent = lab.agent(model=OFFLINE, tools=["ls"])
    attach(lab.who, agent, "git", catalog="git")
    attach(lab.who, agent, "time", catalog="time")
    history = [
        user("what time is it, and what is here?"),
        *answered("time__get_current_time", "12:00", timezone="UTC"),
        *answered("ls", "a.txt", path="/"),
        assistant("noon, and a.txt"),
    ]
    session = lab.session(agent, history)
    before = lab.inspect(session)
    git = groups(before)["git"]

    found = of_kind(suggestions(lab, session), "unused_tool")

    # the time server was called, so only its unused tool is offered, on its own
    assert [(s["parts"], s["target"]) for s in found] == [
        ([GIT], "agent"),
        (["tool:time/convert_time"], "agent"),
    ]
    server = found[0]
    assert server["reason"].startswith(
        f"server `git`: 12 tools, {git['tokens']:,} tokens a call, 0 calls in the last 3 answers"
    )
    assert server["tokens_saved"] == git["tokens"]
    assert found[1]["reason"].startswith(
        "none of the agent's last 3 assistant messages called time/convert_time;"
    )

    # one click: the suggestion's parts saved as the agent's exclusions
    assert lab.put_agent(agent, excluding(*server["parts"])).status_code == 200
    after = lab.inspect(session)
    assert before["total_after"] - after["total_after"] == server["tokens_saved"]
    assert groups(after)["git"]["override"] == "exclude"
    assert [s["parts"] for s in of_kind(suggestions(lab, session), "unused_tool")] == [
        ["tool:time/convert_time"]
    ]


def test_inspect_preview_and_suggestions_read_the_stored_lists_without_reaching_a_server(
    lab: Lab, agent: str, monkeypatch
):
    session = lab.session(agent, [user("hello")])

    def refuse(*args, **kw):
        raise AssertionError("the inspector talked to an MCP server")

    monkeypatch.setattr(connection.Connection, "open", refuse)

    assert groups(lab.inspect(session))["git"]["tools"] == 12
    assert groups(preview(lab, session, {"agent": excluding(GIT)}))["git"]["sent"] == 0
    found = suggestions(lab, session)  # from the stored lists: deferring each server is the one suggestion
    assert found and {s["kind"] for s in found} == {"defer_server"}
    assert "tool:git/*" in [p for s in found for p in s["parts"]]
    assert lab.put_agent(agent, excluding(GIT)).status_code == 200


def time_server(lab: Lab, agent: str) -> dict[str, Any]:
    return next(
        s for s in lab.who.get(f"/v1/agents/{agent}/mcp-servers").get_json()["items"] if s["name"] == "time"
    )


def first_difference(lab: Lab, session: str, **query: str) -> tuple[str, str]:
    found = diff(lab, session, **query)["first_difference"]
    return found["part"], found["cause"]


def test_a_stored_tool_list_with_a_new_hash_is_the_named_cause_of_the_next_calls_change(
    lab: Lab, agent: str, make_lab, tmp_path
):
    session = lab.session(agent, [user("hello")])
    assert lab.say(session, "first call").status_code == 201
    time = time_server(lab, agent)
    assert lab.put_agent(agent, excluding("tool:time/convert_time")).status_code == 200
    assert lab.who.post(f"/v1/mcp-servers/{time['id']}/refresh").status_code == 200  # the same list
    # a reading that found the same list changed nothing: the exclusion saved before it is the cause
    assert first_difference(lab, session, to="next") == ("tool:time/convert_time", "override_saved")

    # the operator's catalog now starts the server with another local zone: its schemas name it
    paris = make_lab(mcp_catalog=write_catalog(tmp_path, time={**CATALOG_TIME, "args": PARIS}))
    refreshed = paris.who.post(f"/v1/mcp-servers/{time['id']}/refresh")
    assert refreshed.status_code == 200, refreshed.get_json()
    assert refreshed.get_json()["tools_hash"] != time["tools_hash"]

    assert first_difference(lab, session, to="next") == ("tool:time/get_current_time", "server_tools_changed")
    assert lab.say(session, "again").status_code == 201
    earlier, later = (call["id"] for call in oldest_first(lab, session))
    between = {"from": earlier, "to": later}
    assert first_difference(lab, session, **between) == ("tool:time/get_current_time", "server_tools_changed")


def test_a_server_detached_from_the_agent_is_a_tool_list_change(lab: Lab, agent: str):
    session = lab.session(agent, [user("hello")])
    assert lab.say(session, "first call").status_code == 201

    assert (
        lab.who.delete(f"/v1/agents/{agent}/mcp-servers/{time_server(lab, agent)['id']}").status_code == 204
    )

    part, cause = first_difference(lab, session, to="next")
    assert (part.startswith("tool:time/"), cause) == (True, "tool_list_changed")


def test_a_server_wide_override_is_the_named_cause_at_each_of_its_tools_in_either_direction(
    lab: Lab, agent: str
):
    session = lab.session(agent, [user("hello")])
    assert lab.say(session, "first call").status_code == 201
    assert lab.put_agent(agent, excluding("tool:time/*")).status_code == 200

    part, cause = first_difference(lab, session, to="next")
    assert (part.startswith("tool:time/"), cause) == (True, "override_saved")

    assert lab.say(session, "without the time server").status_code == 201
    older, newer = (call["id"] for call in oldest_first(lab, session))
    forward = first_difference(lab, session, **{"from": older, "to": newer})
    backward = first_difference(lab, session, **{"from": newer, "to": older})
    assert forward == backward == (part, "override_saved")

    # the exclusion cleared brings the tools back: that clearing is the cause, forward and backward
    assert lab.put_agent(agent, override_set()).status_code == 200
    assert first_difference(lab, session, to="next") == (part, "override_saved")
    assert lab.say(session, "with it again").status_code == 201
    _, middle, newest = (call["id"] for call in oldest_first(lab, session))
    assert first_difference(lab, session, **{"from": newest, "to": middle}) == (part, "override_saved")


def test_messages_only_the_newer_call_sends_are_new_messages_whichever_call_the_diff_starts_from(
    lab: Lab, agent: str
):
    session = lab.session(agent, [user("hello")])
    assert lab.say(session, "first call").status_code == 201
    assert lab.say(session, "second call").status_code == 201
    older, newer = (call["id"] for call in oldest_first(lab, session))

    forward = first_difference(lab, session, **{"from": older, "to": newer})
    backward = first_difference(lab, session, **{"from": newer, "to": older})

    assert forward[1] == backward[1] == "new_messages"
    assert forward[0].startswith("message:") and backward[0].startswith("message:")
