"""Compaction (phase 10): past ``context_window × HANGO_COMPACT_TRIGGER``, summarize the oldest messages.

The plan (where to cut, the budget) is ``hango/agent/compaction.py``; this hook
carries it out, and the validator checks the result before it is sent. The
summary is stored in ``session_summaries``; stored messages are never deleted.
In an inspect (``Mode.captures``), or without a compactor, it reports ``would_compact``
on the draft and calls nothing; a compaction it makes is reported there too
(``Draft.report``), with the messages it summarized.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hango.agent.chain import summary_message
from hango.agent.compaction import Compaction, as_sent, compact_at, fit_summary, plan_compaction, render
from hango.agent.draft import Draft
from hango.agent.estimator import estimate_messages, estimate_request
from hango.agent.middleware.base import Middleware, ModelHandler
from hango.agent.report import SUMMARIZED, LeftOut
from hango.agent.state import RunState, Summary
from hango.agent.validate import is_valid
from hango.messages import Response

if TYPE_CHECKING:
    from hango.agent.deps import RunContext


class SummarizationMiddleware(Middleware):
    name = "summarization"

    def before_run(self, state: RunState, ctx: RunContext) -> None:
        # The loader read the latest summary with the history after it (``hango/agent/loader.py``).
        state.compact_trigger = ctx.deps.config.compact_trigger

    def wrap_model_call(self, draft: Draft, state: RunState, call_next: ModelHandler) -> Response:
        budget = compact_at(state)
        forced = state.mode.compacts_now
        if not forced and estimate_request(as_sent(draft, state).to_request()) <= budget:
            return call_next(draft)
        if state.mode.captures or state.compactor is None:
            return call_next(draft.with_(report=draft.report.past_trigger()))
        plan = plan_compaction(draft, state, None if forced else budget, whole=forced)
        return call_next(draft if plan is None else self._compact(draft, state, plan))

    def _compact(self, draft: Draft, state: RunState, plan: Compaction) -> Draft:
        stored, cut = plan.stored, plan.cut
        previous = f"Earlier summary:\n{state.summary.text}\n\n" if state.summary else ""
        text = state.compactor.summarize(state, previous + render(stored[:cut]))
        # The summarizer may answer longer than the room recent history left it.
        kept_request = plan.draft.with_(messages=tuple(plan.kept)).to_request()
        text = fit_summary(text, plan.budget - estimate_request(kept_request))
        through = plan.through_seq
        kept = [summary_message(text), *plan.kept]
        if not is_valid([m.message for m in kept]):
            return draft
        state.compactor.save(state, through, text)
        state.summary = Summary(through, text, state.mode.try_id)
        summarized = plan.summarized
        tokens = estimate_messages(m.message for m in summarized)
        left_out = LeftOut(self.name, SUMMARIZED, tuple(m.part for m in summarized), tokens)
        return draft.with_(messages=tuple(kept), report=draft.report.compacting(plan, left_out))
