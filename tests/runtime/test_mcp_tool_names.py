"""MCP tool names a provider cannot take, and tools hango cannot call (issue 48 §8): a name is sent under
a stable substitute whose part keeps the real name; a task-required tool is listed unavailable, never sent.

The server is the SDK's own Streamable HTTP server (``tests/fakes/mcp_list_server.py``) started here.
"""

from __future__ import annotations

import re

from hango.agent.parts import MODEL_TOOL_NAME, server_tool_name, tool_part
from tests.fakes.provider_server import MESSAGES, FakeProviderServer
from tests.runtime.conftest import OpenChat
from tests.support.mcp import attach, list_server

LOOPBACK = "127.0.0.0/8"
SERVER = "long-named-server-xy"  # 20 characters: with "__" and a 45-character tool, past 64
LONG = "test_client_elicitation_defaults_with_a_twist"  # 45 characters
DOTTED = "weather.get"


def _inspect(chat) -> dict:
    response = chat.who.get(f"/v1/sessions/{chat.session_id}/context")
    assert response.status_code == 200, response.get_json()
    return response.get_json()


def test_the_substitute_of_a_name_a_provider_cannot_take_is_stable_unique_and_fits():
    names = [LONG, LONG + "x", DOTTED, "weather_get"]
    substitutes = [server_tool_name(SERVER, name) for name in names]
    assert substitutes == [server_tool_name(SERVER, name) for name in names]  # stable
    assert len(set(substitutes)) == len(names)
    assert all(MODEL_TOOL_NAME.match(name) for name in substitutes)
    assert substitutes[0].startswith(f"{SERVER}__test_client_elicitati") and len(substitutes[0]) == 64
    assert re.fullmatch(rf"{SERVER}__weather_get_[0-9a-f]{{8}}", substitutes[2])
    assert substitutes[3] == f"{SERVER}__weather_get"  # a name a provider takes is sent as it is
    assert server_tool_name("time", LONG) == f"time__{LONG}"  # 51 characters: no substitute


def test_a_server_with_a_45_character_tool_name_attaches_and_its_tool_is_called_under_its_substitute(
    open_chat: OpenChat, fake: FakeProviderServer
):
    substitute = server_tool_name(SERVER, LONG)
    with list_server(names=[LONG, DOTTED, "plain"]) as url:
        chat = open_chat("offline/echo", tools=(), mcp_allow_networks=LOOPBACK)
        attached = attach(chat.who, chat.agent_id, SERVER, url=url)
        parts = {part["id"]: part["tools"] for part in _inspect(chat)["tools"]}
        answer = chat.say(f"Call it.\n/tool {substitute} {{}}")

        sending = open_chat("anthropic/claude-test", tools=(), mcp_allow_networks=LOOPBACK)
        attach(sending.who, sending.agent_id, "sent", url=url)
        assert sending.say("Hello").status_code == 201

    assert sorted(tool["name"] for tool in attached["tools"]) == sorted([LONG, DOTTED, "plain"])
    # the part keeps the real name, and every surface shows it (the substitute goes to the model only)
    assert parts[f"tool:{SERVER}/{LONG}"] == [f"{SERVER}/{LONG}"]
    assert parts[f"tool:{SERVER}/{DOTTED}"] == [f"{SERVER}/{DOTTED}"]
    assert tool_part(substitute) != f"tool:{SERVER}/{LONG}"  # only the definition knows its part
    assert answer.status_code == 201, answer.get_json()
    result = answer.get_json()["messages"][2]["content"][0]
    assert (result["type"], result["is_error"], result["content"]) == ("tool_result", False, f"called {LONG}")
    sent = sorted(tool["name"] for tool in fake.bodies(MESSAGES)[-1]["tools"])
    assert sent == sorted(["sent__plain", f"sent__{LONG}", server_tool_name("sent", DOTTED)])
    assert all(MODEL_TOOL_NAME.match(name) for name in sent)


def test_a_task_required_tool_is_listed_as_unavailable_and_never_sent(
    open_chat: OpenChat, fake: FakeProviderServer
):
    with list_server(names=["plain", "needs_task"], task_required=["needs_task"]) as url:
        chat = open_chat("anthropic/claude-test", tools=(), mcp_allow_networks=LOOPBACK)
        attached = attach(chat.who, chat.agent_id, "tasks", url=url)
        inspected = _inspect(chat)
        answer = chat.say("Hello")
        offline = open_chat("offline/echo", tools=(), mcp_allow_networks=LOOPBACK)
        attach(offline.who, offline.agent_id, "tasks-again", url=url)
        called = offline.say("Call it.\n/tool tasks-again__needs_task {}")

    listed = {tool["name"]: tool["unavailable"] for tool in attached["tools"]}
    assert listed == {"plain": None, "needs_task": "task_required"}
    assert [part["id"] for part in inspected["tools"]] == ["tool:tasks/plain"]
    group = next(g for g in inspected["tool_groups"] if g["server"] == "tasks")
    assert [(u["tool"], u["reason"]) for u in group["unavailable"]] == [("needs_task", "task_required")]
    assert "only as a task" in group["unavailable"][0]["why"]
    assert group["tools"] == 1
    assert answer.status_code == 201, answer.get_json()
    assert [tool["name"] for tool in fake.bodies(MESSAGES)[-1]["tools"]] == ["tasks__plain"]
    result = called.get_json()["messages"][2]["content"][0]
    assert result["is_error"] and "called needs_task" not in result["content"]
