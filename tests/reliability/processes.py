"""Find a test gunicorn's processes through /proc (Linux): its master and its workers."""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import urlsplit


def _ppid(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[1])


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _pids() -> list[int]:
    return [int(name) for name in os.listdir("/proc") if name.isdigit()]


def gunicorn_workers(url: str) -> list[int]:
    """The worker pids of the gunicorn this process started on ``url``'s port."""
    bind = f"127.0.0.1:{urlsplit(url).port}"
    masters = [p for p in _pids() if _ppid(p) == os.getpid() and bind in _cmdline(p)]
    assert len(masters) == 1, masters
    return sorted(p for p in _pids() if _ppid(p) == masters[0])
