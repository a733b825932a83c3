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

``--reads`` measures the ledger's reads instead: one ``hango serve`` worker, two
200-message sessions, each with one real run call and then 9 or 2,999 ledger
entries more (written as the gateway writes them: a whole row every 32, each call
in its own transaction, its parts' costs left waiting, then folded into their
totals as the workers' fold leaves them). It
times ``GET …/calls/{id}`` of the newest call and ``GET …/context/diff`` of the
two newest, interleaved, and the worker's RSS over 200 such reads on the
3,000-call session. Target: p50 at 3,000 calls ≤ 1.2× at 10, RSS growth < 20 MB.
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

from hango.agent.options import MAX_CONTEXT_WINDOW
from hango.db import make_engine
from hango.store import TenantStore
from hango.store.part_costs import fold_waiting
from scripts.bench.hango_server import database, run_ended, serving
from scripts.bench.history import add_agent, add_session, record_calls
from scripts.bench.inspector_report import p50, p95

RATE_LIMIT = 10_000_000
TARGET = 1.05
READS_TARGET = 1.2
RSS_TARGET_MB = 20
LEDGER_SIZES = (10, 3_000)
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
    """One run of one turn; its latency in ms, until its queued run ends (as a user waits)."""
    started = time.perf_counter()
    response = http.post(
        f"{url}/v1/sessions/{session}/messages", json={"content": f"bench turn {index}"}, timeout=120
    )
    response.raise_for_status()
    run = run_ended(http, url, response.headers["Location"])
    elapsed = (time.perf_counter() - started) * 1000
    if run["state"] != "succeeded":
        raise RuntimeError(f"run {run['id']} of session {session}: {run['status']} {run['error']}")
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


def seed_ledgers(url: str, database_url: str, principal: dict, http: requests.Session) -> dict[int, tuple]:
    """Per size of ``LEDGER_SIZES``, a 200-message session with one real run call and the rest recorded."""
    engine = make_engine(database_url)
    owner, tenant = uuid.UUID(principal["user_id"]), uuid.UUID(principal["tenant_id"])
    with engine.begin() as conn:
        store = TenantStore(conn, tenant)
        agent = add_agent(store, owner)
        store.agents.update(agent.id, context_window=MAX_CONTEXT_WINDOW)
        sessions = {
            n: add_session(store, agent.id, owner, 200, seed=n, summary=False).id for n in LEDGER_SIZES
        }
    made = {}
    for size, session in sessions.items():
        turn(http, url, str(session), 0)
        calls = []
        for _ in range(size - 1):  # each call in its own transaction, as the gateway records it
            with engine.begin() as conn:
                calls += record_calls(TenantStore(conn, tenant), session, 1)
        made[size] = (str(session), calls)
    with engine.begin() as conn:  # their part costs folded into the totals, as the workers' fold leaves them
        while fold_waiting(conn):
            pass
    engine.dispose()
    return made


def read(http: requests.Session, url: str) -> float:
    """One GET; its latency in ms."""
    started = time.perf_counter()
    response = http.get(url, timeout=120)
    elapsed = (time.perf_counter() - started) * 1000
    response.raise_for_status()
    return elapsed


def measure_reads(rounds: int) -> dict[str, Any]:
    with database(RATE_LIMIT) as (data_dir, url, principal), serving(data_dir, url, principal, 1) as server:
        http = requests.Session()
        http.headers["Authorization"] = f"Bearer {principal['api_key']}"
        ledgers = seed_ledgers(server.url, url, principal, http)
        urls = {
            (size, name): f"{server.url}/v1/sessions/{session}/{path}"
            for size, (session, calls) in ledgers.items()
            for name, path in (
                ("GET calls/{id}", f"calls/{calls[-1]}"),
                ("diff", f"context/diff?from={calls[-2]}&to={calls[-1]}"),
            )
        }
        for _ in range(WARMUP):
            for target in urls.values():
                read(http, target)
        samples: dict[tuple, list[float]] = {key: [] for key in urls}
        for index in range(rounds):
            keys = list(urls) if index % 2 == 0 else list(reversed(urls))
            for key in keys:
                samples[key].append(read(http, urls[key]))
        (worker,) = server.workers()
        before = worker.memory_info().rss
        long_reads = [target for (size, _), target in urls.items() if size == LEDGER_SIZES[-1]]
        for index in range(200):
            read(http, long_reads[index % 2])
        growth_mb = (worker.memory_info().rss - before) / 2**20
    table = {
        f"{name} at {size:,} calls": {"p50_ms": round(p50(xs), 1), "p95_ms": round(p95(xs), 1)}
        for (size, name), xs in samples.items()
    }
    short, long = LEDGER_SIZES
    ratios = {
        name: round(p50(samples[(long, name)]) / p50(samples[(short, name)]), 3)
        for name in ("GET calls/{id}", "diff")
    }
    return {
        "rounds": rounds,
        "reads": table,
        "ratios": ratios,
        "target": READS_TARGET,
        "rss_growth_mb_over_200_reads": round(growth_mb, 1),
        "rss_target_mb": RSS_TARGET_MB,
        "ok": max(ratios.values()) <= READS_TARGET and growth_mb < RSS_TARGET_MB,
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--quick", action="store_true", help="5 pairs (or 10 read rounds) instead of 40 (or 60)"
    )
    parser.add_argument("--reads", action="store_true", help="the ledger's reads at 10 and 3,000 calls")
    args = parser.parse_args(argv)
    result = measure_reads(10 if args.quick else 60) if args.reads else measure(5 if args.quick else 40)
    print(json.dumps(result, indent=2))
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
