"""The inspect benchmark's quick mode runs end to end; only its correctness is checked, never its timings."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.perf.bench_runs import run_quick

TIMEOUT = 240  # the quick run takes under a minute on an idle machine; CI machines are shared


@pytest.mark.server
def test_the_quick_benchmark_runs_without_errors_and_writes_its_table_and_json(tmp_path: Path) -> None:
    done, results = run_quick("scripts.bench.inspector", tmp_path, TIMEOUT)

    assert "| **inspect / baseline at 10,000** |" in done.stdout
    assert "| **try overhead / inspect at 1,000** |" in done.stdout
    assert "| **inspect compacted / inspect at 1,000** |" in done.stdout
    assert "| **run compacted / run at 1,000** |" in done.stdout
    assert "| **throughput inspect / baseline, 8 clients** |" in done.stdout
    assert "| **inspect per message, 50,000 / 10,000** |" in done.stdout
    assert "per message: inspect " in done.stdout
    assert "load average (1, 5, 15 min):" in done.stdout
    assert results["errors"] == {}, results["failures"]
    assert results["problems"] == []
    assert {t["name"] for t in results["targets"]} >= {"errors", "RSS growth over the inspects, MB"}
    assert results["concurrency"]["completed"] > 0
    assert results["sessions"]["10000"]["messages"] == 10_000
    assert results["sessions"]["50000"]["messages"] == 50_000
    assert set(results["response_bytes"]) == {"100", "1000", "10000", "50000"}
    assert results["sessions"]["compacted"] == results["sessions"]["compacted"] | {
        "messages": 12_000,
        "visible": 1_001,
    }
    assert all(len(rates) == 2 for rates in results["concurrency"]["throughput"].values())
    assert [m["phase"] for m in results["load"]] == [
        "start",
        "rss",
        "ratios",
        "50,000",
        "compacted, put, try",
        "throughput",
        "runs",
    ]
