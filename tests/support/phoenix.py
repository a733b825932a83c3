"""A real Arize Phoenix (from ``./.venv-phoenix``, made by ``scripts/setup dev``) on free loopback ports.

Phoenix receives OTLP/HTTP traces at ``<url>/v1/traces`` and serves them at
``GET <url>/v1/projects/<project>/spans``. It runs offline (no external resources,
no telemetry of its own) and keeps its SQLite database in ``working_dir``.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import requests

from hango.config import REPO_ROOT
from tests.support.net import free_port, wait_until
from tests.support.server import stop

PHOENIX = REPO_ROOT / ".venv-phoenix" / "bin" / "phoenix"
# Phoenix takes 20-60 s to start; far more on a loaded 2-core machine.
START_TIMEOUT = 120.0


def _ready(url: str) -> bool:
    return requests.get(f"{url}/healthz", timeout=2).status_code == 200


@contextmanager
def phoenix_server(working_dir: Path) -> Iterator[str]:
    """Run Phoenix until the block ends; yields its base URL."""
    if not PHOENIX.exists():
        raise RuntimeError(f"{PHOENIX} is missing: run scripts/setup dev")
    port, grpc_port = free_port(), free_port()
    env = {
        **os.environ,
        "PHOENIX_HOST": "127.0.0.1",
        "PHOENIX_PORT": str(port),
        "PHOENIX_GRPC_PORT": str(grpc_port),
        "PHOENIX_WORKING_DIR": str(working_dir),
        "PHOENIX_ALLOW_EXTERNAL_RESOURCES": "false",
        "PHOENIX_TELEMETRY_ENABLED": "false",
    }
    url = f"http://127.0.0.1:{port}"
    with open(working_dir / "phoenix.log", "w+b") as log:
        server = subprocess.Popen([str(PHOENIX), "serve"], cwd=working_dir, env=env, stdout=log, stderr=log)
        try:
            try:
                wait_until(lambda: server.poll() is None and _ready(url), timeout=START_TIMEOUT, interval=0.5)
            except TimeoutError as exc:
                log.seek(0)
                raise RuntimeError(f"Phoenix did not become ready:\n{log.read().decode()[-3000:]}") from exc
            yield url
        finally:
            stop(server, grace=20.0)


def project_spans(url: str, project: str) -> list[dict[str, Any]]:
    """Every span Phoenix holds for ``project`` (following its cursor); none when the project is unknown."""
    spans: list[dict[str, Any]] = []
    cursor = None
    while True:
        params = {"limit": 1000, **({"cursor": cursor} if cursor else {})}
        answer = requests.get(f"{url}/v1/projects/{project}/spans", params=params, timeout=10)
        if answer.status_code == 404:
            return []
        answer.raise_for_status()
        body = answer.json()
        spans += body["data"]
        cursor = body.get("next_cursor")
        if not cursor:
            return spans
