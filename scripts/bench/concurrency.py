"""Runs in the background: the inspector and /healthz while K runs wait on a slow model, and runs per minute.

Run from the repository root::

    .venv/bin/python -m scripts.bench.concurrency            # K = 8, H = 5 s
    .venv/bin/python -m scripts.bench.concurrency --runs 8 --hold 5 --batch 16

It starts ``hango serve`` on a fresh embedded PostgreSQL with the README default
(2 gunicorn sync workers and 1 queue worker of ``HANGO_WORKER_CONCURRENCY`` = 4), its
``anthropic/...`` provider a fake server that answers every model call after H
seconds. It measures, as ratios from one run:

- inspect (``GET /v1/sessions/{id}/context`` of a fifth session) p50 idle, then while
  K runs are in flight; ``/healthz`` p99 meanwhile; whether every run finished;
- runs per minute for a batch of runs queued with no worker up, then worked by 1
  ``hango worker`` process, and again by 2 (each of ``HANGO_WORKER_CONCURRENCY`` = 4).
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import requests

from hango.config import REPO_ROOT
from scripts.bench.hango_server import Hango, database, serving
from tests.fakes.provider_server import MESSAGES, TEST_API_KEY, FakeProviderServer

MODEL = "anthropic/claude-bench"
ENDED = {"completed", "max_turns", "quota_exhausted", "failed", "timeout", "cancelled"}
RUN_WAIT = 600.0
POLL_SECONDS = 1.0  # each run polled once a second, as a client's poll loop does


class Api:
    def __init__(self, hango: Hango) -> None:
        self.url = hango.url
        self.http = requests.Session()
        self.http.headers["Authorization"] = f"Bearer {hango.principal['api_key']}"

    def call(self, method: str, path: str, **kw: Any) -> requests.Response:
        return self.http.request(method, self.url + path, timeout=120, **kw)

    def session(self, agent: str) -> str:
        return self.call("POST", "/v1/sessions", json={"agent_id": agent}).json()["id"]

    def agent(self) -> str:
        body = {"name": "bench", "model": MODEL, "system_prompt": "You help.", "tools": ["ls"]}
        return self.call("POST", "/v1/agents", json=body).json()["id"]


def timed(call: Callable[[], requests.Response]) -> float:
    started = time.perf_counter()
    answer = call()
    assert answer.status_code == 200, answer.text
    return time.perf_counter() - started


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def queue_runs(api: Api, sessions: list[str]) -> list[str]:
    runs = []
    for session in sessions:
        sent = api.call("POST", f"/v1/sessions/{session}/messages", json={"content": "go"})
        assert sent.status_code == 202, sent.text
        runs.append(sent.json()["id"])
    return runs


def all_ended(api: Api, runs: list[str]) -> list[dict[str, Any]]:
    deadline = time.monotonic() + RUN_WAIT
    while True:
        shown = [api.call("GET", f"/v1/runs/{run}").json() for run in runs]
        if all(r["status"] in ENDED for r in shown) or time.monotonic() > deadline:
            return shown
        time.sleep(POLL_SECONDS)


def responsiveness(api: Api, runs: int) -> dict[str, Any]:
    """Inspect p50 idle and with ``runs`` in flight, /healthz p99 meanwhile, and whether every run finished."""
    agent = api.agent()
    inspected = api.session(agent)
    inspect = lambda: api.call("GET", f"/v1/sessions/{inspected}/context")  # noqa: E731
    health = lambda: requests.get(f"{api.url}/healthz", timeout=30)  # noqa: E731
    for _ in range(5):
        timed(inspect)  # warm both web workers
    idle = [timed(inspect) for _ in range(30)]
    queued = queue_runs(api, [api.session(agent) for _ in range(runs)])
    busy: list[float] = []
    healthz: list[float] = []
    done = threading.Event()
    watcher = threading.Thread(target=lambda: (all_ended(api, queued), done.set()))
    watcher.start()
    while not done.is_set():
        busy.append(timed(inspect))
        healthz.append(timed(health))
    watcher.join()
    finished = all_ended(api, queued)
    return {
        "inspect_idle_p50_ms": statistics.median(idle) * 1000,
        "inspect_busy_p50_ms": statistics.median(busy) * 1000,
        "ratio": statistics.median(busy) / statistics.median(idle),
        "healthz_p99_ms": percentile(healthz, 0.99) * 1000,
        "samples": len(busy),
        "completed": sum(r["status"] == "completed" for r in finished),
        "runs": runs,
    }


def runs_per_minute(api: Api, database_url: str, env: dict[str, str], batch: int, workers: int) -> float:
    """Queue ``batch`` runs with no worker up, then start ``workers`` workers: runs per minute they did.

    Measured from the first run's start to the last one's end by the server's clock, so neither
    the queueing nor the poll's interval counts.
    """
    agent = api.agent()
    queued = queue_runs(api, [api.session(agent) for _ in range(batch)])
    argv = [sys.executable, "-m", "hango", "worker"]
    worker_env = {**os.environ, **env, "HANGO_DATABASE_URL": database_url}
    started = [
        subprocess.Popen(
            argv, cwd=REPO_ROOT, env=worker_env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        for _ in range(workers)
    ]
    try:
        finished = all_ended(api, queued)
    finally:
        for worker in started:
            worker.terminate()
        for worker in started:
            worker.wait(timeout=60)
    assert all(r["status"] == "completed" for r in finished), [r["status"] for r in finished]
    first = min(dt.datetime.fromisoformat(r["started_at"]) for r in finished)
    last = max(dt.datetime.fromisoformat(r["finished_at"]) for r in finished)
    return batch / (last - first).total_seconds() * 60


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=8, help="K: runs in flight while inspecting")
    parser.add_argument("--hold", type=float, default=5.0, help="H: seconds the fake model takes per call")
    parser.add_argument("--batch", type=int, default=16, help="runs per throughput measurement")
    args = parser.parse_args()
    with database(1_000_000) as (data_dir, url, principal), FakeProviderServer() as provider:
        provider.hang(args.hold, times=None, path=MESSAGES)
        env = {
            "HANGO_ANTHROPIC_BASE_URL": provider.anthropic_base_url,
            "ANTHROPIC_API_KEY": TEST_API_KEY,
            "HANGO_MAX_RUNS_PER_MEMBER": "1000",
            "HANGO_MAX_RUNS_PER_TENANT": "1000",
        }
        with serving(data_dir, url, principal, 2, env={**env, "HANGO_QUEUE_WORKERS": "1"}) as hango:
            seen = responsiveness(Api(hango), args.runs)
        with serving(data_dir, url, principal, 2, env={**env, "HANGO_QUEUE_WORKERS": "0"}) as hango:
            api = Api(hango)
            one = runs_per_minute(api, url, env, args.batch, workers=1)
            two = runs_per_minute(api, url, env, args.batch, workers=2)
    print(f"K = {args.runs} runs in flight, H = {args.hold} s per model call, 2 web workers + 1 queue worker")
    print(f"inspect p50 idle:            {seen['inspect_idle_p50_ms']:.1f} ms")
    print(f"inspect p50 during the runs: {seen['inspect_busy_p50_ms']:.1f} ms ({seen['samples']} samples)")
    print(f"  ratio:                     {seen['ratio']:.2f}x")
    print(f"/healthz p99 during the runs: {seen['healthz_p99_ms']:.1f} ms")
    print(f"runs finished:               {seen['completed']}/{seen['runs']}")
    print(f"runs per minute, 1 worker:   {one:.1f}  ({args.batch} runs)")
    print(f"runs per minute, 2 workers:  {two:.1f}")
    print(f"  ratio:                     {two / one:.2f}x")


if __name__ == "__main__":
    main()
