"""The inspector's front door: one function per thing the API asks of the context inspector.

Every function takes what it works on explicitly — the runtime's ``deps``, the tenant
``store``, the ``session`` and the ``caller`` — and answers the JSON-ready body its
route returns (or raises the ``HangoError`` its route answers with). The blueprints
parse a request, call one of these and serialize the answer; nothing here reads a
Flask request, and the blueprints import nothing else of ``hango.inspector``.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from opentelemetry import trace

from hango import telemetry
from hango.agent.assembly import send
from hango.agent.deps import Deps
from hango.agent.draft import Draft
from hango.agent.ledger.causes import facts_of
from hango.agent.ledger.record import sent_call
from hango.agent.overrides import Override
from hango.agent.state import Caller
from hango.auth import Principal
from hango.errors import HangoError, NotFound, Unprocessable
from hango.inspector import calibration, trying
from hango.inspector.cache_outlook import NextCache, next_cache
from hango.inspector.call_diff import diff as call_diff
from hango.inspector.call_views import (
    call_and_previous,
    call_parts,
    last_of_conversation,
    ledger_call,
    next_call_cost,
    summarized_messages,
)
from hango.inspector.inspection import Assembly, inspect_session
from hango.inspector.net_price import net_price
from hango.inspector.override_rules import MAX_REPLACEMENT
from hango.inspector.override_sets import Expected, agent_scope, override_set, put_overrides
from hango.inspector.part_content import full_part
from hango.inspector.pending import ROUTES, Proposal, mark_excluded_by
from hango.inspector.pending import preview as pending_preview
from hango.inspector.snapshot import Snapshot, build_snapshot
from hango.inspector.suggestion_savings import measured
from hango.inspector.suggestions import KINDS as SUGGESTION_KINDS
from hango.inspector.suggestions import Thresholds, compaction_preview, suggest
from hango.inspector.tool_groups import tool_groups
from hango.inspector.try_audit import TryAudit
from hango.inspector.units import scaled_totals
from hango.inspector.verdict_words import next_verdict_words, verdict_words
from hango.messages import message_to_dict
from hango.providers import WIRE_FORMATS, split_model, wire_body
from hango.providers.prices import Prices, Tokens, part_costs, prices_of, session_cost
from hango.store import TenantStore
from hango.store.context_overrides import Target
from hango.store.pages import Page
from hango.store.usage import TOKEN_COLUMNS
from hango.telemetry import names

__all__ = [
    "MAX_REPLACEMENT",
    "ROUTES",
    "SUGGESTION_KINDS",
    "Proposal",
    "Target",
    "TryBody",
    "override_set",
    "put_overrides",
]

TryBody = trying.TryBody


def assemble(deps: Deps, store: TenantStore, session: Any, caller: Caller) -> Assembly:
    """The session's next call, assembled through the real chain."""
    return inspect_session(deps, store, session, caller)


# --- inspect -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Inspected:
    """An assembly's inspect figures: its parts, the session's last call and calibration, the cache outlook."""

    snapshot: Snapshot
    recent: Any  # ``store.usage.recent``'s row
    cache: NextCache

    @property
    def calibrated(self) -> calibration.Calibration | None:
        return calibration.calibration_of(self.recent.ratio, self.recent.calibration_calls)


def _recent_usage(store: TenantStore, assembly: Assembly) -> Any:
    """The session's last call and the agent's calibration for its model (one statement)."""
    agent = assembly.state.agent
    provider, model = split_model(agent.model)
    return store.usage.recent(assembly.state.session_id, agent.id, provider, model, calibration.CALLS)


def _calibrated_ratio(recent: Any) -> float | None:
    """The calibration ratio in ``recent`` (a ``_recent_usage`` row), None without calibration."""
    calibrated = calibration.calibration_of(recent.ratio, recent.calibration_calls)
    return None if calibrated is None else calibrated.ratio


def _looked_ahead(
    assembly: Assembly, store: TenantStore, deps: Deps, ratio: Callable[[], float | None]
) -> tuple[NextCache, Snapshot]:
    """The inspect pipeline: the next call's one cache outlook, then the snapshot priced by it."""
    cache = next_cache(assembly, store, deps, ratio)
    return cache, build_snapshot(assembly, deps, cache.outlook, cache.previous)


