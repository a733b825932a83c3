"""An MCP tool call as the ledger, inspect and the CLI show it: ``<server>/<tool>`` with its server beside
it, never the model's ``<server>__<tool>`` (which stays on the wire), after a real call of the reference
``time`` server over stdio."""

from __future__ import annotations

from typing import Any

import pytest

from hango.cli.context_calls import render_call
from tests.runtime.chat import Chat
from tests.runtime.conftest import OpenChat
from tests.support.mcp import attach

CALLED = "time/get_current_time"


@pytest.fixture
def called(open_chat: OpenChat) -> Chat:
    """An offline agent with the ``time`` server that called its tool, then answered once more."""
    chat = open_chat("offline/echo", tools=("read_file",))
    attach(chat.who, chat.agent_id, "time", catalog="time")
    answer = chat.say('What time is it?\n/tool time__get_current_time {"timezone": "UTC"}')
    assert answer.status_code == 201, answer.get_json()
    assert chat.say("Thanks.").status_code == 201
    return chat


def newest_call(chat: Chat) -> dict[str, Any]:
    calls = chat.who.get(f"/v1/sessions/{chat.session_id}/calls?limit=1").get_json()["items"]
    answer = chat.who.get(f"/v1/sessions/{chat.session_id}/calls/{calls[0]['id']}")
    assert answer.status_code == 200, answer.get_json()
    return answer.get_json()


def test_the_ledger_names_an_mcp_tool_server_slash_tool_with_its_server_field(called: Chat):
    parts = {part["id"]: part for part in newest_call(called)["parts"]}

    tool = parts[f"tool:{CALLED}"]
    assert (tool["label"], tool["server"]) == (CALLED, "time")
    assert (parts["tool:read_file"]["label"], parts["tool:read_file"]["server"]) == ("read_file", None)
    labels = [part["label"] for part in parts.values() if part["kind"] == "message"]
    assert [label for label in labels if "time" in label.partition("·")[2]] == [
        f"#2 assistant · text, tool_use {CALLED}",
        f"#3 user · tool_result {CALLED}",
    ]
    assert not [part for part in parts.values() if "__" in part["label"]]
    assert {part["server"] for part in parts.values() if part["kind"] != "tool"} == {None}


def test_inspect_names_the_tools_a_message_calls_as_server_slash_tool(called: Chat):
    inspect = called.who.get(f"/v1/sessions/{called.session_id}/context").get_json()

    tools = {part["id"]: part["tools"] for part in (*inspect["tools"], *inspect["messages"])}
    assert tools[f"tool:{CALLED}"] == [CALLED]
    assert (tools["message:2"], tools["message:3"]) == ([CALLED], [CALLED])


def test_the_cli_shows_the_server_beside_each_mcp_tool_part_of_a_call(called: Chat):
    lines = render_call(newest_call(called), 120)

    [tool] = [line for line in lines if f"tool:{CALLED}" in line]
    assert f"server time · {CALLED}: " in tool
    [built_in] = [line for line in lines if "tool:read_file" in line]
    assert "server" not in built_in
    assert not [line for line in lines if "tool_use time__" in line or "tool_result time__" in line]
    assert len([line for line in lines if f"tool_use {CALLED}" in line]) == 1
