"""Compact now: one compaction on request, through the same summarization slot a run compacts with.

The session's next call is assembled through the real chain with the
summarization slot told to compact whatever the trigger says; the model call
stops at a capture handler, so the only model call is the summarizer's (billed
with purpose ``summarize``, no run). The caller holds the session's run lock and
passes a store on the lock's connection.
Stored messages never change: the new summary is stored in ``session_summaries``
and becomes the session's ``summary`` part.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hango.agent.assembly import capture, prepare_session
from hango.agent.compaction import Compaction
from hango.agent.compactor import StoredCompactor
from hango.agent.deps import Deps
from hango.agent.gateway import Gateway
from hango.agent.state import Caller
from hango.errors import Unprocessable
from hango.store import TenantStore


@dataclass(frozen=True)
class Compacted:
    """What compact-now did: the compaction's preview figures and the seq the summary covers through."""

    plan: Compaction
    model: str

    def as_dict(self) -> dict[str, Any]:
        return {"through_seq": self.plan.through_seq, "model": self.model, **self.plan.preview()}


def compact_now(
    deps: Deps, store: TenantStore, session: Any, caller: Caller, instructions: str | None
) -> Compacted:
    """Summarize the older part of the session's next request now.

    402 over quota before anything else; 422 ``nothing_to_compact`` when the history has no cut.
    """
    prepared = prepare_session(deps, store, session, caller)
    state = prepared.state
    Gateway(deps, state, deps.config.run_timeout).check_quota()
    state.compact_now = True  # a prepared state is not capture-only: the slot may call the summarizer
    state.compactor = StoredCompactor(deps, state, instructions)
    capture(prepared.chain, state)  # with the stored overrides only: one summarizer call
    if state.compacted is None:
        raise Unprocessable(
            "the history has no place to cut: nothing before the last turn to summarize",
            code="nothing_to_compact",
        )
    return Compacted(state.compacted, state.agent.model)
