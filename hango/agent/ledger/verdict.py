"""Cache verdicts: what a call should have read from the provider's prompt cache, and why it did not.

The one cache model of hango: the verdicts on calls, inspect's per-part ``cache_loss_tokens``,
the panel's warning and the suggestions' ``cache_loss_tokens`` all come from here. It follows
Anthropic's documented rules:

- the provider caches the prefix of a request (tools, system blocks, messages) through each
  breakpoint it carries, for a lifetime (``ttl_seconds``, 5 minutes) refreshed by every use;
- a prefix shorter than the model's minimum (1,024 tokens for most models) is not cached;
- a breakpoint finds a cached prefix only if it ends at most ``LOOKBACK_BLOCKS`` (20) blocks
  before it: a tool, a system block and each content block of a message are one block each.

So a call can read the longest prefix it shares with the previous call of its lineage that
ends on one of that call's breakpoints, if the previous call is recent enough, the prefix long
enough and within some breakpoint's lookback. The expected read is in **provider units**: the
estimate scaled by the previous call's reported prompt (input, cache read and write tokens)
over its estimate, so a call that reads the whole previous prompt expects exactly what the
provider counted for it; without a report, the estimate. The verdict compares that
expectation with what the provider reported:

- ``first_call``: nothing was sent before in the lineage;
- ``expired``: the previous call is older than the cache lifetime;
- ``below_minimum``: every shared cached prefix is shorter than the provider caches;
- ``prefix_changed``: the prefix broke before the previous call's last breakpoint
  (the verdict names the first changed part and its cause);
- ``beyond_lookback``: the previous call's longest cached prefix ends more than 20 blocks
  before every breakpoint of this call (hango places its breakpoints so that this only
  happens when one message holds more than 20 blocks);
- ``unexplained``: the provider reported fewer cached tokens than expected, by more than
  ``READ_TOLERANCE`` (10 %: a report-scaled expectation is exact for the whole previous
  prompt and close for a part of it; an estimate errs high on purpose).

The lifetimes and minimums are per provider (``HANGO_CACHE_RULES``), with the
defaults of each provider's registry row (``hango/providers/__init__.py``):
Anthropic's documented values, 5 minutes, and 1,024 tokens for most models
(2,048 for Sonnet 4.6 and the Haiku 3 family, 4,096 for Opus 4.5+ and Haiku 4.5).
"""

from __future__ import annotations

import datetime as dt
import functools
import itertools
import json
from dataclasses import dataclass, replace

from hango.agent.ledger.causes import first_difference
from hango.agent.ledger.record import Previous, SentCall, common_prefix
from hango.agent.overrides import Overrides
from hango.agent.parts import PartID
from hango.providers import SPECS
from hango.providers.base import CacheRules

MISS_REASONS = ("prefix_changed", "expired", "below_minimum", "first_call", "beyond_lookback", "unexplained")
# A reported read this much under the expected one is still a full hit, not ``unexplained``: the
# expectation is scaled from a whole prompt's count (exact for it, close for a part of it), or is
# hango's estimate, which errs high on purpose (+4–8 % against the providers' counts).
READ_TOLERANCE = 0.10
# The provider's count of a prompt over hango's estimate of it, where the count is taken as the
# same prompt's: the estimate is within 25 % on single parts, within 8 % on a whole prompt.
PLAUSIBLE_SCALE = (0.5, 2.0)
# Anthropic looks for a cached prefix at most this many blocks before a breakpoint.
LOOKBACK_BLOCKS = 20


def _defaults() -> dict[str, CacheRules]:
    return {name: spec.cache for name, spec in SPECS.items()}


@functools.cache
def rules_for(provider: str, configured: str | None = None) -> CacheRules:
    """``provider``'s rules: the defaults, with ``HANGO_CACHE_RULES`` (JSON by provider) on top."""
    rules = _defaults().get(provider, CacheRules(enabled=False))
    changes = json.loads(configured).get(provider, {}) if configured else {}
    if "minimums" in changes:
        changes["minimums"] = tuple(tuple(pair) for pair in changes["minimums"])
    return replace(rules, **changes)


@dataclass(frozen=True)
class Verdict:
    expected_read_tokens: int
    miss_reason: str | None = None
    miss_part: PartID | None = None
    miss_cause: str | None = None

    def as_dict(self) -> dict:
        return {
            "expected_read_tokens": self.expected_read_tokens,
            "miss_reason": self.miss_reason,
            "miss_part": self.miss_part,
            "miss_cause": self.miss_cause,
        }


NO_CACHE = Verdict(0)


