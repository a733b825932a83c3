"""Golden files, the one mechanism for every snapshot test; rewritten with ``HANGO_UPDATE_GOLDEN=1``.

A ``str`` value is compared as text (a CLI table); anything else as JSON (an
assembled prompt, a wire body), so key order and indentation never matter.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

UPDATE = "HANGO_UPDATE_GOLDEN"


def assert_golden(path: Path, value: Any) -> None:
    """``value`` equals the golden file at ``path``; with ``HANGO_UPDATE_GOLDEN=1`` it is rewritten first."""
    as_text = isinstance(value, str)
    text = value if as_text else json.dumps(value, indent=2, ensure_ascii=False) + "\n"
    if os.environ.get(UPDATE) == "1":
        path.parent.mkdir(exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert path.exists(), f"no golden file {path.name}: run the test once with {UPDATE}=1"
    stored = path.read_text(encoding="utf-8")
    same = text == stored if as_text else json.loads(text) == json.loads(stored)
    assert same, f"{path.name} differs; if the change is intended, rerun with {UPDATE}=1 and review the diff"
