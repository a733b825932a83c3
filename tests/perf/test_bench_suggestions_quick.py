"""The suggestions benchmark's quick mode runs end to end: correctness only, never its timings."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from hango.config import REPO_ROOT

TIMEOUT = 300  # the quick run takes about a minute on an idle machine; CI machines are shared


@pytest.mark.server
def test_the_quick_suggestions_benchmark_saves_tokens_and_sends_no_invalid_request(tmp_path: Path) -> None:
    argv = [
        sys.executable,
        "-m",
        "scripts.bench.suggestions",
        "--quick",
        "--no-timing-asserts",
        "--out",
        str(tmp_path),
    ]

    done = subprocess.run(argv, cwd=REPO_ROOT, capture_output=True, text=True, timeout=TIMEOUT, check=False)

    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "**0 invalid**" in done.stdout
    [written] = tmp_path.glob("suggestions-*.json")
    results = json.loads(written.read_text())
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
