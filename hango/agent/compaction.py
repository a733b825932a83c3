"""Compaction: where a history is cut, what the summary stands for, and what the summarizer is asked.

Past ``context_window × HANGO_COMPACT_TRIGGER`` the summarization middleware
summarizes the oldest messages; the inspector previews the same plan and
compact-now forces it. The cut lands only where the kept suffix is a valid
history on its own (never between a ``tool_use`` and its ``tool_result``, never
leaving an assistant message first).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from hango.agent.chain import summary_message
from hango.agent.draft import Draft
from hango.agent.estimator import estimate_message, estimate_messages, estimate_request
from hango.agent.parts import SUMMARY, SourcedMessage, seq_of, system_part
from hango.agent.state import RunState
from hango.agent.toolset import toolset_of
from hango.agent.validate import safe_cuts_from_the_end
from hango.messages import ServerToolBlock, TextBlock, ToolResultBlock, ToolUseBlock

KEEP_SHARE = 0.5
CLIP = 2000


def compact_at(state: RunState) -> int:
    """The estimated request size at which summarization triggers."""
    return int(state.agent.context_window * state.compact_trigger)


def render(messages: list[SourcedMessage]) -> str:
    """A plain-text transcript for the summarizer (long parts clipped)."""
    lines = []
    for sourced in messages:
        for block in sourced.message.content:
            lines.append(f"{sourced.message.role}: {_render_block(block)}")
    return "\n".join(lines)


def _render_block(block) -> str:
    if isinstance(block, TextBlock):
        return block.text[:CLIP]
    if isinstance(block, ToolUseBlock):
        return f"[called {block.name}({json.dumps(block.input, ensure_ascii=False)[:CLIP]})]"
    if isinstance(block, ServerToolBlock):
        return f"[provider tool: {json.dumps(block.data, ensure_ascii=False)[:CLIP]}]"
    assert isinstance(block, ToolResultBlock)
    return f"[tool result{' (error)' if block.is_error else ''}: {block.content[:CLIP]}]"


def as_sent(draft: Draft, state: RunState) -> Draft:
    """``draft`` with only the tools the allowlist (the innermost slot) lets through: what the budget is about."""
    allowed = toolset_of(state.agent, state).sent
    return draft.with_(tools=tuple(t for t in draft.tools if t.name in allowed))


def fit_summary(text: str, tokens: int) -> str:
    """``text``, or its longest prefix whose ``summary`` part fits in ``tokens``.

    When not even an empty summary fits, the request is over budget whatever the
    summary says, so the text is left whole. The estimate never shrinks as a
    text grows, so a binary search on the length finds the prefix.
    """

    def size(prefix: str) -> int:
        return estimate_message(summary_message(prefix).message)

    if size(text) <= tokens or size("") > tokens:
        return text
    low, high = 0, len(text)
    while low < high:
        middle = (low + high + 1) // 2
        low, high = (middle, high) if size(text[:middle]) <= tokens else (low, middle - 1)
    return text[:low]


def stored_messages(draft: Draft) -> list[SourcedMessage]:
    """The draft's stored messages: its history without the summary part."""
    return [m for m in draft.messages if m.part != SUMMARY]


def choose_cut(draft: Draft, budget: int) -> int | None:
    """The first kept stored message: as much recent history as fits in half the budget, at least the last turn.

    The safe cuts are walked from the end, so only the kept messages (and the first one past the room)
    are read, whatever the history's length.
    """
    stored = stored_messages(draft)
    fixed = estimate_request(draft.with_(messages=()).to_request())
    room = budget * KEEP_SHARE - fixed
    best, kept, index = None, 0, len(stored)
    for k in safe_cuts_from_the_end([m.message for m in stored]):
        if k == 0:
            break
        kept += sum(estimate_message(m.message) for m in stored[k:index])
        index = k
        if kept > room:
            return k if best is None else best  # the last turn is kept even when it does not fit
        best = k
    return best


@dataclass(frozen=True)
class Compaction:
    """What one compaction would do: summarize ``stored[:cut]`` (and any earlier summary), keep the rest."""

    draft: Draft
    budget: int
    cut: int

    @cached_property
    def stored(self) -> list[SourcedMessage]:
        return stored_messages(self.draft)

    @property
    def summarized(self) -> list[SourcedMessage]:
        """The messages the summary replaces: the earlier summary part too, when there is one."""
        return [m for m in self.draft.messages if m.part == SUMMARY] + self.stored[: self.cut]

    @property
    def kept(self) -> list[SourcedMessage]:
        return self.stored[self.cut :]

    @property
    def through_seq(self) -> int:
        """The seq of the last message summarized: the summary stands for the history up to here."""
        return seq_of(self.stored[self.cut - 1].part)

    def preview(self) -> dict[str, Any]:
        """The inspect response's ``compaction``: the seqs it summarizes, where it keeps from, and the tokens.

        The previous summary (folded into the new one) is counted apart from the messages it adds;
        ``keep_from`` is None when every stored message is summarized (no message is named that
        does not exist).
        """
        stored, last = self.stored, self.through_seq
        earlier = [m for m in self.draft.messages if m.part == SUMMARY]
        return {
            "summarize": [seq_of(stored[0].part), last],
            "keep_from": seq_of(stored[self.cut].part) if self.cut < len(stored) else None,
            "tokens_summarized": estimate_messages(m.message for m in stored[: self.cut]),
            "previous_summary_tokens": estimate_messages(m.message for m in earlier),
            "tokens_kept": estimate_messages(m.message for m in self.kept),
        }


def compaction_budget(measured: Draft, state: RunState) -> int:
    """The size a compaction aims under: the trigger, or the request's size now when it is below the trigger.

    ``measured`` is the draft ``as_sent``. Over the trigger this is what the
    middleware uses; below it (a preview on request, or compact-now) the
    compaction keeps about half of the request.
    """
    return min(compact_at(state), estimate_request(measured.to_request()))


def plan_compaction(
    draft: Draft, state: RunState, budget: int | None = None, *, whole: bool = False
) -> Compaction | None:
    """The split the summarization middleware would make of ``draft``; None when there is no safe cut.

    ``whole`` (compact-now and its preview): with no safe cut, summarize every
    stored message of a history of two or more — a lone summary is a valid history.
    """
    measured = as_sent(draft, state)
    budget = compaction_budget(measured, state) if budget is None else budget
    cut = choose_cut(measured, budget)
    stored = stored_messages(measured)
    if cut is None and whole and len(stored) >= 2:
        cut = len(stored)
    return None if cut is None else Compaction(measured, budget, cut)


SUMMARIZER_PROMPT = (
    "You compress conversations. Summarize the transcript below for the assistant that will continue it: "
    "the user's goals, decisions made, facts learned, files touched, tool results that still matter, and "
    "open questions. Be concise and specific; keep names, numbers and paths exact."
)
FOCUS_PREFIX = "The user asked this summary to follow these instructions:\n"
SUMMARY_MAX_TOKENS = 1024
SUMMARIZER = system_part("summarizer")
SUMMARIZER_FOCUS = system_part("summarizer_focus")


def summary_max_tokens(state: RunState) -> int:
    """The summary's room: the share of the trigger budget that recent history leaves, at most 1,024."""
    return max(1, min(SUMMARY_MAX_TOKENS, int(compact_at(state) * (1 - KEEP_SHARE))))
