"""Golden files: JSON snapshots under ``tests/runtime/golden/``, rewritten with ``HANGO_UPDATE_GOLDEN=1``."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

GOLDEN = Path(__file__).parent / "golden"
UPDATE = "HANGO_UPDATE_GOLDEN"


def assert_golden(name: str, value: Any) -> None:
    """``value`` equals ``golden/<name>.json``; with ``HANGO_UPDATE_GOLDEN=1`` the file is rewritten first."""
    path = GOLDEN / f"{name}.json"
    text = json.dumps(value, indent=2, ensure_ascii=False) + "\n"
    if os.environ.get(UPDATE) == "1":
        path.parent.mkdir(exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert path.exists(), f"no golden file {path.name}: run the test once with {UPDATE}=1"
    assert json.loads(text) == json.loads(path.read_text(encoding="utf-8")), (
        f"{path.name} differs; if the change is intended, rerun with {UPDATE}=1 and review the diff"
    )
