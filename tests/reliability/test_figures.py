"""The figures file under pytest-xdist: processes recording at once into one file lose nothing."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from hango.config import REPO_ROOT

RECORDS = 40
# One process recording RECORDS figures as fast as it can, each under its own name.
RECORDER = """
import sys
from tests.reliability.figures import record
for n in range({records}):
    record(f"{{sys.argv[1]}}/{{n}}", n=n)
"""


def test_processes_recording_at_once_keep_every_figure_of_each_other(tmp_path: Path, monkeypatch) -> None:
    figures = tmp_path / "figures.json"
    monkeypatch.setenv("HANGO_RELIABILITY_FIGURES", str(figures))
    code = RECORDER.format(records=RECORDS)

    recorders = [
        subprocess.Popen([sys.executable, "-c", code, name], cwd=REPO_ROOT) for name in ("gw0", "gw1", "gw2")
    ]

    assert [recorder.wait(timeout=120) for recorder in recorders] == [0, 0, 0]
    recorded = json.loads(figures.read_text())
    assert sorted(recorded) == sorted(f"{name}/{n}" for name in ("gw0", "gw1", "gw2") for n in range(RECORDS))
    assert recorded["gw1/7"] == {"n": 7}
