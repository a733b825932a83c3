"""The call ledger: ``GET /v1/sessions/{id}/calls[/{call_id}]`` and ``GET …/context/diff``."""

from __future__ import annotations

import re
import uuid
from typing import Any

import sqlalchemy as sa
from flask.views import MethodView
from marshmallow import Schema, ValidationError, fields

from blueprints.common import error_response, page_of, paged
from blueprints.context import session_assembly
from blueprints.context_schemas import CostSchema
from hango import tenancy
from hango.agent.ledger.causes import CAUSES, facts_of
from hango.agent.ledger.record import sent_call
from hango.api import Blueprint
from hango.errors import NotFound
from hango.inspector.call_diff import diff
from hango.inspector.call_views import call_and_previous, call_parts, last_of_conversation, ledger_call
from hango.inspector.call_words import verdict_words
from hango.providers.prices import Prices, Tokens, part_costs, prices_of, session_cost
from hango.store.pages import Page
from hango.store.usage import TOKEN_COLUMNS

blp = Blueprint("calls", __name__, url_prefix="/v1/sessions/<uuid:session_id>", description="The call ledger")
NOT_FOUND = "`not_found`: no such session (or not the caller's), or no such call in it."


class CallUsageSchema(Schema):
    input_tokens = fields.Integer()
    output_tokens = fields.Integer()
    cache_read_tokens = fields.Integer()
    cache_write_tokens = fields.Integer()


class CallCacheSchema(Schema):
    expected_read_tokens = fields.Integer(metadata={"description": "what the call should have read"})
    reported_read_tokens = fields.Integer(metadata={"description": "what the provider reported"})
    miss_reason = fields.String(
        allow_none=True,
        metadata={
            "description": "prefix_changed, expired, below_minimum, first_call, beyond_lookback or unexplained"
        },
    )
    miss_part = fields.String(
        allow_none=True,
        metadata={
            "description": "the first changed part (beyond_lookback: where the unreachable cached prefix ended)"
        },
    )
    miss_cause = fields.String(
        allow_none=True,
        metadata={
            "description": "why that part changed, from what was recorded since the previous call",
            "enum": [*CAUSES, None],
        },
    )
    badge = fields.String(metadata={"description": "hit, miss, first (nothing cached yet) or none"})
    words = fields.String(metadata={"description": "the verdict and its cause in plain words"})


class CallSchema(Schema):
    id = fields.UUID()
    purpose = fields.String()
    run_id = fields.UUID(allow_none=True)
    model = fields.String()
    started_at = fields.DateTime()
    duration_ms = fields.Integer()
    usage = fields.Nested(CallUsageSchema)
    estimated_input_tokens = fields.Integer(allow_none=True)
    parts_count = fields.Integer()
    cache = fields.Nested(CallCacheSchema)
    cost = fields.Nested(CostSchema, metadata={"description": "from the reported usage"})


class PricedCallsSchema(Schema):
    """What some calls cost: how many, how many the price table priced, and those summed."""

    calls = fields.Integer()
    priced_calls = fields.Integer()
    usd = fields.Float(
        allow_none=True, metadata={"description": "the priced calls' total; null when none is"}
    )


class CallPartSchema(Schema):
    id = fields.String(
        metadata={"description": "a part id, or `scratch:<try>:<seq>` for a message only a try sent"}
    )
    kind = fields.String(metadata={"enum": ["system", "tool", "message", "summary", "transcript", "scratch"]})
    label = fields.String()
    tokens = fields.Integer()
    preview = fields.String(allow_none=True, metadata={"description": "null when changed_since_call"})
    hash = fields.String()
    cache_breakpoint = fields.Boolean()
    changed_since_call = fields.Boolean()
    since_previous = fields.String(
        allow_none=True,
        metadata={"description": "same, changed or added against the previous call; null for the first"},
    )
    cost_usd = fields.Float(
        allow_none=True,
        metadata={"description": "its share of the call's input cost, at the rate it was read at"},
    )
    cost_so_far = fields.Nested(
        PricedCallsSchema,
        allow_none=True,
        metadata={
            "description": "its cost over every call of the session it rode in so far; null when none added to it"
        },
    )


