"""Inspect previews: the first 200 characters of a message's whole one-line text, built without it."""

from __future__ import annotations

from unittest.mock import patch

from hypothesis import given, settings
from hypothesis import strategies as st

from hango.agent.parts import PREVIEW_CHARS, preview
from hango.inspector import labels
from hango.inspector.labels import message_preview
from hango.messages import ContentBlock, Message, TextBlock, ToolResultBlock, ToolUseBlock

texts = st.text(max_size=300) | st.text(alphabet='ab"\\\n\u00e9\U0001f642', min_size=150, max_size=400)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | texts,
    lambda inner: (
        st.lists(inner, max_size=5)
        | st.dictionaries(texts, inner, max_size=5)
        | st.lists(st.integers(0, 9), min_size=150, max_size=300)
    ),
    max_leaves=20,
)
blocks = st.one_of(
    st.builds(TextBlock, texts),
    st.builds(
        ToolUseBlock,
        st.just("toolu_1"),
        st.sampled_from(["ls", "write_file"]),
        st.dictionaries(texts, json_values, max_size=4),
    ),
    st.builds(ToolResultBlock, st.just("toolu_1"), texts, st.booleans()),
)


def unclipped_preview(message: Message) -> str:
    """The preview made from each tool call's whole input, as before inputs were clipped."""
    with patch.object(labels, "clipped", lambda value, _limit: value):
        return message_preview(message)


@settings(max_examples=300, deadline=None)
@given(st.lists(blocks, min_size=1, max_size=4))
def test_a_preview_is_the_start_of_the_whole_message_text(content: list[ContentBlock]) -> None:
    message = Message("assistant", tuple(content))

    assert message_preview(message) == unclipped_preview(message)


def test_a_preview_of_a_huge_tool_input_is_its_start() -> None:
    use = ToolUseBlock("toolu_1", "write_file", {"path": "/a.py", "content": "x = 1\n" * 100_000})

    shown = preview(message_preview(Message("assistant", (use,))))

    assert shown.text == ('write_file({"path": "/a.py", "content": "' + "x = 1\\n" * 40)[:PREVIEW_CHARS]
    assert shown.truncated
