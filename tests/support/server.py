"""A real gunicorn server of ``wsgi:app`` on a free loopback port, for client tests."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import uuid
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


def server_env(database_url: str, env: Mapping[str, str] | None) -> dict[str, str]:
    """The environment of a test server process: ``env`` on ``database_url``, no provider settings of the shell."""
    return {**without_provider_env(os.environ), **(env or {}), "HANGO_DATABASE_URL": database_url}


class QueueWorkers:
    """``hango worker`` processes on one database, each in its own process group; started, killed, stopped."""

    def __init__(self, database_url: str, env: Mapping[str, str] | None, log_path: Path | None) -> None:
        # Short heartbeats and reaper passes: a killed worker's job is failed within seconds.
        fast = {"HANGO_WORKER_HEARTBEAT": "1", "HANGO_REAPER_INTERVAL": "2"}
        self.env = {**fast, **server_env(database_url, env)}
        self.log_path = log_path
        self.processes: list[subprocess.Popen] = []
        self.logs: list[Path] = []
        self._files: list = []

    def start(self, count: int = 1) -> None:
        """Start ``count`` more workers (their output in ``<log_path>.worker<n>``, or discarded)."""
        for _ in range(count):
            index = len(self._files)
            if self.log_path:
                path = self.log_path.with_name(f"{self.log_path.name}.worker{index}")
                self.logs.append(path)
                log = open(path, "w+b")  # noqa: SIM115 - closed in stop()
            else:
                log = tempfile.TemporaryFile()  # noqa: SIM115 - closed in stop()
            self._files.append(log)
            argv = [sys.executable, "-m", "hango", "worker"]
            self.processes.append(
                subprocess.Popen(
                    argv, cwd=REPO_ROOT, env=self.env, stdout=log, stderr=log, start_new_session=True
                )
            )

    def pids(self) -> list[int]:
        return [p.pid for p in self.processes if p.poll() is None]

    def kill(self) -> list[int]:
        """SIGKILL every worker (``kill -9``: no clean-up at all); returns their pids."""
        pids = self.pids()
        for process in self.processes:
            process.kill()
            process.wait()
        self.processes = []
        return pids

    def terminate(self, timeout: float) -> list[int]:
        """SIGTERM every worker and wait up to ``timeout`` seconds for each to exit; their exit codes."""
        for process in self.processes:
            process.terminate()
        codes = [process.wait(timeout=timeout) for process in self.processes]
        self.processes = []
        return codes

    def stop(self) -> None:
        for process in self.processes:
            stop(process)
        self.processes = []
        for log in self._files:
            log.close()

    def log_text(self) -> str:
        return "".join(path.read_bytes().decode("utf-8", "replace") for path in self.logs)


@contextmanager
def queue_worker_pool(
    database_url: str, env: Mapping[str, str] | None = None, log_path: Path | None = None, count: int = 1
) -> Iterator[QueueWorkers]:
    """``count`` queue workers on ``database_url`` until the block ends."""
    pool = QueueWorkers(database_url, env, log_path)
    try:
        pool.start(count)
        yield pool
    finally:
        pool.stop()


@contextmanager
def gunicorn_server(
    database_url: str,
    workers: int = 2,
    *,
    env: Mapping[str, str] | None = None,
    log_path: Path | None = None,
    queue_workers: int = 1,
    args: Sequence[str] = (),
) -> Iterator[str]:
    """Run gunicorn and ``queue_workers`` queue workers on ``database_url`` until the block ends; yields the base URL.

    ``env`` adds ``HANGO_*`` settings; ``log_path`` keeps the server's output in that file
    (and each queue worker's in ``<log_path>.worker<i>``); ``args`` are more gunicorn options
    (``ACCESS_LOG``).
    """
    # Every server queues on a queue of its own unless told which: servers of other tests share the
    # database, and a worker of one must never run a job of another configured differently.
    env = {"HANGO_JOB_QUEUE": f"test-{uuid.uuid4().hex[:12]}", **(env or {})}
    port = free_port()
    argv = [sys.executable, "-m", "gunicorn", "--workers", str(workers), "--bind", f"127.0.0.1:{port}", *args]
    url = f"http://127.0.0.1:{port}"
    with (
        queue_worker_pool(database_url, env, log_path, queue_workers),
        _gunicorn(argv, server_env(database_url, env), url, log_path) as started,
    ):
        yield started


@contextmanager
def _gunicorn(argv: list[str], env: dict[str, str], url: str, log_path: Path | None) -> Iterator[str]:
    # A file, not a pipe: a long session's log must never fill a pipe and block the server.
    opened = open(log_path, "w+b") if log_path else tempfile.TemporaryFile()  # noqa: SIM115
    with opened as log:
        server = subprocess.Popen(
            [*argv, "--no-control-socket", "wsgi:app"], cwd=REPO_ROOT, env=env, stdout=log, stderr=log
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