def _inspected(deps: Deps, store: TenantStore, assembly: Assembly) -> Inspected:
    """The inspect figures of an assembly, every derived exclusion named (``excluded_by``), every cache
    price by the next call's one outlook."""
    recent = _recent_usage(store, assembly)
    cache, snapshot = _looked_ahead(assembly, store, deps, lambda: _calibrated_ratio(recent))
    mark_excluded_by(snapshot, assembly)
    return Inspected(snapshot, recent, cache)


def _neutral_body(draft: Draft) -> dict[str, Any]:
    """The provider-neutral request exactly as the next call would send it (after overrides)."""
    request = draft.to_request()
    return {
        "model": request.model,
        "max_tokens": request.max_tokens,
        "system": [{"text": b.text, "cache_control": b.cache_control} for b in request.system],
        "tools": [
            {"name": t.name, "description": t.description, "input_schema": t.input_schema}
            for t in request.tools
        ],
        "messages": [{**message_to_dict(m), "cache_control": m.cache_control} for m in request.messages],
    }


def _wire_request(draft: Draft, wire_format: str) -> dict[str, Any]:
    """The exact body the ``wire_format`` adapter POSTs for the next call (the bare model name in it)."""
    return wire_body(wire_format, draft.to_request(split_model(draft.model)[1]))


def _wire_format_of(model: str) -> str:
    """The ``format`` that gives the exact body the agent's provider is sent (``request`` when none)."""
    provider = split_model(model)[0]
    return provider if provider in WIRE_FORMATS else "request"


def _record(snapshot: Snapshot, started: float) -> None:
    span = trace.get_current_span()
    span.set_attributes(
        {
            names.CONTEXT_PARTS_SYSTEM: len(snapshot.system),
            names.CONTEXT_PARTS_TOOLS: len(snapshot.tools),
            names.CONTEXT_PARTS_MESSAGES: len(snapshot.messages),
            names.CONTEXT_TOKENS_BEFORE: snapshot.total_before,
            names.CONTEXT_TOKENS_AFTER: snapshot.total_after,
            names.CONTEXT_WOULD_COMPACT: snapshot.would_compact,
        }
    )
    for view in (*snapshot.system, *snapshot.tools, *snapshot.messages):
        if view.stale:
            span.add_event(names.EVENT_OVERRIDE_STALE, {"part": view.id})
        elif view.paired:
            span.add_event(names.EVENT_OVERRIDE_PAIRED, {"part": view.id})
    duration = telemetry.meter().create_histogram(names.METRIC_CONTEXT_INSPECT_DURATION, unit="s")
    duration.record(time.monotonic() - started)


def inspect(
    deps: Deps,
    store: TenantStore,
    session: Any,
    caller: Caller,
    *,
    full: str | None = None,
    format: str = "parts",
    compaction: str | None = None,
) -> dict[str, Any]:
    """The session's next model request: part by part (``format`` ``parts``), one part whole (``full``),
    or the request body itself (``request`` or a wire format). Nothing is written."""
    started = time.monotonic()
    with telemetry.tracer().start_as_current_span(names.SPAN_CONTEXT_INSPECT):
        assembly = assemble(deps, store, session, caller)
        if full:
            return full_part(assembly, full)
        if format == "request":
            return _neutral_body(assembly.captured)
        if format in WIRE_FORMATS:
            return _wire_request(assembly.captured, format)
        found = _inspected(deps, store, assembly)
        _record(found.snapshot, started)
    return _inspect_response(deps, assembly, found, compaction == "preview")


