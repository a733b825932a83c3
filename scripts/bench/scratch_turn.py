"""Benchmark the whole-turn try: a scratch turn against the real turn it imitates, at 1,000 messages.

Run from the repository root after the README's set-up::

    .venv/bin/python -m scripts.bench.scratch_turn            # 20 interleaved pairs
    .venv/bin/python -m scripts.bench.scratch_turn --quick    # 5 pairs

One ``hango serve`` (one worker) on an embedded PostgreSQL, one 1,000-message session of
the inspect benchmark's agent and history (a window that never compacts). Each pair sends
one real turn (``POST …/messages``) and one scratch turn (``POST …/context/try`` with
``"mode": "turn"``), both a ``write_file`` tool call and an answer (offline provider), the
pair's order alternating, and waits for each run to end as a client does. It reports how
long each turn worked (its ``run_started`` to its ``run_finished``), the time from ``run_started`` to the first model call (a real run: lock,
state, repair and user message; a scratch turn: snapshot under the session's lock, state
and the try plan on it) and what ``GET /v1/runs/{id}`` of an ended scratch run takes (its
calls expanded through the calls API's views). Target: a scratch turn within 1.5× a real one.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import time
from collections.abc import Sequence
from typing import Any

import requests

from scripts.bench import ledger
from scripts.bench.hango_server import database, run_ended, serving
from scripts.bench.inspector_report import p50, p95

RATE_LIMIT = 10_000_000
TARGET = 1.5
WARMUP = 2
WRITE = '/tool write_file {"path": "/bench.md", "content": "a line the turn writes"}'


def turn(http: requests.Session, url: str, session: str, kind: str, index: int) -> tuple[float, float, dict]:
    """One turn of ``kind`` (``real`` or ``scratch``): how long it worked and its preparation in ms, and the run.

    Both from the run's steps (``run_started`` to ``run_finished``, and to the first model call), so
    the final ``GET /v1/runs/{id}``, which expands a scratch run's calls, is measured on its own.
    """
    text = f"bench turn {index}\n{WRITE}"
    if kind == "real":
        sent = http.post(f"{url}/v1/sessions/{session}/messages", json={"content": text}, timeout=120)
    else:
        body = {"mode": "turn", "message": text}
        sent = http.post(f"{url}/v1/sessions/{session}/context/try", json=body, timeout=120)
    sent.raise_for_status()
    run = run_ended(http, url, sent.headers["Location"])
    if run["state"] != "succeeded":
        raise RuntimeError(f"{kind} run {run['id']}: {run['status']} {run['error']}")
    steps = http.get(f"{url}/v1/runs/{run['id']}/events", timeout=120).json()["items"]
    at = {s["kind"]: dt.datetime.fromisoformat(s["at"]) for s in reversed(steps)}  # each kind's first
    preparing = (at["model_call_started"] - at["run_started"]).total_seconds() * 1000
    worked = (at["run_finished"] - at["run_started"]).total_seconds() * 1000
    return worked, preparing, run


def measure(pairs: int) -> dict[str, Any]:
    with database(RATE_LIMIT) as (data_dir, url, principal):
        session, _ = ledger.seed(url, principal)  # two sessions of that history; one is enough here
        with serving(data_dir, url, principal, 1) as server:
            http = requests.Session()
            http.headers["Authorization"] = f"Bearer {principal['api_key']}"
            for index in range(WARMUP):
                (
                    turn(http, server.url, session, "real", index),
                    turn(http, server.url, session, "scratch", index),
                )
            latency: dict[str, list[float]] = {"real": [], "scratch": []}
            preparing: dict[str, list[float]] = {"real": [], "scratch": []}
            reads: list[float] = []
            for index in range(pairs):
                for kind in ("real", "scratch") if index % 2 == 0 else ("scratch", "real"):
                    elapsed, prepared, run = turn(http, server.url, session, kind, index)
                    latency[kind].append(elapsed)
                    preparing[kind].append(prepared)
                    if kind == "scratch":
                        clock = time.perf_counter()
                        http.get(f"{server.url}/v1/runs/{run['id']}", timeout=120).raise_for_status()
                        reads.append((time.perf_counter() - clock) * 1000)
    ratio = p50(latency["scratch"]) / p50(latency["real"])

    def figures(xs: list[float]) -> dict[str, float]:
        return {"p50_ms": round(p50(xs), 1), "p95_ms": round(p95(xs), 1)}

    return {
        "pairs": pairs,
        "turn at 1,000 messages (run_started to run_finished)": {
            kind: figures(xs) for kind, xs in latency.items()
        },
        "run_started to the first model call": {kind: figures(xs) for kind, xs in preparing.items()},
        "GET /v1/runs/{id} of an ended scratch run": figures(reads),
        "ratio": round(ratio, 3),
        "target": TARGET,
        "ok": ratio <= TARGET,
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="5 pairs instead of 20")
    args = parser.parse_args(argv)
    result = measure(5 if args.quick else 20)
    print(json.dumps(result, indent=2))
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
