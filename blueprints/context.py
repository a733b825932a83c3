"""Inspect: ``GET /v1/sessions/{id}/context`` — what the session's next model call would send."""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass
from typing import Any

from flask import g
from flask.views import MethodView
from marshmallow import Schema, fields, validate
from opentelemetry import trace

from blueprints.common import error_response, part_id
from blueprints.context_schemas import ANSWERS
from hango import collector, telemetry, tenancy
from hango.agent.draft import Draft
from hango.api import Blueprint
from hango.inspector import calibration
from hango.inspector.cache_outlook import NextCache, next_cache
from hango.inspector.call_views import next_call_cost
from hango.inspector.inspection import Assembly, inspect_session
from hango.inspector.part_content import full_part
from hango.inspector.pending import mark_excluded_by
from hango.inspector.snapshot import Snapshot, build_snapshot
from hango.inspector.suggestions import compaction_preview
from hango.inspector.units import scaled_totals
from hango.messages import message_to_dict
from hango.providers import WIRE_FORMATS, split_model, wire_body
from hango.telemetry import names

blp = Blueprint(
    "context", __name__, url_prefix="/v1/sessions/<uuid:session_id>/context", description="Context inspector"
)


class InspectArgsSchema(Schema):
    full = part_id(load_default=None, metadata={"description": "a part id: its whole content"})
    format = fields.String(
        load_default="parts",
        validate=validate.OneOf(["parts", "request", *WIRE_FORMATS]),
        metadata={
            "description": "`parts` (the inspect response), `request` (the provider-neutral request), or "
            "`anthropic` / `openai`: the exact JSON body that provider's adapter POSTs for the next call"
        },
    )
    compaction = fields.String(
        load_default=None,
        validate=validate.OneOf(["preview"]),
        metadata={"description": "`preview`: say what a compaction would do even below the trigger"},
    )


def session_assembly() -> Assembly:
    """The current session's next call, assembled through the real chain."""
    return inspect_session(tenancy.deps(), tenancy.store(), g.session, tenancy.caller())


def neutral_body(draft: Draft) -> dict[str, Any]:
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


def wire_request(draft: Draft, wire_format: str) -> dict[str, Any]:
    """The exact body the ``wire_format`` adapter POSTs for the next call (the bare model name in it)."""
    return wire_body(wire_format, draft.to_request(split_model(draft.model)[1]))


def wire_format_of(model: str) -> str:
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


@blp.route("")
class Context(MethodView):
    # an inspect's objects are acyclic and live until its answer is written: no collector pass over them
    @collector.paused_during
    @blp.arguments(InspectArgsSchema, location="query")
    @blp.response(200, description="the inspect response, one part (`full`), or a request body (`format`)")
    @blp.doc(responses={"200": {"content": {"application/json": {"schema": {"anyOf": ANSWERS}}}}})
    @error_response(blp, 404, "`not_found`: no such session (or not the caller's), or `full` names no part.")
    @error_response(blp, 422, "`malformed_part`: `full` is not a part id.")
    def get(self, args: dict, session_id: uuid.UUID) -> dict[str, Any]:
        """The session's next model request, part by part with token estimates; nothing is written."""
        started = time.monotonic()
        with telemetry.tracer().start_as_current_span(names.SPAN_CONTEXT_INSPECT):
            assembly = session_assembly()
            if args["full"]:
                return full_part(assembly, args["full"])
            if args["format"] == "request":
                return neutral_body(assembly.captured)
            if args["format"] in WIRE_FORMATS:
                return wire_request(assembly.captured, args["format"])
            found = inspected(assembly)
            _record(found.snapshot, started)
        return inspect_response(assembly, found, args["compaction"] == "preview")


@dataclass(frozen=True)
class Inspected:
    """An assembly's inspect figures: its parts, the session's last call and calibration, the cache outlook."""

    snapshot: Snapshot
    recent: Any  # ``store.usage.recent``'s row
    cache: NextCache

    @property
    def calibrated(self) -> calibration.Calibration | None:
        return calibration.calibration_of(self.recent.ratio, self.recent.calibration_calls)


def recent_usage(assembly: Assembly) -> Any:
    """The session's last call and the agent's calibration for its model (one statement)."""
    agent = assembly.state.agent
    provider, model = split_model(agent.model)
    return tenancy.store().usage.recent(
        assembly.state.session_id, agent.id, provider, model, calibration.CALLS
    )


def calibrated_ratio(recent: Any) -> float | None:
    """The calibration ratio in ``recent`` (a ``recent_usage`` row), None without calibration."""
    calibrated = calibration.calibration_of(recent.ratio, recent.calibration_calls)
    return None if calibrated is None else calibrated.ratio


def inspected(assembly: Assembly) -> Inspected:
    """The inspect figures of an assembly, every derived exclusion named (``excluded_by``), every cache
    price by the next call's one outlook."""
    deps, recent = tenancy.deps(), recent_usage(assembly)
    cache = next_cache(assembly, tenancy.store(), deps, lambda: calibrated_ratio(recent))
    snapshot = build_snapshot(assembly, deps, cache.outlook)
    mark_excluded_by(snapshot, assembly)
    return Inspected(snapshot, recent, cache)


def inspect_response(assembly: Assembly, found: Inspected, compaction: bool) -> dict[str, Any]:
    """The inspect response of ``assembly``: its parts and totals, calibration, cache outlook, compaction."""
    agent = assembly.state.agent
    session_id = assembly.state.session_id
    snapshot, recent, calibrated = found.snapshot, found.recent, found.calibrated
    body = snapshot.as_dict()
    if body["counted"] == "provider":  # one unit: the groups in the provider's count, no estimate beside it
        body["totals"] = scaled_totals(body["totals"], body["total_before"], body["total_after"])
    body["totals_unit"] = "provider_scaled" if body["counted"] == "provider" else "estimate"
    cache = found.cache.verdict(assembly)
    return {
        "session_id": str(session_id),
        "agent_id": str(agent.id),
        "model": agent.model,
        "wire_format": wire_format_of(agent.model),
        **body,
        **(calibrated.report(body["totals"], body["counted"]) if calibrated else calibration.UNCALIBRATED),
        # ``reported`` is never null in a stored row: null means no run of the session made a call yet.
        "last_call": None
        if recent.reported is None
        else {"purpose": recent.purpose, "estimated": recent.estimated, "reported": recent.reported},
        "cache": cache,
        "next_call_cost": next_call_cost(
            assembly, cache, found.cache.outlook, tenancy.deps(), body["total_after"]
        ),
        **_compaction(assembly, snapshot.would_compact or compaction),
    }


def _compaction(assembly: Assembly, wanted: bool) -> dict[str, Any]:
    """``compaction``: what the summarization slot would summarize and keep (no summarizer is called)."""
    return {"compaction": compaction_preview(assembly)} if wanted else {}
