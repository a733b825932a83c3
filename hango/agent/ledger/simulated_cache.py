"""The prompt cache of a provider that only stands in for a model (``offline``): its usage, by the one cache model.

A caching provider splits a call's prompt into what it read from its cache, what it wrote to
it and what it sent uncached. ``offline/echo`` keeps no cache of its own, and could not: a
session's calls are sent from the queue worker and the web server alike. What a cache would
hold is known where hango records what it sent, the call ledger: the previous call of the
lineage, its breakpoints and when it ended. So its usage is the one cache model's expectation
(``hango.agent.ledger.verdict``), under its reference model's rules (``ProviderSpec.simulates``):
the call reads the prefix the verdict expects (none for a first call, after the lifetime or
below the minimum), writes the rest of its longest cached prefix, and sends the remainder
uncached. The prompt is counted once, in the cache model's provider units (the estimate scaled
as the outlook scales it): the count it decides "cacheable" on against the minimum is the count
it reports, and inspect's prediction of the call (``expected_read_tokens``, ``next_call_cost``)
is what the call then reports, token for token. Its verdict then finds hits where the prefix
held and names each miss's cause, as it does for a caching provider.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import replace

from hango.agent.ledger.causes import NOTHING
from hango.agent.ledger.record import Previous, SentCall
from hango.agent.ledger.verdict import judge, outlook, prompt_stretches
from hango.cache_rules import CacheRules
from hango.messages import Usage


def simulated_usage(
    usage: Usage,
    previous: Previous | None,
    call: SentCall,
    *,
    started_at: dt.datetime,
    rules: CacheRules,
    model: str,
    calibrated: float | None = None,
) -> Usage:
    """``usage`` with its prompt counted in the cache model's units and split into cache read, cache write and
    uncached input (the stand-in's own count of the prompt, a character count, is not the reference model's)."""
    ahead = outlook(previous, now=started_at, rules=rules, model=model, calibrated=calibrated)
    expected = judge(
        previous,
        call,
        started_at=started_at,
        rules=rules,
        model=model,
        facts=lambda: NOTHING,
        calibrated=calibrated,
    ).expected_read_tokens
    tokens = prompt_stretches(ahead.through(call)[-1] if call.parts else 0, expected, call, ahead)
    return replace(
        usage,
        input_tokens=tokens.input,
        cache_read_tokens=tokens.cache_read,
        cache_write_tokens=tokens.cache_write,
    )
