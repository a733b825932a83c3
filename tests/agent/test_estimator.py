"""The Estimator: additive over a request's parts, monotone, and close to a real BPE."""

from __future__ import annotations

import json
import weakref
from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hango.agent.estimator import (
    ESTIMATOR_VERSION,
    Estimator,
    Weights,
    estimate_block,
    estimate_content,
    estimate_message,
    estimate_request,
    estimate_text,
    estimate_tool,
)
from hango.messages import (
    Block,
    ContentBlock,
    Message,
    Request,
    TextBlock,
    ToolDef,
    ToolResultBlock,
    ToolUseBlock,
    holds_text,
    is_sent,
    text_of,
)

# Token counts of the Claude BPE in anthropic-tokenizer 0.1.0 (see docs/estimator.md),
# pinned here so that the heuristic cannot drift far without a failing test.
REFERENCE = {
    "The scheduler keeps a queue of pending jobs and wakes a worker whenever a new job arrives. "
    "When the cache misses, the request falls through to the database, which is slower but always correct.": 38,
    'def load_config(path: str) -> dict[str, Any]:\n    """Read the JSON config at ``path``."""\n'
    '    with open(path, encoding="utf-8") as handle:\n        return json.load(handle)\n': 51,
    json.dumps(
        {
            "name": "read_file",
            "description": "Read a file from the workspace.",
            "input_schema": {
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "Path relative to the root."},
                    "limit": {"type": "integer"},
                },
                "required": ["path"],
            },
        }
    ): 69,
    "Mỗi tenant có khóa API, agent và phiên làm việc riêng, không chia sẻ dữ liệu với nhau. "
    "Mô hình đọc toàn bộ cuộc hội thoại ở mỗi lượt.": 87,
    "thanks so much, that worked perfectly 🎉🙏👍🏽 see you tomorrow 👋🏻😀": 29,
    "550e8400-e29b-41d4-a716-446655440000 2025-03-14T10:22:00Z count=48213\n"
    "4f3c2a1 fix the cache key for tenants\n": 53,
}

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3)
    ),
    max_leaves=8,
)
json_objects = st.dictionaries(st.text(max_size=8), json_values, max_size=4)
texts = st.text(max_size=120)
content_blocks = st.one_of(
    st.builds(TextBlock, text=texts),
    st.builds(ToolUseBlock, id=st.text(max_size=30), name=st.text(max_size=20), input=json_objects),
    st.builds(ToolResultBlock, tool_use_id=st.text(max_size=30), content=texts, is_error=st.booleans()),
)
messages = st.builds(
    Message,
    role=st.sampled_from(["user", "assistant"]),
    content=st.lists(content_blocks, max_size=4).map(tuple),
    cache_control=st.booleans(),
)
requests = st.builds(
    Request,
    model=st.just("model"),
    system=st.lists(st.builds(Block, text=texts, cache_control=st.booleans()), max_size=4).map(tuple),
    tools=st.lists(
        st.builds(ToolDef, name=st.text(max_size=20), description=texts, input_schema=json_objects),
        max_size=4,
    ).map(tuple),
    messages=st.lists(messages, max_size=8).map(tuple),
    max_tokens=st.integers(1, 100_000),
)


@given(requests)
def test_request_estimate_is_the_sum_of_its_parts(request: Request) -> None:
    parts = (
        sum(estimate_block(b) for b in request.system)
        + sum(estimate_tool(t) for t in request.tools)
        + sum(estimate_message(m) for m in request.messages)
    )
    assert estimate_request(request) == parts


@given(requests, st.data())
def test_dropping_messages_lowers_the_estimate_by_exactly_theirs(
    request: Request, data: st.DataObject
) -> None:
    keep = data.draw(st.lists(st.booleans(), min_size=len(request.messages), max_size=len(request.messages)))
    kept = tuple(m for m, k in zip(request.messages, keep, strict=True) if k)
    dropped = sum(estimate_message(m) for m, k in zip(request.messages, keep, strict=True) if not k)
    smaller = Request(model=request.model, system=request.system, tools=request.tools, messages=kept)
    assert estimate_request(smaller) == estimate_request(request) - dropped


@given(messages)
def test_message_estimate_is_its_framing_plus_its_sent_blocks(message: Message) -> None:
    sent = sum(estimate_content(b) for b in message.content if is_sent(b))
    assert estimate_message(message) == Weights().message + sent


@given(messages, content_blocks)
def test_adding_a_block_raises_the_message_estimate_by_what_is_sent(
    message: Message, block: ContentBlock
) -> None:
    longer = Message(role=message.role, content=(*message.content, block))
    if is_sent(block):
        assert estimate_message(longer) > estimate_message(message)
    else:  # a blank text, which no adapter sends
        assert estimate_message(longer) == estimate_message(message)


@given(texts, texts)
def test_longer_text_never_estimates_lower(head: str, tail: str) -> None:
    whole = estimate_text(head + tail)
    assert whole >= estimate_text(head)
    assert whole >= estimate_text(tail)


@given(st.text(min_size=1))
def test_any_nonempty_text_costs_at_least_one_token(text: str) -> None:
    assert estimate_text(text) >= 1


def test_empty_text_costs_nothing_and_blank_text_costs_one() -> None:
    assert estimate_text("") == 0
    assert estimate_text("   ") == 1


def test_lone_surrogates_are_estimated_without_error() -> None:
    assert estimate_text("broken \ud83d pair") >= 3


