"""offline/echo: deterministic, describes what it received, calls tools on ``/tool`` lines; and the registry."""

from __future__ import annotations

import pytest

from hango.messages import Block, Message, TextBlock, ToolDef, ToolResultBlock, ToolUseBlock, text_of
from hango.providers import ProviderSettings, UnknownProvider, provider_for
from hango.providers.offline import LABEL, OfflineProvider
from tests.providers import READ_FILE, request, tool_turn, user

LS = ToolDef("ls", "List files.", {"type": "object"})
offline = OfflineProvider()


def test_same_request_same_answer() -> None:
    ask = request(user("hello\n/tool ls {}"), system=(Block("a"),), tools=(LS,))

    assert offline.complete(ask) == OfflineProvider().complete(ask)


def test_the_answer_describes_the_request_and_says_it_is_not_a_model() -> None:
    long_text = "x" * 250
    history = (user("first"), Message("assistant", (TextBlock("ok"),)), user(long_text))

    response = offline.complete(request(*history, system=(Block("s1"), Block("s2")), tools=(READ_FILE, LS)))

    text = text_of(response.message)
    assert text.startswith(LABEL)
    assert "not a language model" in LABEL
    assert "2 system block(s), 2 tool(s) (read_file, ls) and 3 message(s)" in text
    assert f'Last user text: "{"x" * 200}…"' in text
    assert response.stop_reason == "end_turn"


def test_one_tool_line_makes_one_tool_call() -> None:
    response = offline.complete(request(user('please\n/tool read_file {"path": "/notes.md"}')))

    assert response.stop_reason == "tool_use"
    text, call = response.message.content
    assert isinstance(text, TextBlock) and "Calling 1 tool(s): read_file." in text.text
    assert call == ToolUseBlock("toolu_offline_1_0", "read_file", {"path": "/notes.md"})


def test_several_tool_lines_make_several_calls_in_one_answer() -> None:
    ask = request(
        user("a"),
        Message("assistant", (TextBlock("b"),)),
        user('/tool ls {}\n  /tool read_file {"path": "/a"}'),
    )

    calls = [b for b in offline.complete(ask).message.content if isinstance(b, ToolUseBlock)]

    assert calls == [
        ToolUseBlock("toolu_offline_3_0", "ls", {}),
        ToolUseBlock("toolu_offline_3_1", "read_file", {"path": "/a"}),
    ]


@pytest.mark.parametrize(
    "line",
    ['/tool read_file {"path": }', "/tool read_file [1]", "/tool {}", '/tool read file {"a": 1}', "/tool"],
)
def test_a_malformed_tool_line_calls_nothing_and_says_so(line: str) -> None:
    response = offline.complete(request(user(f"/tool ls {{}}\n{line}")))

    assert response.stop_reason == "end_turn"
    assert [type(b) for b in response.message.content] == [TextBlock]
    assert "is malformed, so no tool was called" in text_of(response.message)


def test_after_tool_results_it_summarizes_instead_of_calling_again() -> None:
    asked = user("/tool ls {}\n/tool read_file {}")
    calls = Message("assistant", (ToolUseBlock("t0", "ls", {}), ToolUseBlock("t1", "read_file", {})))
    results = Message(
        "user", (ToolResultBlock("t0", "a.md b.md"), ToolResultBlock("t1", "y" * 150, is_error=True))
    )

    response = offline.complete(request(asked, calls, results))

    assert response.stop_reason == "end_turn"
    assert [type(b) for b in response.message.content] == [TextBlock]
    text = text_of(response.message)
    assert "Received 2 tool result(s):" in text
    assert '- t0: "a.md b.md"' in text
    assert f'- t1 (error): "{"y" * 100}…"' in text


def test_tool_results_with_new_user_text_are_read_as_text() -> None:
    call, result = tool_turn()
    merged = Message("user", (*result.content, TextBlock("/tool ls {}")))

    response = offline.complete(request(user("go"), call, merged))

    assert response.stop_reason == "tool_use"


def test_usage_is_a_deterministic_size_count_and_there_is_no_counter() -> None:
    small = offline.complete(request(user("hi")))
    large = offline.complete(request(user("hi " * 400)))

    assert 1 <= small.usage.input_tokens < large.usage.input_tokens
    assert large.usage.output_tokens >= 1
    assert (large.usage.cache_read_tokens, large.usage.cache_write_tokens) == (0, 0)
    assert offline.count_tokens(request()) is None


def test_provider_for_splits_the_model_name() -> None:
    settings = ProviderSettings()
    adapter, model = provider_for("offline/echo", settings)

    assert isinstance(adapter, OfflineProvider)
    assert model == "echo"
    assert provider_for("offline/echo", settings)[0] is adapter


@pytest.mark.parametrize("model", ["gemini/pro", "echo", "offline/", "/echo", ""])
def test_an_unknown_provider_is_a_value_error(model: str) -> None:
    with pytest.raises(UnknownProvider) as raised:
        provider_for(model, ProviderSettings())

    assert isinstance(raised.value, ValueError)
