"""Anthropic's own deferred loading through the adapter and the real SDK, against the fake server that
implements it as documented: ``defer_loading`` tools with the BM25 search, the search's blocks kept for
the next request, ``usage.server_tool_use`` read, and a request of deferred tools only refused."""

from __future__ import annotations

from dataclasses import replace

from hango.messages import Request, ServerToolBlock, ToolUseBlock, message_from_dict, message_to_dict
from hango.providers.anthropic import AnthropicProvider
from hango.providers.errors import ProviderError
from tests.fakes.anthropic_tool_search import ALL_DEFERRED, BM25, search_answer
from tests.fakes.provider_server import MESSAGES, FakeProviderServer
from tests.providers import READ_FILE, adapter_fixture, raised_by, request, user

provider = adapter_fixture(AnthropicProvider)

GREP = replace(READ_FILE, name="grep", description="Search file contents for a pattern.")
NATIVE = replace(
    request(user("find hello"), tools=(READ_FILE, replace(GREP, deferred=True))), tool_search="bm25"
)


def test_a_native_request_sends_the_deferred_definitions_with_defer_loading_and_the_bm25_search(
    server: FakeProviderServer, provider: AnthropicProvider
) -> None:
    provider.complete(NATIVE)

    tools = server.bodies(MESSAGES)[-1]["tools"]
    assert tools == [
        {"name": "read_file", "description": READ_FILE.description, "input_schema": READ_FILE.input_schema},
        {
            "name": "grep",
            "description": GREP.description,
            "input_schema": GREP.input_schema,
            "defer_loading": True,
        },
        {"type": "tool_search_tool_bm25_20251119", "name": BM25},
    ]
    assert "anthropic-beta" not in server.requests[-1].headers  # generally available: no beta header


def test_a_deferred_definition_is_no_input_until_a_tool_reference_names_it(
    server: FakeProviderServer, provider: AnthropicProvider
) -> None:
    loaded_only = provider.complete(
        replace(NATIVE, tools=(READ_FILE,), tool_search="bm25")
    ).usage.input_tokens
    assert provider.complete(NATIVE).usage.input_tokens == loaded_only

    server.reply(search_answer("pattern", ["grep"], ToolUseBlock("toolu_1", "grep", {"path": "a"})))
    answer = provider.complete(NATIVE).message
    referenced = replace(NATIVE, messages=(*NATIVE.messages, answer, user("again")))
    counted = provider.complete(referenced).usage.input_tokens
    without_grep = provider.complete(replace(referenced, tools=(READ_FILE,))).usage.input_tokens
    assert counted > without_grep  # grep's definition is input once referenced


def test_a_search_answer_keeps_its_server_blocks_for_the_next_request_and_counts_its_searches(
    server: FakeProviderServer, provider: AnthropicProvider
) -> None:
    server.reply(search_answer("pattern", ["grep"], ToolUseBlock("toolu_1", "grep", {"path": "a"})))
    response = provider.complete(NATIVE)

    use, result, call = response.message.content
    assert isinstance(use, ServerToolBlock) and use.data["type"] == "server_tool_use"
    assert use.data == {
        "type": "server_tool_use",
        "id": "srvtoolu_fake_1",
        "name": BM25,
        "input": {"query": "pattern"},
    }
    assert isinstance(result, ServerToolBlock) and result.referenced_tools == ("grep",)
    assert call == ToolUseBlock("toolu_1", "grep", {"path": "a"})
    assert (response.tool_searches, response.stop_reason) == (1, "tool_use")
    # stored and read back, the blocks go to the API as they came
    stored = message_from_dict(message_to_dict(response.message))
    assert stored == response.message
    provider.complete(replace(NATIVE, messages=(*NATIVE.messages, stored, user("go on"))))
    sent = server.bodies(MESSAGES)[-1]["messages"][1]["content"]
    assert sent[:2] == [use.data, result.data]


def test_an_answer_without_a_search_counts_no_tool_search(
    server: FakeProviderServer, provider: AnthropicProvider
) -> None:
    assert provider.complete(NATIVE).tool_searches == 0


def test_the_fake_refuses_a_request_whose_tools_are_all_deferred_with_400(
    server: FakeProviderServer, provider: AnthropicProvider
) -> None:
    every_deferred = Request("test-model", tools=(replace(GREP, deferred=True),), messages=(user("hi"),))
    failure = raised_by(lambda: provider.complete(every_deferred))

    assert isinstance(failure, ProviderError)
    assert (failure.details["status"], failure.details["provider_message"]) == (400, ALL_DEFERRED)
    assert server.requests[-1].body["tools"][0]["defer_loading"] is True


def test_a_request_without_the_search_leaves_the_history_s_search_blocks_out(
    server: FakeProviderServer, provider: AnthropicProvider
) -> None:
    server.reply(search_answer("pattern", ["grep"], ToolUseBlock("toolu_1", "grep", {"path": "a"})))
    answer = provider.complete(NATIVE).message
    loaded = request(user("find hello"), answer, user("go on"), tools=(READ_FILE, GREP))  # native left

    provider.complete(loaded)

    replayed = server.bodies(MESSAGES)[-1]["messages"][1]["content"]
    assert [b["type"] for b in replayed] == ["tool_use"]
