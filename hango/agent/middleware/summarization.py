"""Compaction (phase 10): past ``context_window × HANGO_COMPACT_TRIGGER``, summarize the oldest messages.

The cut lands only where the kept suffix is a valid history on its own (never
between a ``tool_use`` and its ``tool_result``, never leaving an assistant
message first), and the validator checks the result before it is sent. The
summary is stored in ``session_summaries``; stored messages are never deleted.
In capture-only mode (inspect) it reports ``would_compact`` and calls nothing.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any

from hango.agent.chain import summary_message
from hango.agent.draft import Draft
from hango.agent.estimator import estimate_message, estimate_request
from hango.agent.middleware.base import Middleware, ModelHandler
from hango.agent.middleware.tool_allowlist import allowed_tools
from hango.agent.parts import SUMMARY, SourcedMessage, seq_of
from hango.agent.state import RunState, Summary
from hango.agent.validate import is_valid, safe_cut_points
from hango.messages import Response, TextBlock, ToolResultBlock, ToolUseBlock

if TYPE_CHECKING:
    from hango.agent.deps import RunContext

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
    assert isinstance(block, ToolResultBlock)
    return f"[tool result{' (error)' if block.is_error else ''}: {block.content[:CLIP]}]"


def as_sent(draft: Draft, state: RunState) -> Draft:
    """``draft`` with only the tools the allowlist (the innermost slot) lets through: what the budget is about."""
    allowed = allowed_tools(state.agent, state)
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
    """The first kept stored message: as much recent history as fits in half the budget, at least the last turn."""
    stored = stored_messages(draft)
    fixed = estimate_request(draft.with_(messages=()).to_request())
    room = budget * KEEP_SHARE - fixed
    cuts = sorted((k for k in safe_cut_points([m.message for m in stored]) if k > 0), reverse=True)
    if not cuts:
        return None
    best, kept, index = cuts[0], 0, len(stored)
    for k in cuts:
        kept += sum(estimate_message(m.message) for m in stored[k:index])
        index = k
        if kept > room:
            break
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
        """The inspect response's ``compaction``: the seqs it summarizes, where it keeps from, and the tokens."""
        stored, last = self.stored, self.through_seq
        return {
            "summarize": [seq_of(stored[0].part), last],
            # when everything is summarized, the summary keeps from the next message to come
            "keep_from": seq_of(stored[self.cut].part) if self.cut < len(stored) else last + 1,
            "tokens_summarized": sum(estimate_message(m.message) for m in self.summarized),
            "tokens_kept": sum(estimate_message(m.message) for m in self.kept),
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


class SummarizationMiddleware(Middleware):
    name = "summarization"

    def before_run(self, state: RunState, ctx: RunContext) -> None:
        # The loader read the latest summary with the history after it (``hango/agent/loader.py``).
        state.compact_trigger = ctx.deps.config.compact_trigger

    def wrap_model_call(self, draft: Draft, state: RunState, call_next: ModelHandler) -> Response:
        budget = compact_at(state)
        forced = state.compact_now and not state.capture_only
        if not forced and estimate_request(as_sent(draft, state).to_request()) <= budget:
            return call_next(draft)
        if state.capture_only or state.compactor is None:
            state.would_compact = True
            return call_next(draft)
        plan = plan_compaction(draft, state, None if forced else budget, whole=forced)
        return call_next(draft if plan is None else self._compact(draft, state, plan))

    def _compact(self, draft: Draft, state: RunState, plan: Compaction) -> Draft:
        stored, cut = plan.stored, plan.cut
        previous = f"Earlier summary:\n{state.summary.text}\n\n" if state.summary else ""
        text = state.compactor.summarize(previous + render(stored[:cut]))
        # The summarizer may answer longer than the room recent history left it.
        kept_request = plan.draft.with_(messages=tuple(plan.kept)).to_request()
        text = fit_summary(text, plan.budget - estimate_request(kept_request))
        through = plan.through_seq
        kept = [summary_message(text), *plan.kept]
        if not is_valid([m.message for m in kept]):
            return draft
        state.compactor.save(through, text)
        state.summary = Summary(through, text)
        state.compacted = plan
        return draft.with_(messages=tuple(kept))
