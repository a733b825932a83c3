"""Benchmark the call ledger: what it adds to a run turn, and the bytes it stores per call.

Run from the repository root after the README's set-up::

    .venv/bin/python -m scripts.bench.ledger            # 40 interleaved pairs: about two minutes
    .venv/bin/python -m scripts.bench.ledger --quick    # 5 pairs

Two ``hango serve`` processes (one worker each) share one embedded PostgreSQL:
one records the ledger, the other runs with ``HANGO_CALL_LEDGER=0`` (usage rows
only, the behaviour before the ledger). Each gets its own 1,000-message session
of the inspect benchmark's agent and history; the benchmark sends one-turn runs
(``POST /v1/sessions/{id}/messages``, offline provider) to both in interleaved
pairs, the pair's order alternating, and reports the ratio of the medians.
Then it reads the ledger rows' sizes (``pg_column_size``) at 1,000 messages.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
import uuid
from collections.abc import Sequence
from typing import Any

import requests
import sqlalchemy as sa

from hango.agent.catalog import MAX_CONTEXT_WINDOW
from hango.db import make_engine
from hango.store import TenantStore
from scripts.bench.hango_server import database, serving
from scripts.bench.history import add_agent, add_session
from scripts.bench.inspector_report import p50, p95

RATE_LIMIT = 10_000_000
TARGET = 1.05
WARMUP = 3
SIZES_SQL = sa.text(
    "select prefix_parts, parts_count, pg_column_size(c.*) as row_bytes, pg_column_size(tail) as tail_bytes "
    "from model_calls c where session_id = :session order by started_at"
)


def seed(database_url: str, principal: dict) -> tuple[str, str]:
    """Two 1,000-message sessions of the same history, one per server."""
    engine = make_engine(database_url)
    owner = uuid.UUID(principal["user_id"])
    with engine.begin() as conn:
        store = TenantStore(conn, uuid.UUID(principal["tenant_id"]))
        agent = add_agent(store, owner)
        # Every run sends all 1,000 messages: no compaction (it would write and shorten the requests).
        store.agents.update(agent.id, context_window=MAX_CONTEXT_WINDOW)
        made = [add_session(store, agent.id, owner, 1_000, seed=1_000, summary=False) for _ in range(2)]
    engine.dispose()
    return str(made[0].id), str(made[1].id)


def turn(http: requests.Session, url: str, session: str, index: int) -> float:
    """One run of one turn; its latency in ms."""
    started = time.perf_counter()
    response = http.post(
        f"{url}/v1/sessions/{session}/messages", json={"content": f"bench turn {index}"}, timeout=120
    )
    elapsed = (time.perf_counter() - started) * 1000
    response.raise_for_status()
    return elapsed


def storage(database_url: str, session: str) -> dict[str, Any]:
    """The ledger rows' sizes: the first call (the whole request) and the calls after it (the deltas)."""
    engine = make_engine(database_url)
    with engine.connect() as conn:
        rows = conn.execute(SIZES_SQL, {"session": session}).all()
    engine.dispose()
    later = rows[1:]
    return {
        "calls": len(rows),
        "parts_per_call": rows[-1].parts_count,
        "first_call_bytes": rows[0].row_bytes,
        "later_call_bytes_p50": statistics.median(r.row_bytes for r in later),
        "later_call_bytes_max": max(r.row_bytes for r in later),
        "later_tail_bytes_p50": statistics.median(r.tail_bytes for r in later),
    }


def measure(pairs: int) -> dict[str, Any]:
    with database(RATE_LIMIT) as (data_dir, url, principal):
        on_session, off_session = seed(url, principal)
        with (
            serving(data_dir, url, principal, 1) as on,
            serving(data_dir, url, principal, 1, env={"HANGO_CALL_LEDGER": "0"}) as off,
        ):
            http = requests.Session()
            http.headers["Authorization"] = f"Bearer {principal['api_key']}"
            samples: dict[str, list[float]] = {"ledger": [], "no ledger": []}
            for index in range(WARMUP):
                turn(http, on.url, on_session, index), turn(http, off.url, off_session, index)
            for index in range(pairs):
                order = [("ledger", on.url, on_session), ("no ledger", off.url, off_session)]
                for name, base, session in order if index % 2 == 0 else reversed(order):
                    samples[name].append(turn(http, base, session, index))
        stored = storage(url, on_session)
    ratio = p50(samples["ledger"]) / p50(samples["no ledger"])
    return {
        "pairs": pairs,
        "run turn at 1,000 messages": {
            name: {"p50_ms": round(p50(xs), 1), "p95_ms": round(p95(xs), 1)} for name, xs in samples.items()
        },
        "ratio": round(ratio, 3),
        "target": TARGET,
        "ok": ratio <= TARGET,
        "storage": stored,
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="5 pairs instead of 40")
    args = parser.parse_args(argv)
    result = measure(5 if args.quick else 40)
    print(json.dumps(result, indent=2))
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
