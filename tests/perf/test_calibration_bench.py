"""The calibration benchmark's quick mode runs end to end as a correctness check (no timing is asserted).

It drives a real ``hango serve`` against a fake Anthropic server whose usage is
counted by the reference tokenizer, checks inspect's calibration against its own
median (exit code 1 when they differ), and prints the error table.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from hango.config import REPO_ROOT

TIMEOUT = 300  # the quick run takes under a minute on an idle machine; CI machines are shared


def figures(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip("|").split("|")]


@pytest.mark.server
def test_the_quick_calibration_benchmark_agrees_with_inspect_and_calibrates_below_the_estimates_error() -> (
    None
):
    argv = [sys.executable, "-m", "scripts.bench.calibration", "--quick"]

    done = subprocess.run(argv, cwd=REPO_ROOT, capture_output=True, text=True, timeout=TIMEOUT, check=False)

    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "PROBLEM" not in done.stdout
    [header] = [line for line in done.stdout.splitlines() if line.startswith("| agent")]
    [overall] = [line for line in done.stdout.splitlines() if line.startswith("| **all**")]
    columns = dict(zip(figures(header), figures(overall), strict=True))
    assert columns["calls"] == "24"
    estimate_error = float(columns["estimate abs %"].split(" / ")[0])
    calibrated_error = float(columns["after 5, abs %"].split(" / ")[0])
    assert calibrated_error < 2.0 < estimate_error
