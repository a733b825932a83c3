"""The run's compactor: summarizer calls (purpose ``summarize``, never through overrides) and their storage."""

from __future__ import annotations

from dataclasses import dataclass, replace

from hango import run_events, telemetry
from hango.agent.compaction import (
    FOCUS_PREFIX,
    SUMMARIZER,
    SUMMARIZER_FOCUS,
    SUMMARIZER_PROMPT,
    summary_max_tokens,
)
from hango.agent.deps import Deps
from hango.agent.draft import Draft
from hango.agent.gateway import Gateway
from hango.agent.parts import TRANSCRIPT, SourcedBlock, SourcedMessage
from hango.agent.state import RunState
from hango.messages import Block, Message, TextBlock, text_of
from hango.store import TenantStore
from hango.telemetry import names


@dataclass(frozen=True)
class StoredCompactor:
    """Summarizes for a run (or compact-now) and stores the summary in the session."""

    deps: Deps
    instructions: str | None = None  # compact-now's focus text, from the user

    def summarize(self, state: RunState, transcript: str) -> str:
        """One summarizer call for ``state``, billed with purpose ``summarize``."""
        summarizing = replace(state, mode=state.mode.calling("summarize"))
        gateway = Gateway(self.deps, summarizing, self.deps.config.run_timeout)
        focus = (
            (SourcedBlock(SUMMARIZER_FOCUS, Block(FOCUS_PREFIX + self.instructions)),)
            if self.instructions
            else ()
        )
        draft = Draft(
            model=state.agent.model,
            system=(SourcedBlock(SUMMARIZER, Block(SUMMARIZER_PROMPT)), *focus),
            tools=(),
            messages=(SourcedMessage(TRANSCRIPT, Message("user", (TextBlock(transcript),))),),
            max_tokens=summary_max_tokens(state),
        )
        with telemetry.tracer().start_as_current_span(names.SPAN_SUMMARIZE, record_exception=False) as span:
            span.set_attributes({names.SESSION_ID: str(state.session_id), names.PURPOSE: "summarize"})
            return text_of(gateway.send(draft).message).strip() or "(empty summary)"

    def save(self, state: RunState, through_seq: int, text: str) -> None:
        """Store the summary; a run (or compaction) cancelled while the summarizer answered stores nothing."""
        state.steps.check()  # a step boundary: the summary commits on its own, past any rollback
        with self.deps.engine.begin() as conn:
            TenantStore(conn, state.tenant_id).summaries.create(state.session_id, through_seq, text)
        state.steps.emit(run_events.COMPACTION, through_seq=through_seq)
