"""The ContextOverrides slot: loads overrides once per run and filters messages before summarization.

System overrides are applied in ``Chain.system_blocks`` and tool overrides in
the allowlist slot; this slot drops or replaces ``message:*`` and ``summary``
parts, so compaction and the token budget see the filtered history. If a stored
set went bad after it was saved (a newer message changed the pairing), the call
is sent without the message overrides: never an invalid request.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from opentelemetry import trace

from hango.agent.draft import Draft
from hango.agent.estimator import estimate_message
from hango.agent.middleware.base import Middleware, ModelHandler
from hango.agent.overrides import Override, Overrides, apply_messages
from hango.agent.report import OVERRIDDEN, LeftOut
from hango.agent.state import RunState
from hango.agent.validate import validate_history
from hango.messages import Response
from hango.telemetry import names

if TYPE_CHECKING:
    from hango.agent.deps import RunContext
    from hango.store import TenantStore

log = logging.getLogger(__name__)


def load_overrides(store: TenantStore, state: RunState) -> Overrides:
    """The agent's and the session's stored overrides (one query)."""
    agent, session = store.context_overrides.for_run(state.agent.id, state.session_id)
    return Overrides.of(map(as_override, agent), map(as_override, session))


def as_override(stored) -> Override:
    """A stored row as the runtime's ``Override``."""
    return Override(stored.part, stored.action, stored.replacement, stored.paired_from)


class ContextOverridesMiddleware(Middleware):
    name = "context_overrides"

    def before_run(self, state: RunState, ctx: RunContext) -> None:
        state.overrides = load_overrides(ctx.store, state)

    def wrap_model_call(self, draft: Draft, state: RunState, call_next: ModelHandler) -> Response:
        if state.overrides:  # the history before the message overrides, for the inspector
            draft = draft.with_(report=draft.report.keeping(messages=draft.messages))
        if not state.overrides.session:
            return call_next(draft)
        kept = apply_messages(draft.messages, state.overrides.session)
        problems = validate_history([m.message for m in kept])
        if problems:
            log.error(
                "stored message overrides no longer leave a valid history (%s); sent without them",
                problems[0].code,
            )
            trace.get_current_span().add_event(names.EVENT_OVERRIDES_DROPPED, {"reason": problems[0].code})
            return call_next(draft)
        dropped = [m for m in draft.messages if state.overrides.excludes(m.part)]
        tokens = sum(estimate_message(m.message) for m in dropped)
        left_out = LeftOut(self.name, OVERRIDDEN, tuple(m.part for m in dropped), tokens)
        return call_next(draft.with_(messages=tuple(kept), report=draft.report.leaving_out(left_out)))