def _inspect_response(deps: Deps, assembly: Assembly, found: Inspected, compaction: bool) -> dict[str, Any]:
    """The inspect response of ``assembly``: its parts and totals, calibration, cache outlook, compaction."""
    agent = assembly.state.agent
    session_id = assembly.state.session_id
    snapshot, recent, calibrated = found.snapshot, found.recent, found.calibrated
    body = snapshot.as_dict()
    if body["counted"] == "provider":  # one unit: the groups in the provider's count, no estimate beside it
        body["totals"] = scaled_totals(body["totals"], body["total_before"], body["total_after"])
    body["totals_unit"] = "provider_scaled" if body["counted"] == "provider" else "estimate"
    state = assembly.state
    groups = tool_groups(snapshot.tools, state.overrides, state.unavailable_tools)
    body["tool_groups"] = [vars(group) for group in groups]
    cache = found.cache.verdict(assembly)
    cache.update(next_verdict_words(cache))
    return {
        "session_id": str(session_id),
        "agent_id": str(agent.id),
        "model": agent.model,
        "wire_format": _wire_format_of(agent.model),
        **body,
        **(calibrated.report(body["totals"], body["counted"]) if calibrated else calibration.UNCALIBRATED),
        # ``reported`` is never null in a stored row: null means no run of the session that ended keeping
        # its turn made a call yet (``Usage.recent``).
        "last_call": None
        if recent.reported is None
        else {
            "purpose": recent.purpose,
            "estimated": recent.estimated,
            "reported": recent.reported,
            "run_id": str(recent.run_id),
            "at": recent.at,
        },
        "cache": cache,
        "next_call_cost": next_call_cost(assembly, cache, found.cache.outlook, deps, body["total_after"]),
        **({"compaction": compaction_preview(assembly)} if snapshot.would_compact or compaction else {}),
    }


# --- suggestions ---------------------------------------------------------------------------------


def suggestions(deps: Deps, store: TenantStore, session: Any, caller: Caller, limit: int) -> dict[str, Any]:
    """Ranked suggestions of parts to drop, with the tokens each saves and the cache it costs (at most
    ``limit``); computed from the assembly and snapshot inspect answers with, nothing written."""
    with telemetry.tracer().start_as_current_span(names.SPAN_CONTEXT_SUGGEST) as span:
        assembly = assemble(deps, store, session, caller)
        # the calibration is read only when the provider caches (inspect reads it in any case)
        cache, snapshot = _looked_ahead(
            assembly, store, deps, lambda: _calibrated_ratio(_recent_usage(store, assembly))
        )
        ahead = cache.outlook
        limits = Thresholds.from_config(deps.config)
        usage = store.messages.tool_usage(assembly.state.agent.id, limits.tool_window)
        preview = compaction_preview(assembly)
        found = measured(assembly, cache, suggest(assembly, snapshot, usage, limits, preview))
        found.sort(key=lambda s: -s.tokens_saved)
        span.set_attributes(
            {
                names.CONTEXT_SUGGESTIONS: len(found),
                names.CONTEXT_SUGGESTED_TOKENS: sum(s.tokens_saved for s in found),
            }
        )
    rates = prices_of(deps.config.prices).rates(assembly.state.agent.model)
    return {
        "session_id": str(session.id),
        "agent_id": str(assembly.state.agent.id),
        "total_after": snapshot.total_after,
        "count": len(found),
        "suggestions": [
            {**s.as_dict(), **net_price(s.tokens_saved, s.cache_loss_tokens, rates, ahead)}
            for s in found[:limit]
        ],
        "compaction": preview,
    }


# --- pending changes -----------------------------------------------------------------------------


def proposal(sets: dict[str, Sequence[Override] | None]) -> Proposal:
    """The proposed set of each route (None: the stored one)."""
    return Proposal(*(sets[route] for route in ROUTES))


def preview(
    deps: Deps, store: TenantStore, session: Any, caller: Caller, proposed: Proposal
) -> dict[str, Any]:
    """The inspect response as if the proposed agent and session sets were saved, plus ``pending``: what
    the change does and whom the agent's set reaches. Nothing is written."""
    with telemetry.tracer().start_as_current_span(names.SPAN_CONTEXT_INSPECT):
        shown = pending_preview(deps, store, session, caller, proposed)
        found = _inspected(deps, store, shown.assembly)
    answer = _inspect_response(deps, shown.assembly, found, False)
    rates = prices_of(deps.config.prices).rates(shown.assembly.state.agent.model)
    answer["pending"] = {
        **shown.change(found.cache.previous, found.cache.outlook, rates),
        "scope": agent_scope(store, session.agent_id),
    }
    return answer


