"""How every surface writes US dollars: the one rounding rule of the CLI and the admin panel.

The server's figures are plain numbers (``usd``, ``usd_saved_per_call``, …); the CLI writes them
with ``money`` and the panel with ``hango.money`` (``static/admin/api.js``), which follows the same
rule, character for character (``tests/browser/test_money.py`` compares them):

- under one dollar: four significant digits, trailing zeros dropped, at least two decimals
  (``$0.007186``, ``$0.0036``, ``$0.50``, ``$0.0000003``): a per-call saving of a few hundred
  tokens is a few millionths of a dollar and must not read as ``$0.0000``;
- one dollar and more: cents (``$12.35``);
- rounded half away from zero on the figure's exact binary value (what JavaScript's
  ``toExponential``/``toFixed`` do), so both languages round a tie the same way;
- an unknown price (null) is ``–``.
"""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal
from typing import Any

UNKNOWN = "–"
DIGITS = 4  # significant digits under one dollar


def money(usd: float | None) -> str:
    """``usd`` by the one rule: ``$0.007186``, ``$0.0036``, ``$12.35``; ``–`` when unknown."""
    if usd is None:
        return UNKNOWN
    exact = Decimal(abs(usd))
    sign = "-" if usd < 0 else ""
    if exact >= 1:
        return f"{sign}${exact.quantize(Decimal('0.01'), ROUND_HALF_UP)}"
    if exact == 0:
        return "$0.00"
    rounded = exact.quantize(Decimal(1).scaleb(exact.adjusted() - DIGITS + 1), ROUND_HALF_UP)
    whole, _, decimals = f"{rounded:f}".partition(".")
    return f"{sign}${whole}.{decimals.rstrip('0').ljust(2, '0')}"


def priced(usd: float | None, simulated_at: str | None = None) -> str:
    """``money(usd)``, labelled ``(simulated at <model> prices)`` when a stand-in provider's price is simulated."""
    said = money(usd)
    return f"{said} (simulated at {simulated_at} prices)" if simulated_at and usd is not None else said


def next_call_line(inspect: dict[str, Any]) -> str:
    """``next call: input $0.0123 · cache hit: expected to read 3,533 cached tokens``: inspect's next-call
    cost and predicted cache verdict (the panel's header says the same words)."""
    cost, cache = inspect["next_call_cost"], inspect["cache"]
    return f"next call: input {priced(cost['usd'], cost['simulated_at'])} · cache {cache['badge']}: {cache['words']}"


def once_in_cache(usd: float | None) -> str:
    """``$0.0011 once in cache`` (written again once), or ``$0.0011 back once in cache`` for a change
    that restores what the provider holds (a negative cache loss: a gain)."""
    return (
        f"{money(-usd)} back once in cache" if usd is not None and usd < 0 else f"{money(usd)} once in cache"
    )


def cache_cost(tokens: int) -> str:
    """A change's cache loss in tokens: ``cache cost 1,657``, or ``cache gain 1,657`` when it restores."""
    return f"cache gain {-tokens:,}" if tokens < 0 else f"cache cost {tokens:,}"


def change_price(change: dict[str, Any]) -> str:
    """``$0.0000360 a call, $0.0011 once in cache, pays back after 31 calls``: a change's net price
    (a suggestion's or the preview's ``usd_saved_per_call``, ``usd_cache_loss``, ``break_even_calls``)."""
    said = f"{money(change['usd_saved_per_call'])} a call, {once_in_cache(change['usd_cache_loss'])}, "
    calls = change["break_even_calls"]
    if calls is None:
        return said + ("price unknown" if change["usd_saved_per_call"] is None else "never pays back")
    return said + (
        "nothing to pay back" if calls == 0 else f"pays back after {calls:,} call{'s' if calls > 1 else ''}"
    )
