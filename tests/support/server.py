"""A real gunicorn server of ``wsgi:app`` on a free loopback port, for client tests."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

import requests

from hango.config import REPO_ROOT
from tests.support.net import free_port, wait_until
from tests.support.provider_env import without_provider_env

# A worker imports the configured providers' SDKs before it serves: generous for a loaded machine.
START_TIMEOUT = 120.0
# gunicorn's access log in the server's output: one line a request with the seconds the worker took
# from the parsed request to the last byte of its answer, the server's own figure of how long it took.
ACCESS_LOG = ("--access-logfile", "-", "--access-logformat", "access %(m)s %(U)s %(s)s %(L)s")
ACCESS_LINE = re.compile(
    r"^access (?P<method>\S+) (?P<path>\S+) (?P<status>\d{3}) (?P<seconds>\d+\.\d+)$", re.M
)


def _ready(url: str) -> bool:
    with requests.Session() as http:
        return http.get(f"{url}/readyz", timeout=2).status_code == 200


@contextmanager
def gunicorn_server(
    database_url: str,
    workers: int = 2,
    env: Mapping[str, str] | None = None,
    log_path: Path | None = None,
    args: Sequence[str] = (),
) -> Iterator[str]:
    """Run gunicorn on ``database_url`` until the block ends; yields the base URL.

    ``env`` adds ``HANGO_*`` settings; ``log_path`` keeps the server's output in that file;
    ``args`` are more gunicorn options (``ACCESS_LOG``).
    """
    port = free_port()
    argv = [sys.executable, "-m", "gunicorn", "--workers", str(workers), "--bind", f"127.0.0.1:{port}"]
    # The shell's provider keys and base URLs never reach the server: only what ``env`` sets.
    env = {**without_provider_env(os.environ), **(env or {}), "HANGO_DATABASE_URL": database_url}
    url = f"http://127.0.0.1:{port}"
    # A file, not a pipe: a long session's log must never fill a pipe and block the server.
    opened = open(log_path, "w+b") if log_path else tempfile.TemporaryFile()  # noqa: SIM115
    with opened as log:
        server = subprocess.Popen(
            [*argv, *args, "--no-control-socket", "wsgi:app"], cwd=REPO_ROOT, env=env, stdout=log, stderr=log
        )
        try:
            try:
                wait_until(lambda: server.poll() is None and _ready(url), timeout=START_TIMEOUT)
            except TimeoutError as exc:
                log.seek(0)
                raise RuntimeError(f"gunicorn did not become ready:\n{log.read().decode()[-2000:]}") from exc
            yield url
        finally:
            stop(server)


def served(log_text: str, method: str, path: str) -> list[tuple[int, float]]:
    """(status, seconds) of each ``method path`` request in a server's ``ACCESS_LOG`` output, in order."""
    lines = (m for m in ACCESS_LINE.finditer(log_text) if (m["method"], m["path"]) == (method, path))
    return [(int(m["status"]), float(m["seconds"])) for m in lines]


def stop(server: subprocess.Popen, grace: float = 15.0) -> None:
    """Stop a server process gracefully (SIGTERM), killing it if it does not exit within ``grace`` seconds."""
    server.terminate()
    try:
        server.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()