def save(
    deps: Deps,
    store: TenantStore,
    session: Any,
    caller: Caller,
    halves: dict[str, tuple[list[Override], Expected] | None],
    *,
    who: Principal,
) -> dict[str, Any]:
    """Store the agent's and the session's proposed sets (each with the ETags it was read with) in the
    request's one transaction; each route's stored set, its ``added`` companions and ETag."""
    if all(half is None for half in halves.values()):
        raise Unprocessable("name the agent's set, the session's, or both", code="nothing_to_save")
    saved: dict[str, Any] = {}
    for route in ROUTES:
        target = Target(route, session.agent_id if route == "agent" else session.id)
        half = halves[route]
        if half is None:
            answer, etag = override_set(store, target)
        else:
            overrides, expected = half
            answer, etag = put_overrides(
                deps, store, session, caller, target, overrides=overrides, expected=expected, who=who
            )
        saved[route] = {**answer, "added": answer.get("added", []), "etag": etag}
    return saved


# --- the call ledger -----------------------------------------------------------------------------


def prices(deps: Deps) -> Prices:
    return prices_of(deps.config.prices)


def calls(deps: Deps, store: TenantStore, session: Any, cursor: Any, limit: int) -> Page:
    """The session's model calls, newest first, each with its usage, cost and cache verdict."""
    found = store.model_calls.page(session.id, cursor, limit)
    table = prices(deps)
    return Page([call_view(row, table) for row in found.items], found.next_cursor)


def cost(deps: Deps, store: TenantStore, session: Any) -> dict[str, Any]:
    """What the session's model calls cost so far, in total and per model."""
    return session_cost(store.usage.of_session(session.id), prices(deps))


def call_view(row: Any, table: Prices) -> dict[str, Any]:
    """One ledger row with its usage and cost, as the API shows it."""
    cache = {
        "expected_read_tokens": row.expected_cache_read,
        "reported_read_tokens": row.cache_read_tokens,
        "miss_reason": row.miss_reason,
        "miss_part": row.miss_part,
        "miss_cause": row.miss_cause,
    }
    return {
        **{name: row._mapping[name] for name in ("id", "purpose", "run_id", "model", "started_at")},
        "duration_ms": row.duration_ms,
        "usage": {name: row._mapping[name] for name in TOKEN_COLUMNS},
        "estimated_input_tokens": row.estimated_input_tokens,
        "parts_count": row.parts_count,
        "cache": {**cache, **verdict_words(cache)},
        "cost": table.cost(row.model, Tokens.of(row._mapping), row.started_at).as_dict(),
    }


def _part_so_far(total: Any) -> dict[str, Any] | None:
    """A part's total so far as the API shows it (None when no recorded call added to it)."""
    if total is None:
        return None
    usd = float(total.usd) if total.priced_calls else None
    return {"calls": total.calls, "priced_calls": total.priced_calls, "usd": usd}


def _detail(
    store: TenantStore, session_id: uuid.UUID, call_id: uuid.UUID, assembly: Assembly, table: Prices
) -> dict[str, Any] | None:
    """One call with its parts (None when the session has no such call); ``assembly`` is the session's
    next call: its current sources show the parts that still match."""
    row = store.model_calls.get(session_id, call_id)
    if row is None:
        return None
    call, previous = call_and_previous(store, session_id, call_id)
    parts = call_parts(call, assembly, previous, summarized_messages(store, call, assembly))
    shares = part_costs(
        table.rates(row.model, row.started_at), [p.tokens for p in call.parts], Tokens.of(row._mapping)
    )
    so_far = store.part_costs.of(session_id, [p.part for p in call.parts])
    for part, cost in zip(parts, shares, strict=True):
        part["cost_usd"] = None if cost is None else float(cost)
        part["cost_so_far"] = _part_so_far(so_far.get(part["id"]))
    sent = {p.part for p in call.parts}
    removed = [p.part for p in previous.parts if p.part not in sent] if previous else []
    return {
        **call_view(row, table),
        "previous_id": row.base_id,
        "removed_since_previous": removed,
        "parts": parts,
    }


def call_detail(
    deps: Deps, store: TenantStore, session: Any, caller: Caller, call_id: uuid.UUID
) -> dict[str, Any]:
    """One call's parts as it sent them, shown from current sources where those still match (404 when
    the session has no such call)."""
    found = _detail(store, session.id, call_id, assemble(deps, store, session, caller), prices(deps))
    if found is None:
        raise NotFound("no such call in this session")
    return found