def judge(
    previous: Previous | None,
    call: SentCall,
    *,
    started_at: dt.datetime,
    rules: CacheRules,
    model: str,
    overrides: Overrides,
    reported: int | None = None,
) -> Verdict:
    """The verdict on ``call`` (``reported``: the provider's cache-read tokens, None before sending).

    A provider that read more than expected found a prefix the lineage does not know (another
    session of the same agent wrote it): that is no miss.
    """
    if not rules.enabled:
        return NO_CACHE
    if previous is None:
        verdict = Verdict(0, "first_call")
    elif (started_at - previous.ended_at).total_seconds() > rules.ttl_seconds:
        verdict = Verdict(0, "expired")
    else:
        verdict = _in_lifetime(previous, call, rules.minimum_for(model), overrides, reported)
    if reported is not None and reported > verdict.expected_read_tokens:
        return Verdict(verdict.expected_read_tokens)
    return verdict


def _in_lifetime(
    previous: Previous, call: SentCall, minimum: int, overrides: Overrides, reported: int | None
) -> Verdict:
    """The verdict on a call sent while its previous call's cache lives."""
    shared = common_prefix(previous.call.parts, call.parts)
    scale = _provider_units(previous)
    through = [round(t * scale) for t in _through(call)]
    cached = [b for b in previous.call.breakpoints if b < shared]
    entries = [b for b in cached if through[b] >= minimum]
    found = within_lookback(call, entries)
    expected = max((through[b] for b in found), default=0)
    if reported is not None and reported < expected * (1 - READ_TOLERANCE):
        return Verdict(expected, "unexplained")
    if previous.call.breakpoints and max(previous.call.breakpoints) >= shared:
        difference = first_difference(previous.call, call, overrides)
        return Verdict(expected, "prefix_changed", difference.part, difference.cause)
    if entries and max(entries) not in found:
        return Verdict(expected, "beyond_lookback", call.parts[max(entries)].part)
    if cached and expected == 0:
        return Verdict(0, "below_minimum")
    return Verdict(expected)


def _provider_units(previous: Previous) -> float:
    """What one estimated token of the previous call's parts counted at the provider.

    1 (the estimate) without a report, or with one outside ``PLAUSIBLE_SCALE`` of the estimate:
    a count that far off is not of the same prompt (a proxy's or a test's made-up usage).
    """
    estimated = previous.call.tokens
    if not previous.reported_prompt or not estimated:
        return 1.0
    scale = previous.reported_prompt / estimated
    low, high = PLAUSIBLE_SCALE
    return scale if low <= scale <= high else 1.0


def within_lookback(call: SentCall, ends: list[int]) -> list[int]:
    """The indexes of ``ends`` (cached prefixes ending on those parts) some breakpoint of ``call`` finds.

    A breakpoint finds a prefix ending on its own last block or on a block at most
    ``LOOKBACK_BLOCKS`` blocks before it.
    """
    blocks = call.blocks_through()
    marks = [blocks[b] for b in call.breakpoints]
    return [e for e in ends if any(0 <= mark - blocks[e] <= LOOKBACK_BLOCKS for mark in marks)]


def _through(call: SentCall) -> list[int]:
    """The estimated tokens of ``call``'s parts up to and including each index."""
    return list(itertools.accumulate(p.tokens for p in call.parts))


def cached_read(writer: SentCall, shared: int, minimum: int = 0) -> int:
    """The estimated tokens a call sharing ``shared`` leading parts with ``writer`` reads from its cache.

    The cache holds ``writer``'s prefix up to each of its breakpoints (a prefix shorter than
    ``minimum`` is not cached); a later call reads the longest of those prefixes it shares whole.
    """
    through = _through(writer)
    return max((through[b] for b in writer.breakpoints if b < shared and through[b] >= minimum), default=0)


def change_cache_loss(before: SentCall, after: SentCall, minimum: int = 0) -> int:
    """The estimated tokens the next call no longer reads from the cache when it sends ``after``, not ``before``."""
    shared = common_prefix(before.parts, after.parts)
    return cached_read(before, len(before.parts), minimum) - cached_read(before, shared, minimum)


def part_cache_losses(call: SentCall, minimum: int = 0) -> list[int]:
    """For each index of ``call``, what a change there costs: ``change_cache_loss`` of a call that breaks there.

    One pass: the cached prefixes that end before the index survive, the rest is lost.
    """
    through = _through(call)
    marks = sorted(b for b in call.breakpoints if through[b] >= minimum)
    full = through[marks[-1]] if marks else 0
    losses, kept, k = [], 0, 0
    for index in range(len(call.parts) + 1):
        while k < len(marks) and marks[k] < index:
            kept = through[marks[k]]
            k += 1
        losses.append(full - kept)
    return losses
