"""Compact now: one compaction on request, through the same summarization slot a run compacts with.

``POST /v1/sessions/{id}/compact`` queues a run of kind ``compact``; the web asks
``compaction_plan`` whether the history has a place to cut (no model call), and a
worker runs ``compact_now`` under the session's run lock, like any run of the
session. The session's next call is assembled through the real chain with the
summarization slot told to compact whatever the trigger says; the model call
stops at a capture handler, so the only model call is the summarizer's (billed
with purpose ``summarize`` to the compact run). Stored messages never change: the
new summary is stored in ``session_summaries`` and becomes the session's
``summary`` part.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from hango.agent.assembly import capture, prepare_session
from hango.agent.compaction import Compaction, plan_compaction
from hango.agent.compactor import StoredCompactor
from hango.agent.deps import Deps
from hango.agent.gateway import Gateway
from hango.agent.run_steps import Steps
from hango.agent.state import COMPACT, Caller, RunHandles
from hango.errors import Unprocessable
from hango.store import TenantStore


@dataclass(frozen=True)
class Compacted:
    """What compact-now did: the compaction's preview figures and the seq the summary covers through."""

    plan: Compaction
    model: str

    def as_dict(self) -> dict[str, Any]:
        return {"through_seq": self.plan.through_seq, "model": self.model, **self.plan.preview()}


def nothing_to_compact() -> Unprocessable:
    """422 ``nothing_to_compact``: the history has no place to cut."""
    return Unprocessable(
        "the history has no place to cut: nothing before the last turn to summarize",
        code="nothing_to_compact",
    )


def compaction_plan(deps: Deps, store: TenantStore, session: Any, caller: Caller) -> Compaction | None:
    """What compact-now would summarize of the session's next request; None when there is no cut.

    No compactor is set, so the summarization slot calls nothing.
    """
    prepared = prepare_session(deps, store, session, caller)
    return plan_compaction(capture(prepared.chain, prepared.state), prepared.state, whole=True)


@dataclass(frozen=True)
class CompactJob:
    """A compact run, as its worker hands it to ``compact_now``: the focus, the run billed and its steps."""

    instructions: str | None
    run_id: uuid.UUID
    steps: Steps


def compact_now(deps: Deps, store: TenantStore, session: Any, caller: Caller, job: CompactJob) -> Compacted:
    """Summarize the older part of the session's next request now (the caller holds the session's lock).

    402 over quota before anything else; 422 ``nothing_to_compact`` when the history has no cut.
    """
    handles = RunHandles(job.run_id, job.steps, compactor=StoredCompactor(deps, job.instructions))
    prepared = prepare_session(deps, store, session, caller, COMPACT, handles=handles)
    state = prepared.state
    Gateway(deps, state, deps.config.run_timeout).check_quota()
    job.steps.check_before_call()  # a step boundary: a compaction cancelled meanwhile calls nothing
    # with the stored overrides only: one summarizer call
    compacted = capture(prepared.chain, state).report.compacted
    if compacted is None:
        raise nothing_to_compact()
    return Compacted(compacted, state.agent.model)
