"""The openai adapter, through the real SDK, against the local fake server."""

from __future__ import annotations

import json
from typing import Any

import pytest

from hango.messages import Block, Message, Response, TextBlock, ToolUseBlock, Usage
from hango.providers import ProviderSettings
from hango.providers.openai import OpenAIProvider
from tests.fakes.provider_server import CHAT_COMPLETIONS, TEST_API_KEY, FakeProviderServer
from tests.providers import READ_FILE, ErrorContract, adapter_fixture, raised_by, request, tool_turn, user

provider = adapter_fixture(OpenAIProvider)


class TestErrorContract(ErrorContract):
    name = "openai"
    model = "meta-llama/Llama-3.1-8B-Instruct"

    @staticmethod
    def error_body(message: str) -> dict[str, Any]:
        return {"error": {"message": message, "type": "server_error", "param": None, "code": None}}


def completion(
    message: dict[str, Any], finish_reason: str, usage: dict[str, Any] | None = None
) -> dict[str, Any]:
    """A raw chat completion body with one choice."""
    body = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": "test-model",
        "choices": [
            {"index": 0, "message": {"role": "assistant", **message}, "finish_reason": finish_reason}
        ],
    }
    return body | ({"usage": usage} if usage else {})


def test_plain_text_answer(server: FakeProviderServer, provider: OpenAIProvider) -> None:
    server.reply("Bonjour.")

    response = provider.complete(request(user("hello"), system=(Block("Be kind."),)))

    assert response.message == Message("assistant", (TextBlock("Bonjour."),))
    assert response.stop_reason == "end_turn"
    sent = server.requests[-1]
    assert sent.path == CHAT_COMPLETIONS
    assert sent.headers["authorization"] == f"Bearer {TEST_API_KEY}"
    assert sent.body == {
        "model": "test-model",
        "max_tokens": 4096,
        "messages": [{"role": "system", "content": "Be kind."}, {"role": "user", "content": "hello"}],
    }


def test_tool_use_and_result_reach_the_wire_as_tool_calls_and_tool_messages(
    server: FakeProviderServer, provider: OpenAIProvider
) -> None:
    call, result = tool_turn()
    results = Message("user", (*result.content, TextBlock("Try /b then.")))

    provider.complete(request(user("read /a"), call, results, tools=(READ_FILE,)))

    body = server.requests[-1].body
    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "read_file",
                "description": "Read a file.",
                "parameters": READ_FILE.input_schema,
            },
        }
    ]
    assert body["messages"][1:] == [
        {
            "role": "assistant",
            "content": "Let me look.",
            "tool_calls": [
                {
                    "id": "toolu_1",
                    "type": "function",
                    "function": {"name": "read_file", "arguments": '{"path": "/a"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "toolu_1", "content": "Error: no such file"},
        {"role": "user", "content": "Try /b then."},
    ]


def test_a_tool_call_only_assistant_message_has_null_content(
    server: FakeProviderServer, provider: OpenAIProvider
) -> None:
    call = Message("assistant", (ToolUseBlock("call_1", "read_file", {}),))

    provider.complete(request(user("x"), call, tool_turn()[1]))

    assert server.requests[-1].body["messages"][1]["content"] is None


@pytest.mark.parametrize("finish_reason", ["tool_calls", "stop"])
def test_tool_calls_come_back_as_tool_use_blocks(
    server: FakeProviderServer, provider: OpenAIProvider, finish_reason: str
) -> None:
    # Some compatible servers finish a tool call with "stop": the blocks decide.
    calls = [
        {
            "id": "call_1",
            "type": "function",
            "function": {"name": "read_file", "arguments": '{"path": "/n"}'},
        },
        {"id": "call_2", "type": "function", "function": {"name": "ls", "arguments": ""}},
    ]
    server.reply(completion({"content": None, "tool_calls": calls}, finish_reason))

    response = provider.complete(request(tools=(READ_FILE,)))

    assert response.message.content == (
        ToolUseBlock("call_1", "read_file", {"path": "/n"}),
        ToolUseBlock("call_2", "ls", {}),
    )
    assert response.stop_reason == "tool_use"


@pytest.mark.parametrize("arguments", ["{not json", "[1, 2]"])
def test_tool_call_arguments_that_are_not_a_json_object_are_a_provider_error(
    server: FakeProviderServer, provider: OpenAIProvider, arguments: str
) -> None:
    call = {"id": "call_1", "type": "function", "function": {"name": "read_file", "arguments": arguments}}
    server.reply(completion({"content": None, "tool_calls": [call]}, "tool_calls"))

    error = raised_by(lambda: provider.complete(request()))

    assert error.details == {"provider": "openai", "tool": "read_file"}


@pytest.mark.parametrize(
    ("finish_reason", "stop_reason"),
    [("stop", "end_turn"), ("length", "max_tokens"), ("content_filter", "refusal")],
)
def test_finish_reasons_map_to_stop_reasons(
    server: FakeProviderServer, provider: OpenAIProvider, finish_reason: str, stop_reason: str
) -> None:
    server.reply(completion({"content": "partial"}, finish_reason))

    assert provider.complete(request()).stop_reason == stop_reason


def test_cache_control_is_dropped(server: FakeProviderServer, provider: OpenAIProvider) -> None:
    system = (Block("agent"), Block("skills", cache_control=True))

    provider.complete(request(user("hi", cache_control=True), system=system))

    body = server.requests[-1].body
    assert "cache_control" not in json.dumps(body)
    assert body["messages"][0] == {"role": "system", "content": "agent\n\nskills"}


def test_consecutive_same_role_messages_are_merged(
    server: FakeProviderServer, provider: OpenAIProvider
) -> None:
    answer = Message("assistant", (TextBlock("one"),))

    provider.complete(
        request(user("a"), user("b"), answer, Message("assistant", (TextBlock("two"),)), user("c"))
    )

    assert server.requests[-1].body["messages"] == [
        {"role": "user", "content": "a\nb"},
        {"role": "assistant", "content": "one\ntwo"},
        {"role": "user", "content": "c"},
    ]


def test_usage_splits_cached_tokens_out_of_prompt_tokens(
    server: FakeProviderServer, provider: OpenAIProvider
) -> None:
    server.reply(Response(Message("assistant", (TextBlock("ok"),)), "end_turn", Usage(10, 5, 30, 0)))

    usage = provider.complete(request()).usage

    assert server.requests and usage == Usage(input_tokens=10, output_tokens=5, cache_read_tokens=30)


@pytest.mark.parametrize(
    ("usage", "expected"),
    [
        ({"prompt_tokens": 9, "completion_tokens": 2, "total_tokens": 11}, Usage(9, 2)),
        (None, Usage()),
    ],
)
def test_usage_without_details_or_at_all(
    server: FakeProviderServer, provider: OpenAIProvider, usage: dict[str, Any] | None, expected: Usage
) -> None:
    server.reply(completion({"content": "ok"}, "stop", usage))

    assert provider.complete(request()).usage == expected


def test_there_is_no_token_counter(server: FakeProviderServer, provider: OpenAIProvider) -> None:
    assert provider.count_tokens(request()) is None
    assert server.requests == []


def test_works_without_a_key_like_a_local_server(server: FakeProviderServer) -> None:
    adapter = OpenAIProvider(ProviderSettings(openai_base_url=server.openai_base_url, timeout=5))
    try:
        assert adapter.complete(request()).message.content == (TextBlock("Hello from the fake provider."),)
    finally:
        adapter.close()
