"""An attached MCP server's tools in the request: read from the stored list, named for their server."""

from __future__ import annotations

from typing import Any

import pytest

from hango.agent.options import BUILTIN_TOOLS
from hango.agent.parts import kind_of, tool_name, tool_part
from tests.fakes.provider_server import MESSAGES, FakeProviderServer
from tests.runtime.chat import Chat
from tests.runtime.conftest import OpenChat
from tests.support.mcp import TIME_TOOLS, attach

TIME_PARTS = sorted(f"tool:time/{name}" for name in TIME_TOOLS)
TIME_NAMES = sorted(f"time__{name}" for name in TIME_TOOLS)


def inspected(chat: Chat) -> list[dict[str, Any]]:
    response = chat.who.get(f"/v1/sessions/{chat.session_id}/context")
    assert response.status_code == 200, response.get_json()
    return response.get_json()["tools"]


def inspected_tools(chat: Chat) -> list[str]:
    """The tool parts the next call sends."""
    return sorted(part["id"] for part in inspected(chat) if part["included"])


def sent_tools(fake: FakeProviderServer) -> list[str]:
    return sorted(tool["name"] for tool in fake.bodies(MESSAGES)[-1]["tools"])


@pytest.fixture
def time_chat(open_chat: OpenChat) -> Chat:
    """An Anthropic agent with only ``read_file`` built in and the catalog's ``time`` server attached."""
    chat = open_chat("anthropic/claude-test", tools=("read_file",))
    attach(chat.who, chat.agent_id, "time", catalog="time")
    return chat


def test_an_attached_servers_tools_are_inspected_as_server_parts_and_sent_as_server_names(
    time_chat: Chat, fake: FakeProviderServer
):
    assert inspected_tools(time_chat) == sorted(["tool:read_file", *TIME_PARTS])
    tools = {part["id"]: part["tools"] for part in inspected(time_chat)}
    assert tools["tool:time/get_current_time"] == ["time/get_current_time"]

    answer = time_chat.say("What time is it?")

    assert answer.status_code == 201, answer.get_json()
    assert sent_tools(fake) == sorted(["read_file", *TIME_NAMES])


def test_inspect_reads_the_stored_list_without_starting_the_server(time_chat: Chat, monkeypatch):
    from hango.mcp import connection

    def refuse(*args, **kw):
        raise AssertionError("inspect talked to an MCP server")

    monkeypatch.setattr(connection.Connection, "open", refuse)
    assert inspected_tools(time_chat) == sorted(["tool:read_file", *TIME_PARTS])


def test_a_chosen_subset_is_all_the_agent_gets_of_a_server(open_chat: OpenChat):
    chat = open_chat("offline/echo", tools=())
    attach(chat.who, chat.agent_id, "time", ["get_current_time"], catalog="time")
    assert inspected_tools(chat) == ["tool:time/get_current_time"]


def test_an_override_excludes_one_server_tool_like_any_tool(time_chat: Chat, fake: FakeProviderServer):
    body = {"overrides": [{"part": "tool:time/convert_time", "action": "exclude"}]}
    saved = time_chat.who.put(f"/v1/agents/{time_chat.agent_id}/context-overrides", json=body)
    assert saved.status_code == 200, saved.get_json()

    assert inspected_tools(time_chat) == ["tool:read_file", "tool:time/get_current_time"]
    time_chat.say("What time is it?")
    assert sent_tools(fake) == ["read_file", "time__get_current_time"]


@pytest.mark.parametrize("name", [*BUILTIN_TOOLS, "time__get_current_time", "my-git__git_status", "a___b"])
def test_a_tool_part_and_the_name_the_model_calls_turn_into_each_other(name: str):
    part = tool_part(name)
    assert kind_of(part) == "tool"
    assert tool_name(part) == name
    assert ("/" in part) == ("__" in name)


def test_no_built_in_tool_is_named_like_a_server_tool():
    assert [name for name in BUILTIN_TOOLS if "__" in name] == []


def test_a_run_calls_the_servers_tool_and_the_model_reads_its_answer(open_chat: OpenChat):
    chat = open_chat("offline/echo", tools=())
    attach(chat.who, chat.agent_id, "time", catalog="time")

    answer = chat.say('What time is it?\n/tool time__get_current_time {"timezone": "Europe/Paris"}')

    assert answer.status_code == 201, answer.get_json()
    result = answer.get_json()["messages"][2]["content"][0]
    assert result["type"] == "tool_result" and not result["is_error"], result
    assert '"timezone": "Europe/Paris"' in result["content"]
