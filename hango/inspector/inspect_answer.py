"""The inspect answer: the session's next call with its figures, as inspect, a preview and suggestions give it.

Each function assembles the next call through the real chain (``inspect_session``, or the
pending preview's assembly as if proposed sets were saved), prices every part by the next
call's one cache outlook and answers the JSON-ready body its route returns. Nothing is
written; each request is one span (and an inspect one duration sample).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from opentelemetry import trace

from hango import telemetry
from hango.agent.deps import Deps
from hango.agent.draft import Draft
from hango.agent.state import Caller
from hango.inspector import calibration
from hango.inspector.cache_outlook import NextCache, next_cache
from hango.inspector.call_views import next_call_cost
from hango.inspector.defer_suggestion import defer_servers
from hango.inspector.inspection import Assembly, inspect_session
from hango.inspector.net_price import net_price
from hango.inspector.override_sets import agent_scope
from hango.inspector.part_content import full_part
from hango.inspector.pending import Proposal, mark_excluded_by
from hango.inspector.pending import preview as pending_preview
from hango.inspector.snapshot import Snapshot, build_snapshot
from hango.inspector.suggestion_savings import measured
from hango.inspector.suggestions import Thresholds, compaction_preview, suggest
from hango.inspector.tool_groups import tool_groups
from hango.inspector.units import scaled_totals
from hango.inspector.verdict_words import next_verdict_words
from hango.messages import message_to_dict
from hango.providers import WIRE_FORMATS, split_model, wire_body
from hango.providers.prices import prices_of
from hango.store import TenantStore
from hango.telemetry import names


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
        assembly = inspect_session(deps, store, session, caller)
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
    body["tools_sent"] = sum(group.sent for group in groups)
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


def suggestions(deps: Deps, store: TenantStore, session: Any, caller: Caller, limit: int) -> dict[str, Any]:
    """Ranked suggestions of parts to drop, with the tokens each saves and the cache it costs (at most
    ``limit``); computed from the assembly and snapshot inspect answers with, nothing written."""
    with telemetry.tracer().start_as_current_span(names.SPAN_CONTEXT_SUGGEST) as span:
        assembly = inspect_session(deps, store, session, caller)
        # the calibration is read only when the provider caches (inspect reads it in any case)
        cache, snapshot = _looked_ahead(
            assembly, store, deps, lambda: _calibrated_ratio(_recent_usage(store, assembly))
        )
        ahead = cache.outlook
        limits = Thresholds.from_config(deps.config)
        usage = store.messages.tool_usage(assembly.state.agent.id, limits.tool_window)
        preview = compaction_preview(assembly)
        found = suggest(assembly, snapshot, usage, limits, preview) + defer_servers(assembly, snapshot)
        found = measured(assembly, cache, found)
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
