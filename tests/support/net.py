"""Loopback helpers: a free port, waiting for a condition, and trying again while an answer says so."""

from __future__ import annotations

import random
import socket
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")


# The kernel hands out ports for bind(0) and outgoing connections from its ephemeral range only.
# A server's port is picked a while before the server binds it (gunicorn imports the app first; the
# README's run command installs hango first): picked below that range, the port cannot go in the
# meantime to another process's bind(0) or connection (another xdist worker's servers, another
# suite, PostgreSQL). Picks are random, so two workers picking at once rarely meet.
LOWEST_PORT = 20_000
EPHEMERAL = Path("/proc/sys/net/ipv4/ip_local_port_range")
_pick = random.SystemRandom()  # not the seeded ``random`` of a test: workers must pick differently


def free_port() -> int:
    """A loopback port nothing is bound to, below the kernel's ephemeral range when there is room."""
    first_ephemeral = int(EPHEMERAL.read_text().split()[0]) if EPHEMERAL.exists() else 0
    for _ in range(100 if first_ephemeral - LOWEST_PORT >= 1_000 else 0):
        port = _pick.randrange(LOWEST_PORT, first_ephemeral)
        if _bindable(port):
            return port
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _bindable(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


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


def retry_while(
    call: Callable[[], T], again: Callable[[T], bool], timeout: float, interval: float = 0.5
) -> list[T]:
    """Call ``call`` until ``again`` is false of its answer or ``timeout`` has passed; every answer, the last last."""
    deadline = time.monotonic() + timeout
    answers = [call()]
    while again(answers[-1]) and time.monotonic() < deadline:
        time.sleep(interval)
        answers.append(call())
    return answers
