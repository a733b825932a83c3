"""Pending changes: a proposed pair of override sets, screened and closed as the PUTs would, and their preview.

The panel and the CLI hold unsaved changes as two proposed sets (the agent's
and the session's). ``close_proposal`` screens each exactly as its PUT does
(``validate_set`` on the agent's or the session's next request, then
``closed_for_put``), so a preview refuses what a save would refuse and pulls in
the same companions. ``preview`` assembles the session's next call with the
closed sets in place of the stored ones: the inspect response as if they were
saved, every derived effect included. A part the sets do not name but that the
call leaves out *because of* another part says so in ``excluded_by`` (a tool
pair companion names the part that pulled it in; ``system:subagent`` names
``tool:task``, whose exclusion drops the block; an MCP server's tool names
``tool:<server>/*`` when the whole server is left out).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from hango.agent.assembly import Prepared, prepare_session
from hango.agent.deps import Deps
from hango.agent.estimator import estimate_request
from hango.agent.ledger.record import Previous
from hango.agent.ledger.verdict import Outlook, change_cache_loss
from hango.agent.overrides import EXCLUDE, Override, Overrides
from hango.agent.parts import PartID
from hango.agent.state import INSPECT, Caller
from hango.inspector import override_sets
from hango.inspector.inspection import Assembly, assemble
from hango.inspector.net_price import net_price
from hango.inspector.override_rules import closed_for_put, validate_set
from hango.inspector.snapshot import PartView, Snapshot
from hango.providers.prices import Rates
from hango.store import TenantStore
from hango.store.context_overrides import StoredOverride, Target

ROUTES = ("agent", "session")


@dataclass(frozen=True)
class Proposal:
    """The sets a client would save; None for a route keeps its stored set."""

    agent: Sequence[Override] | None = None
    session: Sequence[Override] | None = None

    def of(self, route: str) -> Sequence[Override] | None:
        return self.agent if route == "agent" else self.session


@dataclass(frozen=True)
class Closed:
    """One route's set as its PUT would store it, and the companions it newly pulls in."""

    overrides: list[Override]
    added: list[PartID]
    changed: bool


def stored_set(store: TenantStore, target: Target) -> list[StoredOverride]:
    """The target's stored set."""
    return store.context_overrides.list(target)


def prepared_for(deps: Deps, store: TenantStore, session: Any, caller: Caller, route: str) -> Prepared:
    """The next call a route's set must leave valid: the session's, or the agent's side of every session's."""
    return override_sets.prepared_for(
        deps, store, session, caller, Target(route, session.agent_id if route == "agent" else session.id)
    )


def close_route(
    prepared: Prepared, route: str, wanted: Sequence[Override], stored: list[StoredOverride]
) -> Closed:
    """``wanted`` screened and closed on ``prepared`` exactly as the route's PUT does."""
    screened = validate_set(prepared.chain, prepared.state, list(wanted), [o.part for o in stored], route)
    closed, added = closed_for_put(screened, route, [o.part for o in stored if o.action == EXCLUDE])
    was = sorted((o.part, o.action, o.replacement, o.paired_from) for o in stored)
    now = sorted((o.part, o.action, o.replacement, o.paired_from) for o in closed)
    return Closed(closed, added, was != now)


def _as_overrides(stored: list[StoredOverride]) -> list[Override]:
    return [Override(o.part, o.action, o.replacement, o.paired_from) for o in stored]


@dataclass(frozen=True)
class Preview:
    """The session's next call with the proposed sets, the stored call it would replace, and each set closed."""

    assembly: Assembly
    stored: Assembly
    closed: dict[str, Closed]

    @property
    def added(self) -> list[PartID]:
        return [p for route in ROUTES for p in self.closed[route].added]

    def change(self, held: Previous | None, ahead: Outlook, rates: Rates) -> dict[str, Any]:
        """The figures of the change itself: companions, which routes change, its net price, the sets.

        ``held`` is the previous call the provider holds, ``ahead`` the next call's outlook.
        """
        saved = estimate_request(self.stored.captured.to_request()) - estimate_request(
            self.assembly.captured.to_request()
        )
        loss = self.cache_loss(held, ahead)
        return {
            "added": self.added,
            "changed": {route: self.closed[route].changed for route in ROUTES},
            "tokens_saved": saved,
            "cache_loss_tokens": loss,
            **net_price(saved, loss, rates, ahead),
            "overrides": {
                route: [dataclasses.asdict(o) for o in self.closed[route].overrides] for route in ROUTES
            },
        }

    def cache_loss(self, held: Previous | None, ahead: Outlook) -> int:
        """What saving costs the prompt cache (negative: what it restores), by the one cache model: the next
        call's expected read without the change less the one with it, both against what the provider holds."""
        return change_cache_loss(held, self.stored.sent, self.assembly.sent, ahead)


def preview(deps: Deps, store: TenantStore, session: Any, caller: Caller, proposal: Proposal) -> Preview:
    """Screen and close each proposed set, then assemble the session's next call with them in place."""
    prepared = prepare_session(deps, store, session, caller, INSPECT)
    closed: dict[str, Closed] = {}
    for route in ROUTES:
        target = Target(route, session.agent_id if route == "agent" else session.id)
        stored = stored_set(store, target)
        wanted = proposal.of(route)
        if wanted is None:
            closed[route] = Closed(_as_overrides(stored), [], False)
            continue
        on = prepared if route == "session" else prepared_for(deps, store, session, caller, route)
        closed[route] = close_route(on, route, wanted, stored)
    stored_assembly = assemble(prepared.chain, prepared.state)
    state = dataclasses.replace(
        prepared.state, overrides=Overrides.of(closed["agent"].overrides, closed["session"].overrides)
    )
    return Preview(assemble(prepared.chain, state), stored_assembly, closed)


def _unoverridden(overrides: Overrides, view: PartView) -> bool:
    """Whether ``view`` is present without an override of its own."""
    return not view.stale and overrides.get(view.id) is None


def mark_excluded_by(snapshot: Snapshot, assembly: Assembly) -> None:
    """Name, on every part left out without an override of its own, the part whose override left it out.

    A companion names the part that pulled it in (``paired_from``); an MCP server's tool left out with
    its whole server names the server's part (``tool:<server>/*``: the call's toolset says so); a system
    block that only the overrides' excluded tools removed names the first of those tools whose return
    brings it back (the call's report says so, ``Report.dropped_with``).
    """
    overrides = assembly.state.overrides
    if not overrides:  # nothing left out: every view keeps ``excluded_by`` None
        return
    for view in (*snapshot.system, *snapshot.tools, *snapshot.messages):
        override = overrides.get(view.id)
        view.excluded_by = override.paired_from if override is not None else None
    report = assembly.captured.report
    tools = {state.part: state for state in report.toolset.states}
    for view in snapshot.tools:
        state = tools.get(view.id)
        if state is not None and state.excluded_by is not None and _unoverridden(overrides, view):
            view.excluded_by = state.excluded_by  # its server's part: an own override is not "unoverridden"
    dropped = dict(report.dropped_with)
    for view in snapshot.system:
        if not view.included and _unoverridden(overrides, view) and view.id in dropped:
            view.excluded_by = dropped[view.id]
