"""The anthropic adapter, through the real SDK, against the local fake server."""

from __future__ import annotations

from typing import Any

import pytest

from hango.messages import Block, Message, Response, TextBlock, ToolUseBlock, Usage
from hango.providers import ProviderSettings
from hango.providers.anthropic import AnthropicProvider
from hango.providers.errors import ProviderError
from tests.fakes.provider_server import COUNT_TOKENS, MESSAGES, TEST_API_KEY, FakeProviderServer
from tests.providers import READ_FILE, ErrorContract, adapter_fixture, raised_by, request, tool_turn, user

EPHEMERAL = {"type": "ephemeral"}


provider = adapter_fixture(AnthropicProvider)


class TestErrorContract(ErrorContract):
    name = "anthropic"
    model = "claude-sonnet-4-5"

    @staticmethod
    def error_body(message: str) -> dict[str, Any]:
        return {"type": "error", "error": {"type": "api_error", "message": message}}


def test_plain_text_answer(server: FakeProviderServer, provider: AnthropicProvider) -> None:
    server.reply("Bonjour.")
    response = provider.complete(request(user("hello")))

    assert response.message == Message("assistant", (TextBlock("Bonjour."),))
    assert response.stop_reason == "end_turn"
    sent = server.requests[-1]
    assert sent.path == MESSAGES
    assert sent.headers["authorization"] == f"Bearer {TEST_API_KEY}"
    assert sent.body == {
        "model": "test-model",
        "max_tokens": 4096,
        "messages": [{"role": "user", "content": [{"type": "text", "text": "hello"}]}],
    }


def test_tool_use_and_result_reach_the_wire_in_the_api_shape(
    server: FakeProviderServer, provider: AnthropicProvider
) -> None:
    provider.complete(request(user("read /a"), *tool_turn(), tools=(READ_FILE,)))

    body = server.requests[-1].body
    assert body["tools"] == [
        {"name": "read_file", "description": "Read a file.", "input_schema": READ_FILE.input_schema}
    ]
    assert body["messages"][1:] == [
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Let me look."},
                {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "/a"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "no such file", "is_error": True}
            ],
        },
    ]


def test_tool_use_answer_comes_back_canonical(
    server: FakeProviderServer, provider: AnthropicProvider
) -> None:
    call = ToolUseBlock("toolu_9", "read_file", {"path": "/notes.md"})
    server.reply(Message("assistant", (TextBlock("Reading."), call)))

    response = provider.complete(request(user("read notes"), tools=(READ_FILE,)))

    assert response.message.content == (TextBlock("Reading."), call)
    assert response.stop_reason == "tool_use"


def test_cache_control_goes_on_flagged_system_blocks_and_a_flagged_message_last_block(
    server: FakeProviderServer, provider: AnthropicProvider
) -> None:
    call, result = tool_turn()
    system = (Block("agent"), Block("skills", cache_control=True), Block("todo"))
    flagged = Message("user", (*result.content, TextBlock("go on")), cache_control=True)

    provider.complete(request(user("go"), call, flagged, system=system, tools=(READ_FILE,)))

    body = server.requests[-1].body
    assert body["system"] == [
        {"type": "text", "text": "agent"},
        {"type": "text", "text": "skills", "cache_control": EPHEMERAL},
        {"type": "text", "text": "todo"},
    ]
    marked = [
        (i, j)
        for i, m in enumerate(body["messages"])
        for j, b in enumerate(m["content"])
        if "cache_control" in b
    ]
    assert marked == [(2, 1)]
    assert "cache_control" not in body["tools"][0]


def test_consecutive_same_role_messages_are_merged(
    server: FakeProviderServer, provider: AnthropicProvider
) -> None:
    call, result = tool_turn()
    # A run stopped at max_turns on the tool results; the next user text is its own message.
    provider.complete(request(user("read /a"), call, result, user("and now?", cache_control=True)))

    messages = server.requests[-1].body["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    assert [b["type"] for b in messages[2]["content"]] == ["tool_result", "text"]
    assert messages[2]["content"][-1] == {"type": "text", "text": "and now?", "cache_control": EPHEMERAL}


def test_blank_text_blocks_are_not_sent(server: FakeProviderServer, provider: AnthropicProvider) -> None:
    call = Message("assistant", (TextBlock(" "), ToolUseBlock("toolu_1", "read_file", {})))
    provider.complete(request(user("x"), call, tool_turn()[1]))

    assert [b["type"] for b in server.requests[-1].body["messages"][1]["content"]] == ["tool_use"]


def test_usage_maps_cache_tokens(server: FakeProviderServer, provider: AnthropicProvider) -> None:
    server.reply(Response(Message("assistant", (TextBlock("ok"),)), "end_turn", Usage(11, 7, 5, 3)))

    usage = provider.complete(request()).usage

    assert usage == Usage(input_tokens=11, output_tokens=7, cache_read_tokens=5, cache_write_tokens=3)


def test_missing_cache_fields_count_as_zero(server: FakeProviderServer, provider: AnthropicProvider) -> None:
    server.reply(
        {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "test-model",
            "content": [{"type": "text", "text": "ok"}],
            "stop_reason": "max_tokens",
            "usage": {"input_tokens": 4, "output_tokens": 2},
        }
    )

    response = provider.complete(request())

    assert response.usage == Usage(input_tokens=4, output_tokens=2)
    assert response.stop_reason == "max_tokens"


def test_count_tokens_asks_the_api(server: FakeProviderServer, provider: AnthropicProvider) -> None:
    server.count(1234)

    counted = provider.count_tokens(
        request(user("hi"), system=(Block("be brief", True),), tools=(READ_FILE,))
    )

    assert counted == 1234
    sent = server.requests[-1]
    assert sent.path == COUNT_TOKENS
    assert sent.body["system"] == [{"type": "text", "text": "be brief", "cache_control": EPHEMERAL}]
    assert sent.body["tools"][0]["name"] == "read_file"
    assert "max_tokens" not in sent.body


def test_count_tokens_failures_are_provider_errors(
    server: FakeProviderServer, provider: AnthropicProvider
) -> None:
    server.fail(529, path=COUNT_TOKENS)

    error = raised_by(lambda: provider.count_tokens(request()))

    assert error.details["status"] == 529


def test_the_validator_hook_answers_400_invalid_request(
    server: FakeProviderServer, provider: AnthropicProvider
) -> None:
    server.validator = lambda body: "tool_use ids without tool_result" if len(body["messages"]) > 1 else None
    provider.complete(request())

    error = raised_by(lambda: provider.complete(request(user("read /a"), tool_turn()[0])))

    assert error.details["status"] == 400
    assert error.details["provider_message"] == "tool_use ids without tool_result"
    assert len(server.requests) == 2


def test_no_key_is_a_provider_error_without_a_call(server: FakeProviderServer) -> None:
    adapter = AnthropicProvider(ProviderSettings(anthropic_base_url=server.anthropic_base_url))

    with pytest.raises(ProviderError, match="ANTHROPIC_API_KEY"):
        adapter.complete(request())

    assert server.requests == []
