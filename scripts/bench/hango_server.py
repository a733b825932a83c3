"""hango run the production way for a benchmark: ``hango serve`` (gunicorn) on an embedded PostgreSQL.

The data folder is a fresh temporary one under /tmp (mode 755, so PostgreSQL's
service user reaches it when run as root). The benchmark process registers with
the embedded server first; ``hango db upgrade``, ``hango admin bootstrap`` and
``hango serve`` attach to it. Everything started here is stopped when the block
ends, on an error or on Ctrl-C too.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psutil
import requests

from hango.config import REPO_ROOT
from hango.db.embedded import EmbeddedPostgres

START_TIMEOUT = 180.0  # a loaded 2-core machine (CI with the suite on both cores) boots gunicorn slowly
STOP_TIMEOUT = 20.0


@dataclass(frozen=True)
class Hango:
    """A running hango: its base URL, database URL, bootstrap principal and ``hango serve`` process."""

    url: str
    database_url: str
    principal: dict
    serve: subprocess.Popen
    log: Path

    def workers(self) -> list[psutil.Process]:
        """The gunicorn worker processes (children of the gunicorn master that ``hango serve`` started)."""
        masters = psutil.Process(self.serve.pid).children()
        return [worker for master in masters for worker in master.children()]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def hango_env(data_dir: Path, port: int) -> dict[str, str]:
    """The environment of the ``hango`` commands: the embedded database in ``data_dir``."""
    env = {k: v for k, v in os.environ.items() if k != "HANGO_DATABASE_URL"}
    return {**env, "HANGO_DATA_DIR": str(data_dir), "HANGO_PORT": str(port)}


def hango_command(env: dict[str, str], *argv: str, tree: Path = REPO_ROOT) -> str:
    """Run one ``hango`` command of the source ``tree`` to completion and return its output."""
    return command([sys.executable, "-m", "hango", *argv], tree, env, f"hango {' '.join(argv)}")


def command(argv: list[str], cwd: Path | str, env: dict[str, str], name: str) -> str:
    """Run ``argv`` to completion and return its output; its error output's end when it fails."""
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{name} failed:\n{done.stderr[-3000:]}")
    return done.stdout


def run_ended(http: requests.Session, url: str, location: str, timeout: float = 120) -> dict:
    """The queued run at ``location`` (a 202's Location) once it has ended, polled as a client does."""
    deadline = time.monotonic() + timeout
    while True:
        answer = http.get(url + location, timeout=timeout)
        answer.raise_for_status()
        run = answer.json()
        if run["state"] not in ("queued", "running"):
            return run
        if time.monotonic() > deadline:
            raise TimeoutError(f"run {location} still {run['state']} after {timeout} s")
        time.sleep(0.01)


def answers(url: str) -> bool:
    """Whether ``url`` answers 200 (False while nothing listens, or the workers still load the app)."""
    try:
        return requests.get(url, timeout=2).status_code == 200
    except requests.RequestException:
        return False


def wait_ready(url: str, serve: subprocess.Popen, log: Path, name: str = "hango serve") -> None:
    """Wait until ``url`` answers 200; fail with the log's end when the server exits or takes too long."""
    deadline = time.monotonic() + START_TIMEOUT
    while not answers(url):
        if serve.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"{name} did not become ready:\n{log.read_text()[-3000:]}")
        time.sleep(0.2)


def stop(serve: subprocess.Popen) -> None:
    """SIGTERM to ``hango serve`` (it passes it on to gunicorn); kill the whole group if it hangs."""
    if serve.poll() is None:
        serve.terminate()
    try:
        serve.wait(timeout=STOP_TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(serve.pid, signal.SIGKILL)
        serve.wait()
    with contextlib.suppress(ProcessLookupError):  # a worker left behind by a killed master
        os.killpg(serve.pid, signal.SIGKILL)


@contextlib.contextmanager
def database(rate_limit: int, tree: Path = REPO_ROOT) -> Iterator[tuple[Path, str, dict]]:
    """A migrated embedded PostgreSQL in a fresh folder, and a bootstrap principal with ``rate_limit``.

    ``tree`` is the source tree whose migrations and commands run (another checkout, for a before/after).
    """
    data_dir = Path(tempfile.mkdtemp(prefix="hango-bench-", dir="/tmp"))
    data_dir.chmod(0o755)
    postgres = EmbeddedPostgres(data_dir)
    try:
        url = postgres.acquire()
        env = hango_env(data_dir, 0)
        hango_command(env, "db", "upgrade", tree=tree)
        boot = ("admin", "bootstrap", "--tenant", "Bench", "--email", "bench@bench.test")
        principal = json.loads(
            hango_command(env, *boot, "--rate-limit", str(rate_limit), "--json", tree=tree)
        )
        yield data_dir, url, principal
    finally:
        postgres.release()
        shutil.rmtree(data_dir, ignore_errors=True)


@contextlib.contextmanager
def serving(
    data_dir: Path,
    database_url: str,
    principal: dict,
    workers: int,
    *,
    tree: Path = REPO_ROOT,
    env: dict[str, str] | None = None,
) -> Iterator[Hango]:
    """``hango serve --workers N`` of ``tree`` on the database in ``data_dir`` (``env`` added) until the block ends."""
    port = free_port()
    log = data_dir / f"serve-{port}.log"
    with open(log, "wb") as out:
        serve = subprocess.Popen(
            [sys.executable, "-m", "hango", "serve", "--port", str(port), "--workers", str(workers)],
            cwd=tree,
            env={**hango_env(data_dir, port), **(env or {})},
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # Ctrl-C reaches the benchmark only; it stops the server itself
        )
    try:
        url = f"http://127.0.0.1:{port}"
        wait_ready(f"{url}/readyz", serve, log)
        yield Hango(url, database_url, principal, serve, log)
    finally:
        stop(serve)
