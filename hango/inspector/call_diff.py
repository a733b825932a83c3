"""What changed between two calls, part by part: the calls API's diff (causes: ``hango/agent/ledger/causes.py``)."""

from __future__ import annotations

from typing import Any

from hango.agent.ledger.causes import Facts, first_difference
from hango.agent.ledger.record import SentCall
from hango.inspector.verdict_words import cause_words


def diff(earlier: SentCall, later: SentCall, facts: Facts) -> dict[str, Any]:
    """Parts added, removed and changed (by hash), the common prefix, and the first difference with the
    cause ``facts`` (what was recorded between the two calls) give it."""
    old = {p.part: p for p in earlier.parts}
    new = {p.part: p for p in later.parts}
    first = first_difference(earlier, later, facts)
    shared = len(later.parts) if first is None else first.index
    return {
        "added": [p for p in new if p not in old],
        "removed": [p for p in old if p not in new],
        "changed": [p for p, sent in new.items() if p in old and old[p].hash != sent.hash],
        "common_prefix": {"parts": shared, "tokens": later.tokens_through(shared - 1)},
        "first_difference": None
        if first is None
        else {"part": first.part, "cause": first.cause, "words": cause_words(first.part, first.cause)},
    }
