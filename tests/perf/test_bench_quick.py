"""The inspect benchmark's quick mode runs end to end; only its correctness is checked, never its timings."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from hango.config import REPO_ROOT

TIMEOUT = 240  # the quick run takes under a minute on an idle machine; CI machines are shared


@pytest.mark.server
def test_the_quick_benchmark_runs_without_errors_and_writes_its_table_and_json(tmp_path: Path) -> None:
    argv = [
        sys.executable,
        "-m",
        "scripts.bench.inspector",
        "--quick",
        "--no-timing-asserts",
        "--out",
        str(tmp_path),
    ]

    done = subprocess.run(argv, cwd=REPO_ROOT, capture_output=True, text=True, timeout=TIMEOUT, check=False)

    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "| **inspect / baseline at 10,000** |" in done.stdout
    assert "| **try overhead / inspect at 1,000** |" in done.stdout
    assert "| **inspect compacted / inspect at 1,000** |" in done.stdout
    assert "| **run compacted / run at 1,000** |" in done.stdout
    assert "| **throughput inspect / baseline, 8 clients** |" in done.stdout
    assert "load average (1, 5, 15 min):" in done.stdout
    written = list(tmp_path.glob("inspect-*.json"))
    assert len(written) == 1, written
    results = json.loads(written[0].read_text())
    assert results["errors"] == {}, results["failures"]
    assert results["problems"] == []
    assert {t["name"] for t in results["targets"]} >= {"errors", "RSS growth over the inspects, MB"}
    assert results["concurrency"]["completed"] > 0
    assert results["sessions"]["10000"]["messages"] == 10_000
    assert results["sessions"]["compacted"] == results["sessions"]["compacted"] | {
        "messages": 12_000,
        "visible": 1_001,
    }
    assert all(len(rates) == 2 for rates in results["concurrency"]["throughput"].values())
    assert [m["phase"] for m in results["load"]] == [
        "start",
        "rss",
        "ratios",
        "compacted, put, try",
        "throughput",
        "runs",
    ]
