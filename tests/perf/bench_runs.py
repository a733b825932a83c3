"""Running a benchmark's quick mode from a test: correctness only, never its timings."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from hango.config import REPO_ROOT


def run_quick(
    module: str, out: Path, timeout: float
) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    """``python -m MODULE --quick --no-timing-asserts --out OUT``: its exit, and the one JSON file it wrote."""
    argv = [sys.executable, "-m", module, "--quick", "--no-timing-asserts", "--out", str(out)]
    done = subprocess.run(argv, cwd=REPO_ROOT, capture_output=True, text=True, timeout=timeout, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    written = list(out.glob("*.json"))
    assert len(written) == 1, written
    return done, json.loads(written[0].read_text())
