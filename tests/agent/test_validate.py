"""The history validator, tool pairing and safe cut points."""

from __future__ import annotations

import dataclasses
import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hango.agent.validate import (
    Problem,
    is_valid,
    safe_cut_points,
    safe_cuts_from_the_end,
    tool_pairs,
    validate_history,
)
from hango.messages import ContentBlock, Message, TextBlock, ToolResultBlock, ToolUseBlock


def user(*content: ContentBlock | str) -> Message:
    return Message(role="user", content=tuple(TextBlock(c) if isinstance(c, str) else c for c in content))


def assistant(*content: ContentBlock | str) -> Message:
    return Message(
        role="assistant", content=tuple(TextBlock(c) if isinstance(c, str) else c for c in content)
    )


def use(tool_use_id: str) -> ToolUseBlock:
    return ToolUseBlock(id=tool_use_id, name="read_file", input={"path": "notes.md"})


def result(tool_use_id: str) -> ToolResultBlock:
    return ToolResultBlock(tool_use_id=tool_use_id, content="ok")


def codes(messages: list[Message]) -> list[str]:
    return [p.code for p in validate_history(messages)]


def test_plain_conversation_is_valid() -> None:
    history = [user("hi"), assistant("hello"), user("how are you?")]
    assert validate_history(history) == []
    assert is_valid(history)


def test_tool_round_is_valid() -> None:
    history = [user("read it"), assistant("reading", use("a")), user(result("a")), assistant("done")]
    assert validate_history(history) == []


def test_several_tool_results_in_one_message_are_valid_and_pair_with_their_tool_uses() -> None:
    history = [user("go"), assistant(use("a"), use("b")), user(result("b"), result("a")), assistant("ok")]
    assert is_valid(history)
    assert tool_pairs(history) == {0: set(), 1: {2}, 2: {1}, 3: set()}


def test_tool_results_and_text_in_one_message_are_valid_and_pair() -> None:
    history = [
        user("go"),
        assistant(use("a")),
        user(result("a"), "and also this"),
        assistant(use("b")),
        user(result("b")),
    ]
    assert is_valid(history)
    assert tool_pairs(history) == {0: set(), 1: {2}, 2: {1}, 3: {4}, 4: {3}}


def test_empty_history_has_no_user_message() -> None:
    assert codes([]) == ["no_user_message"]
    assert not is_valid([])


def test_assistant_only_history_has_no_user_message_and_starts_with_assistant() -> None:
    problems = validate_history([assistant("hello")])
    assert [p.code for p in problems] == ["no_user_message", "starts_with_assistant"]
    assert problems[1].indexes == (0,)


def test_history_starting_with_assistant_is_invalid() -> None:
    problems = validate_history([assistant("hello"), user("hi")])
    assert problems == [Problem("starts_with_assistant", problems[0].message, (0,))]


def test_tool_use_without_a_next_message_is_unanswered() -> None:
    problems = validate_history([user("go"), assistant(use("a"))])
    assert [(p.code, p.indexes) for p in problems] == [("unanswered_tool_use", (1,))]
    assert "a" in problems[0].message


def test_tool_use_answered_only_in_part_names_the_missing_id() -> None:
    problems = validate_history([user("go"), assistant(use("first"), use("second")), user(result("first"))])
    assert [(p.code, p.indexes) for p in problems] == [("unanswered_tool_use", (1,))]
    assert "second" in problems[0].message
    assert "first" not in problems[0].message


def test_tool_use_answered_two_messages_later_is_unanswered_and_its_result_orphaned() -> None:
    history = [user("go"), assistant(use("a")), user("wait"), user(result("a"))]
    assert [(p.code, p.indexes) for p in validate_history(history)] == [
        ("unanswered_tool_use", (1,)),
        ("orphan_tool_result", (3,)),
    ]


def test_tool_result_in_the_first_message_is_orphaned() -> None:
    assert codes([user(result("a"), "hi")]) == ["orphan_tool_result"]


def test_tool_result_with_an_unknown_id_is_orphaned() -> None:
    history = [user("go"), assistant(use("a")), user(result("a"), result("zzz"))]
    problems = validate_history(history)
    assert [(p.code, p.indexes) for p in problems] == [("orphan_tool_result", (2,))]
    assert "zzz" in problems[0].message