class CallDetailSchema(CallSchema):
    previous_id = fields.UUID(allow_none=True, metadata={"description": "the previous call of its lineage"})
    removed_since_previous = fields.List(
        fields.String(), metadata={"description": "parts it no longer sends"}
    )
    parts = fields.List(fields.Nested(CallPartSchema))


CallPageSchema = page_of(CallSchema, "CallPage")


class SessionCostSchema(PricedCallsSchema):
    unpriced_reason = fields.String(allow_none=True, metadata={"description": "why some call has no price"})
    by_model = fields.List(fields.Dict(), metadata={"description": "model, calls, usd per model"})


UUID_TEXT = "[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"


def _call_or(keyword: str) -> Any:
    """A call id (a UUID in its hyphenated form, as the API writes it) or ``keyword``."""
    pattern = re.compile(f"{keyword}|{UUID_TEXT}")

    def check(value: str) -> None:
        if not pattern.fullmatch(value):
            raise ValidationError(f"expected a call id or {keyword!r}")

    return check


def _call_or_pattern(keyword: str) -> str:
    return f"^(?:{keyword}|{UUID_TEXT})$"


class DiffArgsSchema(Schema):
    from_ = fields.String(
        data_key="from",
        load_default="last",
        validate=_call_or("last"),
        metadata={"description": "a call id or `last`", "pattern": _call_or_pattern("last")},
    )
    to = fields.String(
        load_default="next",
        validate=_call_or("next"),
        metadata={"description": "a call id or `next`", "pattern": _call_or_pattern("next")},
    )


class FirstDifferenceSchema(Schema):
    part = fields.String(metadata={"description": "the first part where the calls differ"})
    cause = fields.String(
        metadata={"description": "what was recorded between the calls that changed it", "enum": list(CAUSES)}
    )
    words = fields.String(metadata={"description": "the cause and the part in plain words"})


class CommonPrefixSchema(Schema):
    parts = fields.Integer()
    tokens = fields.Integer()


class DiffSchema(Schema):
    from_ = fields.String(data_key="from", metadata={"description": "the earlier call's id"})
    to = fields.String(metadata={"description": "the later call's id, or `next`"})
    added = fields.List(fields.String(), metadata={"description": "parts only the later call sends"})
    removed = fields.List(fields.String(), metadata={"description": "parts only the earlier call sent"})
    changed = fields.List(fields.String(), metadata={"description": "parts both sent, with other content"})
    common_prefix = fields.Nested(CommonPrefixSchema)
    first_difference = fields.Nested(
        FirstDifferenceSchema, allow_none=True, metadata={"description": "null when both send the same parts"}
    )


def prices() -> Prices:
    return prices_of(tenancy.deps().config.prices)


def tokens_of(row: sa.Row) -> Tokens:
    return Tokens(row.input_tokens, row.cache_read_tokens, row.cache_write_tokens, row.output_tokens)


def call_view(row: sa.Row, table: Prices) -> dict[str, Any]:
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
        "cost": table.cost(row.model, tokens_of(row), row.started_at).as_dict(),
    }


def part_so_far(total: sa.Row | None) -> dict[str, Any] | None:
    """A part's total so far as the API shows it (None when no recorded call added to it)."""
    if total is None:
        return None
    usd = float(total.usd) if total.priced_calls else None
    return {"calls": total.calls, "priced_calls": total.priced_calls, "usd": usd}


