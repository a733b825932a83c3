"""Calibration: the estimate scaled by how far it was off on the agent's recent calls of the same model.

The Estimator errs by a few per cent, and by a steady amount for a given kind of
content (it was tuned to err high). Each call's usage row keeps the estimate next
to the input the provider reported (input + cache read + cache write), so the
median of ``reported / estimated`` over the agent's last ``CALLS`` calls of a model
corrects that bias for the next call. The median, not the mean: one odd call (a
huge tool result in another script) must not swing it. See ``docs/estimator.md``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hango.rounding import apportion, scaled
from hango.store.usage import CALIBRATION_CALLS

CALLS = CALIBRATION_CALLS  # the recent calls the median is taken over


@dataclass(frozen=True)
class Calibration:
    """The median ratio of reported to estimated input tokens, and how many calls it is based on."""

    ratio: float
    calls: int

    def apply(self, estimate: int) -> int:
        """``estimate`` as the provider would likely report it."""
        return scaled(estimate, self.ratio)

    def report(self, totals: Mapping[str, Mapping[str, int]], counted: str = "estimate") -> dict[str, Any]:
        """Inspect's calibrated figures beside the estimated group totals (their ``after``).

        Beside a real count (``counted == "provider"``) there is no calibrated figure, only the ratio.
        """
        info = {"calibration": {"ratio": round(self.ratio, 4), "calls": self.calls}}
        if counted == "provider":
            return {"calibrated_total": None, "calibrated_totals": None, **info}
        total = self.apply(sum(figures["after"] for figures in totals.values()))
        shares = apportion(total, [figures["after"] for figures in totals.values()])
        return {
            "calibrated_total": total,
            "calibrated_totals": dict(zip(totals, shares, strict=True)),  # they add up to the total
            **info,
        }


UNCALIBRATED: dict[str, Any] = {"calibrated_total": None, "calibrated_totals": None, "calibration": None}


def calibration_of(ratio: float | None, calls: int) -> Calibration | None:
    """The calibration from a median and its call count; none before the first reported call."""
    return Calibration(float(ratio), calls) if ratio is not None and calls else None
