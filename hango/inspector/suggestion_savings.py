"""Suggestions measured, not added up: each one's saving and cache price from the request with it applied.

Leaving a part out can change other parts (dropping ``tool:grep`` rewrites
``system:filesystem``; dropping ``tool:task`` drops ``system:subagent``), so a
sum of the dropped parts' tokens is not what applying a suggestion saves. Here
the request is assembled again through the chain with the suggestion's
overrides added to the stored ones: ``tokens_saved`` is the estimated total
before minus after, so applying it changes inspect's (estimated) total by
exactly that; ``cache_loss_tokens`` is the one cache model's price of the change
(``change_cache_loss``: the next call's expected read without it less the one with it, against
the call the provider holds), the figure the preview gives for saving it. A compaction
(``would_compact``) is priced by the same rule: the summary rewrites the request from its first
message on, and what it summarizes away is saved, not written again. A ``defer_server`` is measured
on the request with the agent deferring the server (``tool_search``'s definition, sent or grown, counts
against the saving).
"""

from __future__ import annotations

import dataclasses

from hango.agent.assembly import capture
from hango.agent.estimator import estimate_request
from hango.agent.ledger.record import SentCall, sent_call
from hango.agent.ledger.verdict import change_cache_loss, expected_read, kept_read
from hango.agent.overrides import EXCLUDE, Override, Overrides
from hango.agent.parts import SUMMARY, kind_of, seq_of, tool_server
from hango.agent.state import RunState
from hango.inspector.cache_outlook import NextCache
from hango.inspector.defer_suggestion import KIND as DEFER_SERVER
from hango.inspector.defer_suggestion import deferring
from hango.inspector.inspection import Assembly
from hango.inspector.suggestions import Suggestion


def applied(overrides: Overrides, suggestion: Suggestion) -> Overrides:
    """The stored overrides with ``suggestion``'s exclusions added on its route."""
    added = {p: Override(p, EXCLUDE) for p in suggestion.parts}
    if suggestion.target == "agent":
        return Overrides({**overrides.agent, **added}, overrides.session)
    return Overrides(overrides.agent, {**overrides.session, **added})


def measured(assembly: Assembly, cache: NextCache, found: list[Suggestion]) -> list[Suggestion]:
    """``found`` with each override suggestion's saving and cache price (by ``cache``, the next call's outlook)
    measured on the applied request."""
    base = assembly.captured
    before = estimate_request(base.to_request())
    base_call = sent_call(base)
    held, ahead = cache.previous, cache.outlook
    out = []
    for suggestion in found:
        if not suggestion.parts:  # would_compact: its saving is its compaction preview's
            loss = compaction_cache_loss(cache, base_call, suggestion.compaction)
            out.append(dataclasses.replace(suggestion, cache_loss_tokens=loss))
            continue
        state = _applied_state(assembly, suggestion)
        after = capture(assembly.chain, state)
        loss = change_cache_loss(held, base_call, sent_call(after), ahead)
        saved = before - estimate_request(after.to_request())
        out.append(dataclasses.replace(suggestion, tokens_saved=saved, cache_loss_tokens=loss))
    return out


def _applied_state(assembly: Assembly, suggestion: Suggestion) -> RunState:
    """The run state with ``suggestion`` applied: its server deferred (``defer_server``), else its overrides."""
    if suggestion.kind == DEFER_SERVER:
        return deferring(assembly.state, tool_server(suggestion.parts[0]))
    return dataclasses.replace(assembly.state, overrides=applied(assembly.state.overrides, suggestion))


def compaction_cache_loss(cache: NextCache, call: SentCall, plan: dict | None) -> int:
    """What the next call writes again after the compaction ``plan`` (a ``compaction_preview``) of ``call``.

    The summary replaces the messages from the first one on, so the compacted call reads at most the
    prefix before it (tools and system, through the breakpoint hango places at the system's end);
    the messages and the earlier summary it folds are no longer sent.
    """
    if plan is None:
        return 0
    low, high = plan["summarize"]
    folded = {
        p.part
        for p in call.parts
        if p.part == SUMMARY or (kind_of(p.part) == "message" and low <= seq_of(p.part) <= high)
    }
    first = next((i for i, p in enumerate(call.parts) if kind_of(p.part) in ("message", "summary")), None)
    if first is None:
        return 0
    marks = tuple(b for b in call.breakpoints if b < first - 1) + ((first - 1,) if first else ())
    prefix = SentCall(call.parts[:first], marks, call.blocks[:first])
    sent = {p.part for p in call.parts} - folded
    return kept_read(cache.previous, call, sent, cache.outlook) - expected_read(
        cache.previous, prefix, cache.outlook
    )
