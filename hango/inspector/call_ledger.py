"""The call ledger as the calls API shows it: a session's calls, what they cost, one call's parts, a diff.

Each function reads the ledger's rows (``store.model_calls``, ``store.usage``) and
prices them at the configured prices; a call's parts are shown from the session's
next call (its current sources) where those still match. Nothing is written.
"""

from __future__ import annotations

import uuid
from typing import Any

from hango.agent.deps import Deps
from hango.agent.ledger.causes import facts_of
from hango.agent.ledger.record import sent_call
from hango.agent.state import Caller
from hango.errors import NotFound
from hango.inspector.call_diff import diff as call_diff
from hango.inspector.call_views import (
    call_and_previous,
    call_parts,
    last_of_conversation,
    ledger_call,
    summarized_messages,
)
from hango.inspector.inspection import Assembly, inspect_session
from hango.inspector.verdict_words import verdict_words
from hango.messages import TOKEN_FIELDS, prompt_tokens
from hango.providers.prices import Prices, Tokens, part_costs, prices_of, session_cost
from hango.store import TenantStore
from hango.store.pages import Page


def prices(deps: Deps) -> Prices:
    """The configured prices the ledger is priced at."""
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
        "usage": {
            **{name: row._mapping[name] for name in TOKEN_FIELDS},
            "prompt_tokens": prompt_tokens(row._mapping),
        },
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
        "tools_sent": sum(1 for part in parts if part["kind"] == "tool"),
        # its input alone, as inspect's ``next_call_cost`` prices the next call: its parts' shares
        "input_usd": None if None in shares else float(sum(shares)),
    }


def call_detail(
    deps: Deps, store: TenantStore, session: Any, caller: Caller, call_id: uuid.UUID
) -> dict[str, Any]:
    """One call's parts as it sent them, shown from current sources where those still match (404 when
    the session has no such call)."""
    found = _detail(store, session.id, call_id, inspect_session(deps, store, session, caller), prices(deps))
    if found is None:
        raise NotFound("no such call in this session")
    return found


def run_calls(deps: Deps, store: TenantStore, session: Any, caller: Caller, run: Any) -> list[dict[str, Any]]:
    """A try run's calls as ``call_detail`` answers each (one assembly for all of them); a call the ledger
    does not hold (``HANGO_CALL_LEDGER=0``) stays as the run listed it."""
    listed = run.result.get("calls", [])
    if not any(call["id"] for call in listed):
        return listed
    assembly, table = inspect_session(deps, store, session, caller), prices(deps)
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
    assembly = inspect_session(deps, store, session, caller)
    later_id = None if later == "next" else uuid.UUID(later)
    after = sent_call(assembly.captured) if later_id is None else ledger_call(store, session.id, later_id)
    if after is None:
        raise NotFound("no such call in this session")
    facts = facts_of(
        store.recorded_changes.between(session.id, assembly.state.agent.id, earlier_id, later_id),
        first=str(earlier_id),
    )
    return {"from_": str(earlier_id), "to": later, **call_diff(before, after, facts)}