def run_calls(deps: Deps, store: TenantStore, session: Any, caller: Caller, run: Any) -> list[dict[str, Any]]:
    """A try run's calls as ``call_detail`` answers each (one assembly for all of them); a call the ledger
    does not hold (``HANGO_CALL_LEDGER=0``) stays as the run listed it."""
    listed = run.result.get("calls", [])
    if not any(call["id"] for call in listed):
        return listed
    assembly, table = assemble(deps, store, session, caller), prices(deps)
    shown = []
    for call in listed:
        found = call["id"] and _detail(store, run.session_id, uuid.UUID(call["id"]), assembly, table)
        shown.append(found or call)
    return shown


def diff(
    deps: Deps, store: TenantStore, session: Any, caller: Caller, *, earlier: str, later: str
) -> dict[str, Any]:
    """What changed between two calls (``earlier`` a call id or ``last``, ``later`` a call id or
    ``next``), and the first difference's cause."""
    earlier_id = last_of_conversation(store, session.id) if earlier == "last" else uuid.UUID(earlier)
    before = None if earlier_id is None else ledger_call(store, session.id, earlier_id)
    if before is None:
        raise NotFound("no such call in this session")
    assembly = assemble(deps, store, session, caller)
    later_id = None if later == "next" else uuid.UUID(later)
    after = sent_call(assembly.captured) if later_id is None else ledger_call(store, session.id, later_id)
    if after is None:
        raise NotFound("no such call in this session")
    facts = facts_of(
        store.recorded_changes.between(session.id, assembly.state.agent.id, earlier_id, later_id),
        first=str(earlier_id),
    )
    return {"from_": str(earlier_id), "to": later, **call_diff(before, after, facts)}


# --- try -----------------------------------------------------------------------------------------


def try_call(
    deps: Deps,
    store: TenantStore,
    session: Any,
    caller: Caller,
    body: trying.TryBody,
    *,
    principal: Principal,
    run_in_pool: Callable[[Callable[[], Any], float], Any],
) -> dict[str, Any]:
    """One model call with the current overrides plus ``body``'s; nothing of the session is stored.

    The request's transaction is committed before the call (the reserved seq is kept; nothing is
    left open during the call); ``run_in_pool`` runs the provider call in the try pool by its
    deadline. The ``context.try`` audit row is committed with the call's record, or alone when the
    call fails.
    """
    ready = trying.prepare_try(deps, store, session, caller, body)
    state, plan = ready.state, ready.plan
    audit = TryAudit(session.id, principal, plan.excluded, state.agent.model)
    ready.gateway.alongside = audit.with_call
    _commit(store)
    started = time.monotonic()
    state.deadline = started + deps.config.context_try_timeout  # the gateway gives the SDK call what is left
    outcome = "error"
    try:
        response = run_in_pool(lambda: send(ready.chain, ready.draft, state, ready.gateway), state.deadline)
        outcome = "ok"
    except HangoError as exc:
        outcome = exc.code
        raise
    finally:
        if audit.alone(outcome, store):  # a failed call's row, or one the record did not write
            _commit(store)
        telemetry.meter().create_counter(names.METRIC_CONTEXT_TRY).add(1, {"outcome": outcome})
    return {
        "message": trying.answer(response),
        "stop_reason": response.stop_reason,
        "usage": vars(response.usage),
        # what the provider's reported usage costs at the model's prices, as the calls ledger prices it
        "cost": prices(deps).cost(state.agent.model, Tokens.of(vars(response.usage))).as_dict(),
        "model": state.agent.model,
        "excluded": plan.excluded,
        "added": plan.added,
        "duration_ms": int((time.monotonic() - started) * 1000),
    }


def _commit(store: TenantStore) -> None:
    """Commit the request's transaction (``store``'s connection), if one is open."""
    if store.conn.in_transaction():
        store.conn.commit()


def screen_turn(deps: Deps, store: TenantStore, session: Any, caller: Caller, body: trying.TryBody) -> None:
    """422 when a whole-turn try's body would be refused as a one-call try's."""
    trying.screen_turn(deps, store, session, caller, body)
