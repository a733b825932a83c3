"""The figures a reliability run reports (requests sent, examples, faults...), for docs/reliability.md.

Tests call ``record``; when ``HANGO_RELIABILITY_FIGURES`` names a file, every figure
is merged into it as JSON, so ``scripts/soak.py`` and a plain pytest run both leave
their numbers behind. Under pytest-xdist every worker merges into the same file: a
lock file beside it (``fcntl.flock``) orders the read-merge-write of the processes, and
the new content replaces the old in one rename, so a reader never sees half a file.
"""

from __future__ import annotations

import fcntl
import json
import os
import threading
from pathlib import Path
from typing import Any

_lock = threading.Lock()


def record(name: str, **values: Any) -> None:
    """Merge ``values`` under ``name`` into the figures file, when one is configured."""
    target = os.environ.get("HANGO_RELIABILITY_FIGURES")
    if not target:
        return
    path = Path(target)
    with _lock, open(path.with_name(path.name + ".lock"), "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # released when the file closes
        figures = json.loads(path.read_text()) if path.exists() else {}
        figures[name] = values
        written = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        written.write_text(json.dumps(figures, indent=2, sort_keys=True) + "\n")
        written.replace(path)
