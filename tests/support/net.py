"""Loopback helpers: a free port, and waiting for a condition."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_until(condition: Callable[[], bool], timeout: float, interval: float = 0.2) -> None:
    """Poll ``condition`` until it holds; connection errors count as not yet."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            if condition():
                return
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise TimeoutError(f"condition not met within {timeout} s")
        time.sleep(interval)
