"""Cache verdicts: what a call should have read from the provider's prompt cache, and why it did not.

The one cache model of hango: the verdicts on calls, inspect's per-part ``cache_loss_tokens``,
the panel's warning and the suggestions' ``cache_loss_tokens`` all come from here. It follows
Anthropic's documented rules:

- the provider caches the prefix of a request (tools, system blocks, messages) through each
  breakpoint it carries, for a lifetime (``ttl_seconds``, 5 minutes) refreshed by every use;
- a prefix shorter than the model's minimum (1,024 tokens for most models) is not cached;
- a breakpoint finds a cached prefix only if it ends at most ``CacheRules.lookback_blocks`` (20)
  blocks before it: a tool, a system block and each content block of a message the provider
  receives are one block each (``CacheRules.blocks_of``).

So a call can read the longest prefix it shares with the previous call of its lineage that
ends on one of that call's breakpoints, if the previous call is recent enough, the prefix long
enough and within some breakpoint's lookback. The expected read is in **provider units**: the
estimate scaled by the previous call's reported prompt (input, cache read and write tokens)
over its estimate, so a call that reads the whole previous prompt expects exactly what the
provider counted for it; without a plausible report, the agent's calibration ratio for the
model when the caller knows one, else the estimate (``provider_units``). The verdict compares
that expectation with what the provider reported:

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

A read within ``READ_TOLERANCE`` of the expected one, either way, is the expected read: after
a change it is the partial prefix, and the verdict names what broke the rest.

The same model prices a change before it is made (``outlook``, ``part_cache_losses``,
``change_cache_loss``): what the cache holds for the next call (``live``, ``expired``,
``first_call``, or ``none`` for a provider without a cache) and each part's price in the
expected read's units. After the lifetime nothing is cached, so no change costs any cache;
the lifetime is decided in ``outlook`` alone, for the verdicts and the prices both.

The lifetimes and minimums are per provider (``HANGO_CACHE_RULES``), with the
defaults of each provider's registry row (``hango/providers/__init__.py``):
Anthropic's documented values, 5 minutes, and 1,024 tokens for most models
(2,048 for the Haiku 3 family, 4,096 for Opus 4.5+ and Haiku 4.5; Sonnet 4.6 among the
1,024s: the documented values, cited where they live).
"""

from __future__ import annotations

import datetime as dt
import functools
import itertools
import json
from collections.abc import Callable
from dataclasses import dataclass, replace

from hango.agent.estimator import MessageMemo
from hango.agent.ledger.causes import Facts, first_difference
from hango.agent.ledger.record import Previous, SentCall, common_prefix
from hango.agent.parts import PartID
from hango.cache_rules import UNCACHED, CacheRules
from hango.providers import SPECS
from hango.providers.prices import Tokens
from hango.rounding import scaled

MISS_REASONS = ("prefix_changed", "expired", "below_minimum", "first_call", "beyond_lookback", "unexplained")
# A reported read this much under the expected one is still a full hit, not ``unexplained``: the
# expectation is scaled from a whole prompt's count (exact for it, close for a part of it), or is
# hango's estimate, which errs high on purpose (+4–8 % against the providers' counts).
READ_TOLERANCE = 0.10
# The provider's count of a prompt over hango's estimate of it, where the count is taken as the
# same prompt's: the estimate is within 25 % on single parts, within 8 % on a whole prompt.
PLAUSIBLE_SCALE = (0.5, 2.0)
OUTLOOKS = ("live", "expired", "first_call", "none")  # ``Outlook.state``
UNITS = ("provider", "calibrated", "estimate")  # ``Outlook.unit``
_THROUGH = MessageMemo()  # ``Outlook.through`` of a call, by scale


def _defaults() -> dict[str, CacheRules]:
    return {name: spec.cache for name, spec in SPECS.items()}


@functools.cache
def rules_for(provider: str, configured: str | None = None) -> CacheRules:
    """``provider``'s rules: the defaults, with ``HANGO_CACHE_RULES`` (JSON by provider) on top."""
    rules = _defaults().get(provider, UNCACHED)
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
    facts: Callable[[], Facts],
    reported: int | None = None,
    calibrated: float | None = None,
) -> Verdict:
    """The verdict on ``call`` (``reported``: the provider's cache-read tokens, None before sending).

    ``facts`` reads what was recorded since the previous call (``hango.agent.ledger.causes``): asked
    only when the prefix changed, for the cause of the first difference.

    ``calibrated``: the agent's calibration ratio for the model, the expected read's unit when the
    previous call has no plausible report. A provider that read more than expected, by more than
    ``READ_TOLERANCE``, found a prefix the lineage does not know (another session of the same
    agent wrote it): that is no miss. Within the tolerance it read the expected prefix (a partial
    one after a change, in units scaled from a whole prompt), and the miss stands.
    """
    ahead = outlook(previous, now=started_at, rules=rules, model=model, calibrated=calibrated)
    if ahead.state == "none":
        return NO_CACHE
    if previous is None:
        verdict = Verdict(0, "first_call")
    elif ahead.state == "expired":
        verdict = Verdict(0, "expired")
    else:
        verdict = _in_lifetime(previous, call, ahead, facts, reported)
    if reported is not None and reported > verdict.expected_read_tokens * (1 + READ_TOLERANCE):
        return Verdict(verdict.expected_read_tokens)
    return verdict