@pytest.mark.parametrize(("text", "tokens"), REFERENCE.items())
def test_estimate_is_close_to_the_reference_bpe_and_errs_high(text: str, tokens: int) -> None:
    assert tokens <= estimate_text(text) <= tokens * 1.2


def test_diacritics_and_emoji_cost_more_than_plain_ascii() -> None:
    assert estimate_text("người Việt Nam") > estimate_text("nguoi Viet Nam") + 3
    assert estimate_text("ok 👍🎉🙏") >= estimate_text("ok") + 6


def test_ids_and_hashes_cost_more_than_words_of_the_same_length() -> None:
    assert estimate_text("9f86d081884c7d659a2feaa0c55ad015") > 3 * estimate_text(
        "international collaborations"
    )


def test_tool_estimate_covers_name_description_and_schema() -> None:
    bare = ToolDef(name="read_file", description="", input_schema={})
    described = ToolDef(name="read_file", description="Read one file from the workspace.", input_schema={})
    schema = {"type": "object", "properties": {"path": {"type": "string"}}}
    full = ToolDef(name="read_file", description="Read one file from the workspace.", input_schema=schema)
    assert estimate_tool(bare) < estimate_tool(described) < estimate_tool(full)


def test_tool_blocks_count_their_ids_inputs_and_error_flag() -> None:
    small = ToolUseBlock(id="toolu_1", name="grep", input={})
    large = ToolUseBlock(id="toolu_1", name="grep", input={"pattern": "def estimate_", "path": "hango/agent"})
    assert estimate_content(large) > estimate_content(small) + 5
    ok = ToolResultBlock(tool_use_id="toolu_1", content="3 matches")
    failed = ToolResultBlock(tool_use_id="toolu_1", content="3 matches", is_error=True)
    assert estimate_content(failed) == estimate_content(ok) + Weights().error_flag


def test_framing_is_folded_into_each_part() -> None:
    bare = Estimator(Weights(system_block=0, message=0, text_block=0))
    text = "A short system prompt."
    assert bare.estimate_block(Block(text)) == estimate_text(text)
    assert estimate_block(Block(text)) == estimate_text(text) + Weights().system_block
    message = Message(role="user", content=(TextBlock(text),))
    assert bare.estimate_message(message) == estimate_text(text)
    assert estimate_message(message) == estimate_text(text) + Weights().message + Weights().text_block


def test_weights_change_the_estimate() -> None:
    double = Estimator(Weights(letter_run=2.1))
    assert double.estimate_text("one two three four") > estimate_text("one two three four") + 3


def test_a_message_is_estimated_once_while_it_lives_and_forgotten_with_it() -> None:
    estimator = Estimator()
    computed = []

    def compute(message: Message) -> int:
        computed.append(len(message.content))
        return 7

    message = Message("user", (TextBlock("hello there"),))
    assert [estimator.memo.get(message, compute) for _ in range(3)] == [7, 7, 7]
    assert computed == [1]
    alive = weakref.ref(message)
    del message  # the memo holds no message alive
    assert alive() is None


def test_a_changed_message_is_estimated_anew_and_other_estimators_keep_their_own_values() -> None:
    message = Message("user", (TextBlock("one two three"),))
    estimate_message(message)
    double = Estimator(Weights(letter_run=2.1))

    assert estimate_message(replace(message, content=(TextBlock("one"),))) == estimate_text("one") + 5
    assert replace(message, cache_control=True) == message.__class__("user", message.content, True)
    assert double.estimate_message(message) > estimate_message(message)


def test_a_blank_text_costs_nothing_as_no_adapter_sends_it() -> None:
    use = ToolUseBlock("toolu_1", "ls", {})
    blank = Message("assistant", (TextBlock(" \n"), use, TextBlock("")))
    assert estimate_message(blank) == estimate_message(Message("assistant", (use,)))
    assert text_of(blank) == "" and not holds_text(blank)
    assert holds_text(Message("user", (TextBlock(""), TextBlock("hi"))))


# The estimates that each ESTIMATOR_VERSION gives these messages (REFERENCE's texts and tool blocks).
# Messages store their estimate with the version: an estimate that changes under the same version
# would leave stale estimates in every stored history.
ESTIMATES_BY_VERSION = {1: [46, 59, 77, 99, 36, 59, 56, 49], 2: [46, 59, 77, 99, 36, 59, 56, 49]}


def fingerprint_messages() -> list[Message]:
    use = ToolUseBlock("toolu_01AbC", "read_file", {"path": "/src/ví_dụ.py", "n": [1, 2, 3]})
    failure = "Traceback (most recent call last):\n\tFile \"x.py\", line 3\nKeyError: 'x' 🙂"
    return [
        *(Message("user", (TextBlock(text),)) for text in REFERENCE),
        Message("assistant", (TextBlock("Let me look."), use)),
        Message("user", (ToolResultBlock("toolu_01AbC", failure, is_error=True),)),
    ]


def test_any_change_of_an_estimate_comes_with_a_new_estimator_version() -> None:
    estimates = [estimate_message(m) for m in fingerprint_messages()]

    assert estimates == ESTIMATES_BY_VERSION[ESTIMATOR_VERSION], (
        "an estimate changed: bump ESTIMATOR_VERSION and pin the new estimates under it"
    )


def test_a_known_estimate_is_remembered_for_its_message() -> None:
    estimator = Estimator()
    message = Message("user", (TextBlock("hello there"),))

    estimator.memo.put(message, 4321)

    assert estimator.estimate_message(message) == 4321
    assert Estimator().estimate_message(message) == estimate_message(message) != 4321
