"""The inspect benchmark's pairs: kept pair by pair, and each ratio taken pair by pair."""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field

import pytest

from scripts.bench.inspector import pair
from scripts.bench.inspector_report import paired


def test_a_ratio_is_the_median_of_its_pairs_ratios_so_drift_within_a_phase_cancels() -> None:
    # Within a pair a takes 1.1 × b; the machine halves its speed during pairs 9 and 10, between
    # their two requests, and stays slow after.
    a = [11.0] * 9 + [22.0] * 11
    b = [10.0] * 11 + [20.0] * 9
    samples = {"a": a, "b": b, "c": [1.0] * 20}

    assert paired(samples, "a", "b") == pytest.approx(1.1)
    assert paired(samples, "a", "b", minus="c") == pytest.approx((22 - 1) / 20)  # each pair less its c
    # the ratio of the two medians puts a's median in the slow half and b's in the fast one
    assert statistics.median(a) / statistics.median(b) == pytest.approx(2.2)


@dataclass
class Requests:
    """What ``pair`` needs of a recorder: samples by name, and requests that fail on the named turns."""

    failing: set[int]
    samples: dict[str, list[float]] = field(default_factory=dict)
    sent: int = 0

    def timed(self, name: str, method: str, path: str, **kw) -> None:
        self.sent += 1
        if self.sent not in self.failing:
            self.samples.setdefault(name, []).append(float(self.sent))


def test_a_failed_request_drops_the_other_sample_of_its_pair_so_the_pairs_stay_aligned() -> None:
    rec = Requests(failing={4})  # the second pair's second request (its order alternates)
    first, second = ("a", "GET", "/a", {}), ("b", "GET", "/b", {})

    answered = [pair(rec, index, first, second) for index in range(3)]

    assert answered == [True, False, True]
    assert rec.samples == {"a": [1.0, 5.0], "b": [2.0, 6.0]}
