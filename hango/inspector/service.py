"""The inspector's front door: an ``Inspector`` bound once per request, one method per thing the API asks.

A request builds one ``Inspector`` with what every answer works on — the runtime's
``deps``, the tenant ``store``, the ``caller`` its model calls are billed to, the
``principal`` its writes are audited as, and (on a session's routes) the ``session``
— and a view calls one method on it, which answers the JSON-ready body its route
returns (or raises the ``HangoError`` its route answers with). The work lives in the
modules named for it: the inspect answer (``inspect_answer``), the call ledger
(``call_ledger``), a one-call try (``try_call``), override sets (``override_sets``,
``pending_save``). Nothing here reads a Flask request, and the blueprints import
nothing else of ``hango.inspector``.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from hango.agent.deps import Deps
from hango.agent.overrides import Override
from hango.agent.state import Caller
from hango.auth import Principal
from hango.inspector import call_ledger, inspect_answer, override_sets, pending_save, try_call, trying
from hango.inspector.override_rules import MAX_REPLACEMENT
from hango.inspector.override_sets import Expected
from hango.inspector.pending import ROUTES, Proposal
from hango.inspector.suggestions import KINDS as SUGGESTION_KINDS
from hango.store import TenantStore
from hango.store.context_overrides import Target
from hango.store.pages import Page

__all__ = [
    "MAX_REPLACEMENT",
    "ROUTES",
    "SUGGESTION_KINDS",
    "Inspector",
    "Proposal",
    "Target",
    "TryBody",
    "proposal",
]

TryBody = trying.TryBody


def proposal(sets: dict[str, Sequence[Override] | None]) -> Proposal:
    """The proposed set of each route (None: the stored one)."""
    return Proposal(*(sets[route] for route in ROUTES))


@dataclass(frozen=True)
class Inspector:
    """The context inspector as one request sees it: its tenant store, caller, principal and session."""

    deps: Deps
    store: TenantStore
    caller: Caller
    principal: Principal | None = None
    session: Any = None  # the session row of a session's route (None on an agent's)

    @property
    def _on(self) -> tuple[Deps, TenantStore, Any, Caller]:
        return self.deps, self.store, self.session, self.caller

    @property
    def _who(self) -> Principal:
        assert self.principal is not None, "a write needs the request's principal"
        return self.principal

    # --- inspect and Optimize ------------------------------------------------------------------------

    def inspect(
        self, *, full: str | None = None, format: str = "parts", compaction: str | None = None
    ) -> dict:
        """The session's next model request: part by part, one part whole, or the request body itself."""
        return inspect_answer.inspect(*self._on, full=full, format=format, compaction=compaction)

    def suggestions(self, limit: int) -> dict[str, Any]:
        """Ranked suggestions of parts to drop (at most ``limit``), each measured and priced."""
        return inspect_answer.suggestions(*self._on, limit)

    # --- override sets and pending changes -----------------------------------------------------------

    def override_set(self, target: Target) -> tuple[dict, str]:
        """The target's stored set as the API answers it, and its ETag."""
        return override_sets.override_set(self.store, target)

    def put_overrides(
        self, target: Target, overrides: list[Override], expected: Expected
    ) -> tuple[dict, str]:
        """Store the target's set (checked against ``expected``, the ``If-Match``); the stored set and ETag."""
        put = {"overrides": overrides, "expected": expected, "who": self._who}
        return override_sets.put_overrides(*self._on, target, **put)

    def preview(self, proposed: Proposal) -> dict[str, Any]:
        """The inspect response as if the proposed sets were saved, plus ``pending``. Nothing is written."""
        return inspect_answer.preview(*self._on, proposed)

    def save(self, halves: dict[str, tuple[list[Override], Expected] | None]) -> dict[str, Any]:
        """Store the agent's and the session's proposed sets in the request's one transaction."""
        return pending_save.save(*self._on, halves, who=self._who)

    # --- the call ledger -----------------------------------------------------------------------------

    def calls(self, cursor: Any, limit: int) -> Page:
        """The session's model calls, newest first, each with its usage, cost and cache verdict."""
        return call_ledger.calls(self.deps, self.store, self.session, cursor, limit)

    def cost(self) -> dict[str, Any]:
        """What the session's model calls cost so far, in total and per model."""
        return call_ledger.cost(self.deps, self.store, self.session)

    def call_detail(self, call_id: uuid.UUID) -> dict[str, Any]:
        """One call's parts as it sent them (404 when the session has no such call)."""
        return call_ledger.call_detail(*self._on, call_id)

    def run_calls(self, run: Any) -> list[dict[str, Any]]:
        """A try run's calls, each as ``call_detail`` answers it."""
        return call_ledger.run_calls(*self._on, run)

    def diff(self, *, earlier: str, later: str) -> dict[str, Any]:
        """What changed between two calls, and the first difference's cause."""
        return call_ledger.diff(*self._on, earlier=earlier, later=later)

    # --- try -----------------------------------------------------------------------------------------

    def try_call(self, body: TryBody, *, run_in_pool: Callable[[Callable[[], Any], float], Any]) -> dict:
        """One model call with the current overrides plus ``body``'s; nothing of the session is stored."""
        return try_call.try_call(*self._on, body, principal=self._who, run_in_pool=run_in_pool)
