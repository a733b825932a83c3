"""The next call's prompt-cache outlook, read once per request: the figure behind every cache price shown.

Inspect's per-part ``cache_loss_tokens``, the preview's (the panel's warning), the
suggestions' and inspect's next-call ``cache`` verdict all take the one cache
model's answer (``hango/agent/ledger/verdict.py``, ``outlook``) from here: whether
the previous call's cache still lives (a change after the lifetime costs no
cache) and the unit every figure is in (the previous call's report, else the
agent's calibration, else the estimate). A provider that caches nothing reads
nothing whatever was sent before: its lineage is not read.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hango.agent.deps import Deps
from hango.agent.ledger.causes import NOTHING, Facts, facts_of
from hango.agent.ledger.record import Lineage, Previous
from hango.agent.ledger.verdict import NO_CACHE, Outlook, judge, outlook, rules_for
from hango.cache_rules import CacheRules
from hango.inspector.inspection import Assembly
from hango.providers import split_model
from hango.store import TenantStore


@dataclass(frozen=True)
class NextCache:
    """The session's previous call (of a run or a try), the outlook of the next one, and how it was read."""

    previous: Previous | None
    outlook: Outlook
    rules: CacheRules
    model: str
    now: dt.datetime
    calibrated: float | None = None
    facts: Callable[[], Facts] = lambda: NOTHING  # what was recorded since the previous call (one query)

    def verdict(self, assembly: Assembly) -> dict[str, Any]:
        """The next call's verdict if sent now, with the outlook (``outlook``, ``unit``) it is priced by.

        A provider that caches nothing gets ``judge``'s answer for its outlook without listing the call.
        """
        if self.outlook.state == "none":
            return {**NO_CACHE.as_dict(), **self.outlook.as_dict()}
        verdict = judge(
            self.previous,
            assembly.sent,
            started_at=self.now,
            rules=self.rules,
            model=self.model,
            facts=self.facts,
            calibrated=self.calibrated,
        )
        return {**verdict.as_dict(), **self.outlook.as_dict()}


def next_cache(
    assembly: Assembly, store: TenantStore, deps: Deps, calibrated: Callable[[], float | None]
) -> NextCache:
    """What the prompt cache holds for the session's next call if it is sent now (one ledger read).

    ``calibrated`` gives the agent's calibration ratio for the model (None without one); it is
    asked only when the provider caches.
    """
    state = assembly.state
    provider, bare = split_model(state.agent.model)
    rules = rules_for(provider, deps.config.cache_rules)
    now = dt.datetime.now(dt.UTC)
    if not rules.enabled:
        return NextCache(None, outlook(None, now=now, rules=rules, model=bare), rules, bare, now)
    lineage = Lineage()
    lineage.load(store.model_calls, state.session_id, "run")
    ratio = calibrated()
    ahead = outlook(lineage.previous, now=now, rules=rules, model=bare, calibrated=ratio)

    def facts() -> Facts:
        return facts_of(
            store.recorded_changes.between(state.session_id, state.agent.id, lineage.base_id, None)
        )

    return NextCache(lineage.previous, ahead, rules, bare, now, ratio, facts)
