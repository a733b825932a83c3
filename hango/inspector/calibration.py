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

CALLS = 20  # the recent calls the median is taken over


@dataclass(frozen=True)
class Calibration:
    """The median ratio of reported to estimated input tokens, and how many calls it is based on."""

    ratio: float
    calls: int

    def apply(self, estimate: int) -> int:
        """``estimate`` as the provider would likely report it."""
        return round(estimate * self.ratio)

    def report(self, totals: Mapping[str, Mapping[str, int]]) -> dict[str, Any]:
        """Inspect's calibrated figures beside the estimated group totals (their ``after``)."""
        groups = {group: self.apply(figures["after"]) for group, figures in totals.items()}
        return {
            "calibrated_total": self.apply(sum(figures["after"] for figures in totals.values())),
            "calibrated_totals": groups,
            "calibration": {"ratio": round(self.ratio, 4), "calls": self.calls},
        }


UNCALIBRATED: dict[str, Any] = {"calibrated_total": None, "calibrated_totals": None, "calibration": None}


def calibration_of(ratio: float | None, calls: int) -> Calibration | None:
    """The calibration from a median and its call count; none before the first reported call."""
    return Calibration(float(ratio), calls) if ratio is not None and calls else None