def test_tool_blocks_must_come_from_the_right_role() -> None:
    history = [user("go", use("a")), assistant(result("a"))]
    assert codes(history) == ["tool_use_from_user", "tool_result_from_assistant"]


def test_problem_is_frozen() -> None:
    problem = Problem("no_user_message", "none")
    with pytest.raises(dataclasses.FrozenInstanceError):
        problem.code = "other"  # type: ignore[misc]


def test_tool_pairs_needs_matching_ids_in_adjacent_messages() -> None:
    history = [user("go"), assistant(use("a")), user(result("b")), assistant("x"), user(result("a"))]
    assert all(companions == set() for companions in tool_pairs(history).values())
    assert list(tool_pairs(history)) == [0, 1, 2, 3, 4]


def test_safe_cut_points_skip_tool_result_messages() -> None:
    history = [
        user("start"),
        assistant(use("x")),
        user(result("x")),
        assistant("read it"),
        user("next question"),
        assistant(use("y")),
        user(result("y"), "and a remark"),
        user("one more"),
    ]
    assert safe_cut_points(history) == [0, 4, 7]


def test_safe_cut_points_after_a_broken_message_only() -> None:
    history = [user("a"), assistant(use("x")), user("b"), assistant("c"), user("d")]
    assert safe_cut_points(history) == [2, 4]
    assert safe_cut_points([user("a"), assistant(use("x"))]) == []


@st.composite
def valid_histories(draw: st.DrawFn) -> list[Message]:
    """A user message, then random turns: text, or tool_use(s) answered by tool_result(s) with optional text."""
    ids = (f"toolu_{n}" for n in itertools.count())
    history = [user(draw(st.text(max_size=5)))]
    for turn in draw(st.lists(st.sampled_from(["user", "assistant", "tools"]), max_size=12)):
        if turn == "user":
            history.append(user(draw(st.text(max_size=5))))
        elif turn == "assistant":
            history.append(assistant(draw(st.text(max_size=5))))
        else:
            asked = [next(ids) for _ in range(draw(st.integers(1, 3)))]
            preface = ["let me look"] if draw(st.booleans()) else []
            history.append(assistant(*preface, *(use(i) for i in asked)))
            answers = [result(i) for i in draw(st.permutations(asked))]
            remark = ["also, thanks"] if draw(st.booleans()) else []
            history.append(user(*answers, *remark))
    return history


@st.composite
def damaged_histories(draw: st.DrawFn) -> list[Message]:
    """A valid history with up to three messages removed."""
    history = draw(valid_histories())
    for _ in range(draw(st.integers(0, 3))):
        if history:
            del history[draw(st.integers(0, len(history) - 1))]
    return history


def brute_force_cuts(history: list[Message]) -> list[int]:
    return [k for k in range(len(history)) if not validate_history(history[k:])]


@given(valid_histories())
def test_generated_histories_are_valid(history: list[Message]) -> None:
    assert validate_history(history) == []


@given(valid_histories())
def test_every_safe_cut_of_a_valid_history_leaves_a_valid_suffix_and_no_other_does(
    history: list[Message],
) -> None:
    cuts = safe_cut_points(history)
    assert cuts == brute_force_cuts(history)
    assert cuts[0] == 0
    pairs = tool_pairs(history)
    for k in cuts:
        assert all(j >= k for i in range(k, len(history)) for j in pairs[i]), "a pair crosses the cut"


@given(damaged_histories())
def test_safe_cut_points_of_any_history_match_the_brute_force(history: list[Message]) -> None:
    assert safe_cut_points(history) == brute_force_cuts(history)


@given(damaged_histories())
def test_the_safe_cuts_walked_from_the_end_are_the_safe_cut_points_reversed(history: list[Message]) -> None:
    assert list(safe_cuts_from_the_end(history)) == safe_cut_points(history)[::-1]


@given(valid_histories(), st.data())
def test_excluding_a_set_closed_under_tool_pairs_keeps_the_pairing_valid(
    history: list[Message], data: st.DataObject
) -> None:
    pairs = tool_pairs(history)
    excluded: set[int] = set()
    pending = list(data.draw(st.sets(st.integers(0, len(history) - 1))))
    while pending:
        index = pending.pop()
        if index not in excluded:
            excluded.add(index)
            pending.extend(pairs[index])
    kept = [m for i, m in enumerate(history) if i not in excluded]
    pairing = {"unanswered_tool_use", "orphan_tool_result"}
    assert not pairing.intersection(codes(kept))