def _in_lifetime(
    previous: Previous, call: SentCall, ahead: Outlook, facts: Callable[[], Facts], reported: int | None
) -> Verdict:
    """The verdict on a call sent while its previous call's cache lives."""
    shared = common_prefix(previous.call.parts, call.parts)
    through = ahead.through(call)
    cached, entries, found = _held(previous, call, ahead, shared, through)
    expected = through[max(found)] if found else 0
    if reported is not None and reported < expected * (1 - READ_TOLERANCE):
        return Verdict(expected, "unexplained")
    if previous.call.breakpoints and max(previous.call.breakpoints) >= shared:
        difference = first_difference(previous.call, call, facts())
        return Verdict(expected, "prefix_changed", difference.part, difference.cause)
    if entries and max(entries) not in found:
        return Verdict(expected, "beyond_lookback", call.parts[max(entries)].part)
    if cached and expected == 0:
        return Verdict(0, "below_minimum")
    return Verdict(expected)


def _held(
    previous: Previous, call: SentCall, ahead: Outlook, shared: int, through: tuple[int, ...]
) -> tuple[list[int], list[int], list[int]]:
    """The previous call's cached prefixes ``call`` shares (``shared`` parts in common), those at or above
    the minimum (``through``: ``ahead.through(call)``), and those some breakpoint of ``call`` finds: the
    prefixes the provider holds for it."""
    cached = [b for b in previous.call.breakpoints if b < shared]
    entries = [b for b in cached if through[b] >= ahead.minimum]
    return cached, entries, within_lookback(call, entries, ahead.lookback)


def read_through(previous: Previous | None, call: SentCall, ahead: Outlook) -> int:
    """The index of the last part of ``call`` it reads from the cache if sent under ``ahead`` (-1: none).

    The prefix ``judge`` expects (its ``expected_read_tokens`` is ``ahead.through(call)`` there).
    """
    if ahead.state != "live" or previous is None:
        return -1
    shared = common_prefix(previous.call.parts, call.parts)
    _, _, found = _held(previous, call, ahead, shared, ahead.through(call))
    return max(found, default=-1)


@dataclass(frozen=True)
class Outlook:
    """What the prompt cache holds for a lineage's next call: the one answer behind every cache price.

    ``state`` is ``none`` (the provider caches nothing), ``first_call`` (nothing sent yet in the
    lineage: a change is priced as the cache the next call writes), ``live`` (the previous call's
    cache is within its lifetime) or ``expired`` (older than the lifetime: nothing is cached any
    more, so no change costs cache). ``scale`` turns estimated tokens into provider units and
    ``unit`` says from what: ``provider`` (the previous call's report), ``calibrated`` (the agent's
    calibration for the model) or ``estimate``. ``minimum`` is in provider units; ``lookback`` is the
    rules' ``lookback_blocks``.
    """

    state: str
    scale: float = 1.0
    unit: str = "estimate"
    minimum: int = 0
    lookback: int = CacheRules.lookback_blocks

    @property
    def priced(self) -> bool:
        """Whether a change costs cache: the provider caches, and its cache has not expired."""
        return self.state in ("first_call", "live")

    def through(self, call: SentCall) -> tuple[int, ...]:
        """The tokens of ``call``'s parts up to and including each index, in provider units (remembered on
        the call per scale: one inspect prices the same call several times)."""
        by_scale = _THROUGH.get(call, lambda _: {})
        found = by_scale.get(self.scale)
        if found is None:
            found = by_scale[self.scale] = tuple(scaled(t, self.scale) for t in _through(call))
        return found

    def as_dict(self) -> dict:
        return {"outlook": self.state, "unit": self.unit}


def outlook(
    previous: Previous | None,
    *,
    now: dt.datetime,
    rules: CacheRules,
    model: str,
    calibrated: float | None = None,
) -> Outlook:
    """The cache outlook of the call after ``previous`` if it is sent at ``now`` (the one TTL rule)."""
    if not rules.enabled:
        return Outlook("none")
    if previous is None:
        state = "first_call"
    elif (now - previous.ended_at).total_seconds() > rules.ttl_seconds:
        state = "expired"
    else:
        state = "live"
    scale, unit = provider_units(previous, calibrated)
    return Outlook(state, scale, unit, rules.minimum_for(model), rules.lookback_blocks)


