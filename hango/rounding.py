"""How hango rounds a token figure it scales: the one rule for expected reads, calibrated totals and shares.

A figure scaled on its own (an estimate in provider units, a calibrated estimate) goes to the
nearest whole token, a half to the even one (``scaled``: Python's ``round``). Figures shown as
the parts of a total (the groups of a counted or calibrated total) are split by the largest
remainder (``apportion``), so they add up to the total exactly; each is then within one token
of its exact share. Money is never rounded on the server: a cost is an exact ``Decimal``
(``hango/providers/prices.py``), rounded only where it is shown.
"""

from __future__ import annotations

from collections.abc import Sequence


def scaled(tokens: float, scale: float) -> int:
    """``tokens`` times ``scale``, to the nearest whole token (a half to the even one)."""
    return round(tokens * scale)


def apportion(total: int, weights: Sequence[int]) -> list[int]:
    """``total`` split in proportion to ``weights``, rounded by the largest remainder (the parts sum to it)."""
    whole = sum(weights)
    if whole <= 0:
        return [total if i == 0 else 0 for i in range(len(weights))] if weights else []
    exact = [total * w / whole for w in weights]
    floors = [int(x) for x in exact]
    short = total - sum(floors)
    by_remainder = sorted(range(len(weights)), key=lambda i: (floors[i] - exact[i], i))
    for i in by_remainder[:short]:
        floors[i] += 1
    return floors
