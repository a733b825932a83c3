"""The history validator: the pairing rules a message history must keep to be sent.

A history is valid when it has a user message, starts with one, every
``tool_use`` is answered by a ``tool_result`` with its id in the **next**
message, every ``tool_result`` answers a ``tool_use`` of the message **before**,
``tool_use`` blocks come only from the assistant and ``tool_result`` blocks only
from the user. Compaction runs it after every cut and only cuts at
``safe_cut_points``; the context inspector closes override sets under
``tool_pairs`` and checks the result with ``validate_history``.

Reason codes: ``no_user_message``, ``starts_with_assistant``,
``unanswered_tool_use``, ``orphan_tool_result``, ``tool_use_from_user``,
``tool_result_from_assistant``. Everything here is O(total content blocks).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from hango.messages import Message, TextBlock, ToolResultBlock, ToolUseBlock


@dataclass(frozen=True)
class Problem:
    """One broken rule: a reason code, a readable message and the message indexes involved."""

    code: str
    message: str
    indexes: tuple[int, ...] = ()


def _tool_ids(messages: Sequence[Message]) -> tuple[list[Sequence[str]], list[Sequence[str]]]:
    """Each message's tool_use ids and tool_result ids, in one pass over the blocks.

    A message without such blocks (most are) gets the shared empty tuple: on a long history
    two fresh lists per message were most of the objects this made. A message of one text block
    (most of a history) is known to hold none without walking its blocks.
    """
    uses: list[Sequence[str]] = [()] * len(messages)
    results: list[Sequence[str]] = [()] * len(messages)
    for index, message in enumerate(messages):
        content = message.content
        if len(content) == 1 and type(content[0]) is TextBlock:  # most messages: one text, no ids
            continue
        use_ids: list[str] = []
        result_ids: list[str] = []
        for block in content:
            if isinstance(block, ToolUseBlock):
                use_ids.append(block.id)
            elif isinstance(block, ToolResultBlock):
                result_ids.append(block.tool_use_id)
        uses[index] = use_ids or ()
        results[index] = result_ids or ()
    return uses, results


def _shape_problems(messages: Sequence[Message]) -> list[Problem]:
    problems = []
    if not any(m.role == "user" for m in messages):
        problems.append(Problem("no_user_message", "the history has no user message"))
    if messages and messages[0].role == "assistant":
        problems.append(Problem("starts_with_assistant", "the first message is the assistant's", (0,)))
    return problems


def _role_problems(
    index: int, message: Message, uses: Sequence[str], results: Sequence[str]
) -> list[Problem]:
    if message.role == "user" and uses:
        return [Problem("tool_use_from_user", f"user message {index} holds tool_use", (index,))]
    if message.role == "assistant" and results:
        text = f"assistant message {index} holds tool_result"
        return [Problem("tool_result_from_assistant", text, (index,))]
    return []


def _pairing_problems(
    index: int, uses: Sequence[Sequence[str]], results: Sequence[Sequence[str]]
) -> list[Problem]:
    answered = set(results[index + 1]) if index + 1 < len(results) else set()
    asked = set(uses[index - 1]) if index > 0 else set()
    problems = []
    unanswered = [i for i in uses[index] if i not in answered]
    if unanswered:
        text = f"tool_use {', '.join(unanswered)} in message {index} is not answered by the next message"
        problems.append(Problem("unanswered_tool_use", text, (index,)))
    orphans = [i for i in results[index] if i not in asked]
    if orphans:
        text = f"tool_result {', '.join(orphans)} in message {index} answers no tool_use just before it"
        problems.append(Problem("orphan_tool_result", text, (index,)))
    return problems


def _message_problems(
    messages: Sequence[Message], tool_ids: tuple[list[Sequence[str]], list[Sequence[str]]] | None = None
) -> list[Problem]:
    """The problems of single messages, which stay in every suffix that holds the message."""
    uses, results = tool_ids or _tool_ids(messages)
    problems = []
    for index, message in enumerate(messages):
        if uses[index] or results[index]:  # a message without tool blocks breaks none of these rules
            problems += _role_problems(index, message, uses[index], results[index])
            problems += _pairing_problems(index, uses, results)
    return problems


def validate_history(messages: Sequence[Message]) -> list[Problem]:
    """Every rule the history breaks, in message order after the whole-history rules; empty when valid."""
    return _shape_problems(messages) + _message_problems(messages)


def is_valid(messages: Sequence[Message]) -> bool:
    """Whether the history breaks no rule."""
    return not validate_history(messages)


def tool_pairs(messages: Sequence[Message]) -> dict[int, set[int]]:
    """Each message index mapped to the indexes of the messages its tool_use/tool_result blocks pair with."""
    pairs: dict[int, set[int]] = {index: set() for index in range(len(messages))}
    for index, linked in enumerate(paired_with_previous(messages)):
        if linked:
            pairs[index - 1].add(index)
            pairs[index].add(index - 1)
    return pairs


def paired_with_previous(messages: Sequence[Message]) -> list[bool]:
    """For each message, whether one of its tool_result blocks answers a tool_use of the message before."""
    uses, results = _tool_ids(messages)
    linked = [False] * len(messages)
    for index in range(1, len(messages)):
        if uses[index - 1] and results[index] and not set(uses[index - 1]).isdisjoint(results[index]):
            linked[index] = True
    return linked


def safe_cut_points(messages: Sequence[Message]) -> list[int]:
    """The indexes k for which ``messages[k:]`` is a valid history on its own."""
    # Only cuts after the last message problem can be valid; the suffix must then
    # open with a user message holding no tool_result (it would answer nothing).
    tool_ids = _tool_ids(messages)
    results = tool_ids[1]
    broken = [i for p in _message_problems(messages, tool_ids) for i in p.indexes]
    first = max(broken, default=-1) + 1
    return [k for k in range(first, len(messages)) if messages[k].role == "user" and not results[k]]


def safe_cuts_from_the_end(messages: Sequence[Message]) -> Iterator[int]:
    """``safe_cut_points(messages)`` from the last to the first, found walking back from the end.

    A message's problems depend only on its neighbours, so the walk stops at the
    last message with a problem (no cut before it is safe); a caller that stops
    earlier (compaction keeps only the recent history) reads only what it passed.
    """
    ids = {}

    def tool_ids(index: int) -> tuple[Sequence[str], Sequence[str]]:
        found = ids.get(index)
        if found is None:
            uses, results = _tool_ids(messages[index : index + 1])
            found = ids[index] = (uses[0], results[0])
        return found

    for index in range(len(messages) - 1, -1, -1):
        uses, results = tool_ids(index)
        if (uses or results) and _has_problem(messages, index, tool_ids):
            return
        if messages[index].role == "user" and not results:
            yield index


def _has_problem(messages: Sequence[Message], index: int, tool_ids) -> bool:
    """Whether ``messages[index]`` (which holds tool blocks) breaks a rule of single messages."""
    uses, results = tool_ids(index)
    if _role_problems(index, messages[index], uses, results):
        return True
    answered = set(tool_ids(index + 1)[1]) if index + 1 < len(messages) else set()
    asked = set(tool_ids(index - 1)[0]) if index > 0 else set()
    return any(i not in answered for i in uses) or any(i not in asked for i in results)