def call_detail(
    store: Any, session_id: uuid.UUID, call_id: uuid.UUID, assembly: Any, table: Prices
) -> dict[str, Any] | None:
    """One call as ``GET …/calls/{call_id}`` answers it (None when the session has no such call).

    ``assembly`` is the session's next call: its current sources show the parts that still match.
    """
    row = store.model_calls.get(session_id, call_id)
    if row is None:
        return None
    call, previous = call_and_previous(store, session_id, call_id)
    parts = call_parts(call, assembly, previous)
    shares = part_costs(
        table.rates(row.model, row.started_at), [p.tokens for p in call.parts], tokens_of(row)
    )
    so_far = store.part_costs.of(session_id, [p.part for p in call.parts])
    for part, cost in zip(parts, shares, strict=True):
        part["cost_usd"] = None if cost is None else float(cost)
        part["cost_so_far"] = part_so_far(so_far.get(part["id"]))
    sent = {p.part for p in call.parts}
    removed = [p.part for p in previous.parts if p.part not in sent] if previous else []
    return {
        **call_view(row, table),
        "previous_id": row.base_id,
        "removed_since_previous": removed,
        "parts": parts,
    }


@blp.route("/calls")
class CallList(MethodView):
    @paged(blp)
    @blp.response(200, CallPageSchema)
    @error_response(blp, 404, "`not_found`: no such session, or not one of the caller's.")
    def get(self, args: dict, session_id: uuid.UUID) -> Page:
        """The session's model calls, newest first: purpose, usage, estimate and cache verdict."""
        found = tenancy.store().model_calls.page(session_id, args["cursor"], args["limit"])
        table = prices()
        return Page([call_view(row, table) for row in found.items], found.next_cursor)


@blp.route("/cost")
class SessionCost(MethodView):
    @blp.response(200, SessionCostSchema)
    @error_response(blp, 404, "`not_found`: no such session, or not one of the caller's.")
    def get(self, session_id: uuid.UUID) -> dict[str, Any]:
        """What the session's model calls cost so far, from their reported usage, in total and per model."""
        return session_cost(tenancy.store().usage.of_session(session_id), prices())


@blp.route("/calls/<uuid:call_id>")
class CallItem(MethodView):
    @blp.response(200, CallDetailSchema)
    @error_response(blp, 404, NOT_FOUND)
    def get(self, session_id: uuid.UUID, call_id: uuid.UUID) -> dict[str, Any]:
        """One call's parts as it sent them, shown from current sources where those still match.

        Each part carries its cost on this call and its cost in total so far: summed over every
        call of the session it rode in, as each call was recorded (one row read per part).
        """
        found = call_detail(tenancy.store(), session_id, call_id, session_assembly(), prices())
        if found is None:
            raise NotFound("no such call in this session")
        return found


@blp.route("/context/diff")
class ContextDiff(MethodView):
    @blp.arguments(DiffArgsSchema, location="query")
    @blp.response(200, DiffSchema)
    @error_response(blp, 404, NOT_FOUND + " `from=last` on a session with no run or try call.")
    @error_response(blp, 422, "`invalid`: `from` or `to` is neither a call id nor its keyword.")
    def get(self, args: dict, session_id: uuid.UUID) -> dict[str, Any]:
        """What changed between two calls (or the last call and the next), and the first difference's cause."""
        store = tenancy.store()
        earlier_id = (
            last_of_conversation(store, session_id) if args["from_"] == "last" else uuid.UUID(args["from_"])
        )
        earlier = None if earlier_id is None else ledger_call(store, session_id, earlier_id)
        if earlier is None:
            raise NotFound("no such call in this session")
        assembly = session_assembly()
        later_id = None if args["to"] == "next" else uuid.UUID(args["to"])
        later = sent_call(assembly.captured) if later_id is None else ledger_call(store, session_id, later_id)
        if later is None:
            raise NotFound("no such call in this session")
        facts = facts_of(
            store.recorded_changes.between(session_id, assembly.state.agent.id, earlier_id, later_id)
        )
        body = diff(earlier, later, facts)
        return {"from_": str(earlier_id), "to": args["to"], **body}
