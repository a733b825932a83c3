"""Slowloris on loopback: connections that send their request headers one byte a second."""

from __future__ import annotations

import socket
import time
from concurrent.futures import ThreadPoolExecutor

import requests

SLOW_HEAD = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + b"a" * 100
POLL_EVERY = 0.5
POLL_TIMEOUT = 10.0  # generous on a loaded machine; a starved server never answers at all


def slowloris(url: str, until: float) -> int:
    """Send a request's headers one byte a second until ``until`` (or the server hangs up); the bytes sent."""
    host, port = url.removeprefix("http://").split(":")
    sent = 0
    with socket.create_connection((host, int(port)), timeout=5) as sock:
        for byte in SLOW_HEAD:
            if time.monotonic() > until:
                break
            try:
                sock.sendall(bytes([byte]))
            except OSError:
                break
            sent += 1
            time.sleep(1.0)
    return sent


def healthz_under_slowloris(url: str, connections: int, seconds: float) -> list[tuple[int | None, float]]:
    """Poll ``url``'s /healthz while ``connections`` slowloris connections hold it for ``seconds``.

    Each poll's (status, seconds); the status is None when no answer came within ``POLL_TIMEOUT``.
    """
    until = time.monotonic() + seconds
    polls: list[tuple[int | None, float]] = []
    with ThreadPoolExecutor(connections) as pool:
        attacks = [pool.submit(slowloris, url, until) for _ in range(connections)]
        time.sleep(1.5)  # every slow connection is open and has sent its first bytes
        while time.monotonic() < until:
            started = time.monotonic()
            try:
                status: int | None = requests.get(f"{url}/healthz", timeout=POLL_TIMEOUT).status_code
            except requests.RequestException:
                status = None
            polls.append((status, time.monotonic() - started))
            time.sleep(POLL_EVERY)
        assert all(attack.result() > 0 for attack in attacks)
    return polls
