"""Cache verdicts and first differences in plain words, as the panel's badges and the CLI show them.

The server says it once here, so the panel and ``hango context calls`` print the
same sentence: ``missed: a memory file was edited at system:memory:/memories/AGENTS.md``.
"""

from __future__ import annotations

from typing import Any

from hango.agent.ledger.causes import CAUSES

REASON_WORDS = {
    "first_call": "nothing was cached yet: the first call of its lineage",
    "expired": "the cache had expired since the previous call",
    "below_minimum": "the shared prefix is shorter than the provider caches",
    "unexplained": "the provider read less from the cache than the prefix allowed",
}
# The badge: hit (read what it should), miss, first (nothing to read yet), none (no cache expected).
BADGES = {"first_call": "first", None: "hit"}


def cause_words(part: str, cause: str) -> str:
    """``the tool list changed at tool:grep``."""
    return f"{CAUSES.get(cause, cause)} at {part}"


def verdict_words(cache: dict[str, Any]) -> dict[str, str]:
    """A call's cache verdict (the calls API's ``cache`` figures) as a badge and a sentence."""
    reason = cache["miss_reason"]
    if reason is None and not cache["expected_read_tokens"]:
        return {"badge": "none", "words": "no cache read expected"}
    badge = BADGES.get(reason, "miss")
    if reason is None:
        return {"badge": badge, "words": f"read {cache['reported_read_tokens']:,} cached tokens as expected"}
    if reason == "prefix_changed":
        lost = cause_words(cache["miss_part"], cache["miss_cause"])
        read = cache.get("reported_read_tokens") or 0  # the prefix before the change is still read
        words = f"read {read:,} cached tokens, missed the rest: {lost}" if read else f"missed: {lost}"
        return {"badge": badge, "words": words}
    words = REASON_WORDS.get(reason, reason)
    return {"badge": badge, "words": words if badge == "first" else f"missed: {words}"}


def next_verdict_words(cache: dict[str, Any]) -> dict[str, str]:
    """The next call's predicted verdict (inspect's ``cache`` figures) as a badge and a sentence, as
    ``verdict_words`` says a past call's: what it is expected to read, not what it read. The sentence
    follows the badge (``miss: an override was saved at system:todo``), so it does not repeat it."""
    reason, expected = cache["miss_reason"], cache["expected_read_tokens"]
    if cache.get("outlook") == "none":
        return {"badge": "none", "words": "the provider caches nothing"}
    if reason is None:
        if not expected:
            return {"badge": "none", "words": "no cache read expected"}
        return {"badge": "hit", "words": f"expected to read {expected:,} cached tokens"}
    badge = BADGES.get(reason, "miss")
    if reason == "prefix_changed":
        lost = cause_words(cache["miss_part"], cache["miss_cause"])
        words = f"expected to read {expected:,} cached tokens, not the rest: {lost}" if expected else lost
        return {"badge": badge, "words": words}
    return {"badge": badge, "words": REASON_WORDS.get(reason, reason)}
