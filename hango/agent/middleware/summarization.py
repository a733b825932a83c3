"""Compaction (phase 10): past ``context_window × HANGO_COMPACT_TRIGGER``, summarize the oldest messages.

The cut lands only where the kept suffix is a valid history on its own (never
between a ``tool_use`` and its ``tool_result``, never leaving an assistant
message first), and the validator checks the result before it is sent. The
summary is stored in ``session_summaries``; stored messages are never deleted.
In capture-only mode (inspect) it reports ``would_compact`` and calls nothing.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

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


def choose_cut(draft: Draft, budget: int) -> int | None:
    """The first kept stored message: as much recent history as fits in half the budget, at least the last turn."""
    stored = [m for m in draft.messages if m.part != SUMMARY]
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


class SummarizationMiddleware(Middleware):
    name = "summarization"

    def before_run(self, state: RunState, ctx: RunContext) -> None:
        # The loader read the latest summary with the history after it (``hango/agent/loader.py``).
        state.compact_trigger = ctx.deps.config.compact_trigger

    def wrap_model_call(self, draft: Draft, state: RunState, call_next: ModelHandler) -> Response:
        budget = compact_at(state)
        if estimate_request(as_sent(draft, state).to_request()) <= budget:
            return call_next(draft)
        if state.capture_only or state.compactor is None:
            state.would_compact = True
            return call_next(draft)
        return call_next(self._compact(draft, state, budget))

    def _compact(self, draft: Draft, state: RunState, budget: int) -> Draft:
        stored = [m for m in draft.messages if m.part != SUMMARY]
        measured = as_sent(draft, state)
        cut = choose_cut(measured, budget)
        if cut is None:
            return draft
        previous = f"Earlier summary:\n{state.summary.text}\n\n" if state.summary else ""
        text = state.compactor.summarize(previous + render(stored[:cut]))
        # The summarizer may answer longer than the room recent history left it.
        text = fit_summary(
            text, budget - estimate_request(measured.with_(messages=tuple(stored[cut:])).to_request())
        )
        through = seq_of(stored[cut - 1].part)
        kept = [summary_message(text), *stored[cut:]]
        if not is_valid([m.message for m in kept]):
            return draft
        state.compactor.save(through, text)
        state.summary = Summary(through, text)
        return draft.with_(messages=tuple(kept))
