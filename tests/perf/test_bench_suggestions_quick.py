"""The suggestions benchmark's quick mode runs end to end: correctness only, never its timings."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.perf.bench_runs import run_quick

TIMEOUT = 300  # the quick run takes about a minute on an idle machine; CI machines are shared


@pytest.mark.server
def test_the_quick_suggestions_benchmark_saves_tokens_and_sends_no_invalid_request(tmp_path: Path) -> None:
    done, results = run_quick("scripts.bench.suggestions", tmp_path, TIMEOUT)

    assert "**0 invalid**" in done.stdout
    assert results["errors"] == {}, results["failures"]
    assert results["validity"]["invalid"] == []
    assert results["validity"]["model_calls"] >= 2 * len(results["sessions"])
    for key, saved in results["savings"].items():
        assert saved["share_session"] > 0, key
        applied = results["validity"]["applied"][key]
        assert applied["after"] < applied["before"], key
    assert {"superseded_result", "unused_tool"} <= {
        k for s in results["savings"].values() for k in s["kinds"]
    }
    assert all(t["ratio"] > 0 for t in results["timing"].values())
