"""One unit per figure: group figures in the unit of the total they add up to, rounded so they add up.

When the provider counted the request, inspect's total is the provider's count
while the parts are estimates; the groups are then scaled to the counted total
(``scaled_totals``) and labelled so, and no calibrated estimate is shown beside
the real count. Shares are rounded by the largest remainder (``hango/rounding.py``), so the
shown groups always add up to the shown total.
"""

from __future__ import annotations

from collections.abc import Mapping

from hango.rounding import apportion


def scaled_totals(
    totals: Mapping[str, Mapping[str, int]], total_before: int, total_after: int
) -> dict[str, dict[str, int]]:
    """The groups' ``before`` and ``after`` scaled to the counted totals (each column adds up to its total)."""
    names = list(totals)
    before = apportion(total_before, [totals[n]["before"] for n in names])
    after = apportion(total_after, [totals[n]["after"] for n in names])
    return {n: {"before": b, "after": a} for n, b, a in zip(names, before, after, strict=True)}