def provider_units(previous: Previous | None, calibrated: float | None = None) -> tuple[float, str]:
    """What one estimated token counts at the provider, and from what that is known.

    The previous call's report over its estimate (``provider``); without one, or with one outside
    ``PLAUSIBLE_SCALE`` of the estimate (a count that far off is not of the same prompt: a
    proxy's or a test's made-up usage), the agent's calibration ratio (``calibrated``), held to
    the same range; else 1 (``estimate``).
    """
    low, high = PLAUSIBLE_SCALE
    estimated = previous.call.tokens if previous is not None else 0
    if previous is not None and previous.reported_prompt and estimated:
        scale = previous.reported_prompt / estimated
        if low <= scale <= high:
            return scale, "provider"
    if calibrated is not None and low <= calibrated <= high:
        return calibrated, "calibrated"
    return 1.0, "estimate"


def within_lookback(call: SentCall, ends: list[int], lookback: int) -> list[int]:
    """The indexes of ``ends`` (cached prefixes ending on those parts) some breakpoint of ``call`` finds.

    A breakpoint finds a prefix ending on its own last block or on a block at most ``lookback``
    blocks (``CacheRules.lookback_blocks``) before it.
    """
    blocks = call.blocks_through()
    marks = [blocks[b] for b in call.breakpoints]
    return [e for e in ends if any(0 <= mark - blocks[e] <= lookback for mark in marks)]


def _through(call: SentCall) -> itertools.accumulate[int]:
    """The estimated tokens of ``call``'s parts up to and including each index."""
    return itertools.accumulate(p.tokens for p in call.parts)


def cached_marks(call: SentCall, ahead: Outlook) -> list[int]:
    """The breakpoints of ``call`` whose prefix the provider caches: those at or above the minimum, in order.

    A prefix shorter than the minimum is neither written nor read; a provider without a cache
    caches nothing.
    """
    if ahead.state == "none":
        return []
    through = ahead.through(call)
    return sorted(b for b in call.breakpoints if through[b] >= ahead.minimum)


def written_tokens(call: SentCall, ahead: Outlook) -> int:
    """What sending ``call`` puts in the cache, in ``ahead``'s units: its longest cached prefix (0 below the
    minimum); the next call's write is this less what it reads."""
    marks = cached_marks(call, ahead)
    return ahead.through(call)[marks[-1]] if marks else 0


def prompt_stretches(total: int, expected_read: int, call: SentCall, ahead: Outlook) -> Tokens:
    """How a prompt of ``total`` tokens (``call``, in ``ahead``'s units) splits as the cache serves it.

    It reads the expected prefix, writes the rest of its longest cached prefix (none below the
    minimum, none without a cache: ``written_tokens``) and sends the remainder uncached; no output.
    """
    read = min(expected_read, total)
    write = max(0, min(written_tokens(call, ahead), total) - read)
    return Tokens(total - read - write, read, write, 0)


def change_cache_loss(previous: Previous | None, before: SentCall, after: SentCall, ahead: Outlook) -> int:
    """What the next call writes again (``ahead``'s units) because it sends ``after``, not ``before``.

    Both are judged against what the provider holds (``previous``, under ``ahead``): the read
    ``before`` would make, less the parts of it ``after`` no longer sends (those are saved, not
    lost), minus the read ``after`` makes. Negative when the change restores cache: ``after``
    reads what ``before`` would write again. 0 once the cache expired, before a first call
    (nothing is held) or for a provider without a cache.
    """
    return kept_read(previous, before, {p.part for p in after.parts}, ahead) - expected_read(
        previous, after, ahead
    )


def expected_read(previous: Previous | None, call: SentCall, ahead: Outlook) -> int:
    """The tokens (``ahead``'s units) ``call`` reads from the cache: ``judge``'s ``expected_read_tokens``."""
    index = read_through(previous, call, ahead)
    return ahead.through(call)[index] if index >= 0 else 0


def kept_read(previous: Previous | None, before: SentCall, sent: set[PartID], ahead: Outlook) -> int:
    """``before``'s expected read less its parts not in ``sent`` (left out or summarized: saved, not lost)."""
    held = read_through(previous, before, ahead)
    return scaled(sum(p.tokens for p in before.parts[: held + 1] if p.part in sent), ahead.scale)


def part_cache_losses(previous: Previous | None, call: SentCall, ahead: Outlook) -> list[int]:
    """For each index of ``call`` (and one past its end), what a change there costs, in ``ahead``'s units.

    Against what the provider holds (``previous``): a change at an index keeps the read of the
    held prefixes that end before it and loses the rest of the expected read. Nothing is lost when
    the outlook holds nothing (no cache, expired, or before a first call).
    """
    if ahead.state != "live" or previous is None:
        return [0] * (len(call.parts) + 1)
    through = ahead.through(call)
    _, _, found = _held(previous, call, ahead, common_prefix(previous.call.parts, call.parts), through)
    found.sort()
    full = through[found[-1]] if found else 0
    losses, kept, k = [], 0, 0
    for index in range(len(call.parts) + 1):
        while k < len(found) and found[k] < index:
            kept = through[found[k]]
            k += 1
        losses.append(full - kept)
    return losses
