"""Benchmark the context inspector against the floor, as ratios measured in one run.

Run from the repository root after the README's set-up, as a module (its
``scripts.bench`` imports resolve from the root)::

    .venv/bin/python -m scripts.bench.inspector            # the full run: 2-3 minutes on an idle machine
    .venv/bin/python -m scripts.bench.inspector --quick    # a reduced run, under a minute

It seeds, through the store, sessions of 100, 1,000 and 10,000 generated
messages on one agent (``scripts/bench/history.py``), starts ``hango serve``
with 2 gunicorn sync workers on an embedded PostgreSQL in a temporary folder,
and drives it over HTTP from this process with a key whose rate limit never
interferes. Pairs of requests are interleaved (their order alternating) so that
machine drift hits both sides equally: the baseline ``GET .../messages`` (every
message: read and serialize the history) against inspect ``GET .../context``;
a session PUT of 100 excluded parts against inspect at 1,000; try against
inspect at 1,000, minus the offline provider's own time on the same request,
measured in this process. Then 8 clients inspect at once for 20 s, and a
worker's RSS is read before and after 1,000 inspects. It prints one table,
writes the raw figures as JSON under ``bench-results/`` and exits 1 when a
request failed or (unless ``--no-timing-asserts``) a target is missed.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
import time
import uuid
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import requests

from hango.config import REPO_ROOT
from hango.db import make_engine
from hango.messages import Block, Message, Request, TextBlock, ToolDef, message_from_dict
from hango.providers.offline import OfflineProvider
from hango.store import TenantStore
from scripts.bench.hango_server import Hango, database, serving
from scripts.bench.history import Session, add_agent, add_session
from scripts.bench.inspector_report import SIZES, describe, machine, render, targets, write

RATE_LIMIT = 10_000_000
PUT_PARTS = 100
TRY_MESSAGE = "bench: what changed since the last answer?"
CLIENTS = 8
CONCURRENT = "inspect 1000, 8 clients at once"


@dataclass(frozen=True)
class Plan:
    """How many requests each phase sends."""

    rounds: dict[int, int]  # interleaved baseline/inspect pairs per session size
    warmup: int
    pairs: int  # interleaved PUT/inspect and try/inspect pairs
    provider_reps: int
    concurrency_seconds: float
    rss_inspects: int


FULL = Plan({100: 60, 1_000: 60, 10_000: 20}, 3, 40, 30, 20.0, 1_000)
QUICK = Plan({100: 6, 1_000: 6, 10_000: 2}, 0, 5, 5, 3.0, 30)


@dataclass
class Recorder:
    """Latencies (ms) of successful requests and error counts, by measure name."""

    url: str
    key: str
    samples: dict[str, list[float]] = field(default_factory=dict)
    errors: dict[str, int] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.http = self.session()

    def session(self) -> requests.Session:
        http = requests.Session()
        http.headers["Authorization"] = f"Bearer {self.key}"
        return http

    def timed(self, name: str, method: str, path: str, http: requests.Session | None = None, **kw) -> Any:
        """Send one request; record its latency under ``name``, or an error. Returns the response."""
        started = time.perf_counter()
        try:
            response = (http or self.http).request(method, self.url + path, timeout=120, **kw)
        except requests.RequestException as exc:
            return self.fail(name, f"{method} {path}: {type(exc).__name__}")
        elapsed = (time.perf_counter() - started) * 1000
        if not response.ok:
            return self.fail(name, f"{method} {path}: {response.status_code} {response.text[:300]}")
        self.samples.setdefault(name, []).append(elapsed)
        return response

    def fail(self, name: str, what: str) -> None:
        self.errors[name] = self.errors.get(name, 0) + 1
        self.failures.append(what)


# --- seeding --------------------------------------------------------------------------------------


def seed(database_url: str, principal: dict, sizes: Sequence[int]) -> dict[str, Session]:
    """The agent and the sessions: one per size (the 100 one with a summary), and a 1,000 copy for PUTs."""
    engine = make_engine(database_url)
    owner = uuid.UUID(principal["user_id"])
    with engine.begin() as conn:
        store = TenantStore(conn, uuid.UUID(principal["tenant_id"]))
        agent = add_agent(store, owner)
        sessions = {str(n): add_session(store, agent.id, owner, n, seed=n, summary=n == 100) for n in sizes}
        sessions["put"] = add_session(store, agent.id, owner, 1_000, seed=1_000, summary=False)
    engine.dispose()
    return sessions


# --- requests -------------------------------------------------------------------------------------


def messages_path(session: Session) -> str:
    return f"/v1/sessions/{session.id}/messages?limit=10000"


def context_path(session: Session) -> str:
    return f"/v1/sessions/{session.id}/context"


def put_body(session: Session) -> dict[str, Any]:
    """100 message parts spread over the session (never its opening turn), excluded."""
    step = (session.messages - 20) / PUT_PARTS
    seqs = sorted({10 + int(i * step) for i in range(PUT_PARTS)})
    return {"overrides": [{"part": f"message:{seq}", "action": "exclude"} for seq in seqs]}


def pair(rec: Recorder, index: int, first: tuple, second: tuple) -> None:
    """Two requests, their order alternating with ``index``; each tuple is (name, method, path, kw)."""
    for name, method, path, kw in (first, second) if index % 2 == 0 else (second, first):
        rec.timed(name, method, path, **kw)


def inspect_of(session: Session, name: str | None = None) -> tuple:
    return (name or f"inspect {session.messages}", "GET", context_path(session), {})


def baseline_of(session: Session) -> tuple:
    return (f"baseline {session.messages}", "GET", messages_path(session), {})


# --- phases ---------------------------------------------------------------------------------------


def check(rec: Recorder, sessions: dict[str, Session]) -> list[str]:
    """Correctness of each kind of response (outside the timings): counts and shapes."""
    problems = []
    for key in map(str, SIZES):
        session = sessions[key]
        items = rec.http.get(rec.url + messages_path(session), timeout=120).json()["items"]
        parts = rec.http.get(rec.url + context_path(session), timeout=120).json()["messages"]
        if len(items) != session.messages or len(parts) != session.visible:
            problems.append(f"{key}: {len(items)} messages, {len(parts)} parts; want {session.visible}")
    put = rec.http.put(rec.url + context_path(sessions["put"]) + "-overrides", json=put_body(sessions["put"]))
    if put.status_code != 200 or not put.json()["added"]:
        problems.append(f"PUT: {put.status_code}, want 200 with companions added")
    tried = rec.http.post(rec.url + context_path(sessions["1000"]) + "/try", json={"message": TRY_MESSAGE})
    if tried.status_code != 200 or tried.json()["message"]["role"] != "assistant":
        problems.append(f"try: {tried.status_code}")
    return problems


def warm(rec: Recorder, sessions: dict[str, Session], rounds: int) -> None:
    """Load code paths and caches in both workers before anything is measured."""
    for _ in range(rounds * 2):
        for key in map(str, SIZES):
            rec.timed("warmup", "GET", messages_path(sessions[key]))
            rec.timed("warmup", "GET", context_path(sessions[key]))


def worker_rss(hango: Hango) -> dict[int, int]:
    return {worker.pid: worker.memory_info().rss for worker in hango.workers()}


def rss_phase(rec: Recorder, hango: Hango, session: Session, count: int) -> dict[str, Any]:
    """Every worker's RSS before and after ``count`` inspects (a changed pid is a restarted worker)."""
    before = worker_rss(hango)
    for _ in range(count):
        rec.timed("inspect 1000 (RSS phase)", "GET", context_path(session))
    after = worker_rss(hango)
    if set(before) != set(after):
        rec.fail("rss", f"workers changed during the RSS phase: {sorted(before)} -> {sorted(after)}")
    growth = sum(after.get(pid, rss) - rss for pid, rss in before.items())
    return {"inspects": count, "before": before, "after": after, "growth_mb": growth / 2**20}


def ratio_phase(rec: Recorder, sessions: dict[str, Session], rounds: dict[int, int]) -> None:
    """Baseline and inspect pairs, the sizes taking turns so that drift spreads over all of them."""
    for index in range(max(rounds.values())):
        for size in (s for s in SIZES if index < rounds[s]):
            session = sessions[str(size)]
            pair(rec, index, baseline_of(session), inspect_of(session))


def put_phase(rec: Recorder, sessions: dict[str, Session], pairs: int) -> None:
    """PUTs of 100 excluded parts on a copy of the 1,000 session, paired with inspects of the original."""
    target = sessions["put"]
    put = ("put 1000", "PUT", context_path(target) + "-overrides", {"json": put_body(target)})
    for index in range(pairs):
        pair(rec, index, put, inspect_of(sessions["1000"], "inspect 1000 (put pairs)"))


def overridden_phase(rec: Recorder, sessions: dict[str, Session], pairs: int) -> None:
    """Inspects of the PUT session, which now excludes 100 parts, paired with inspects of the original."""
    overridden = inspect_of(sessions["put"], "inspect 1000 with 100 parts excluded")
    for index in range(pairs):
        pair(rec, index, overridden, inspect_of(sessions["1000"], "inspect 1000 (excluded pairs)"))


def try_phase(rec: Recorder, sessions: dict[str, Session], pairs: int) -> None:
    session = sessions["1000"]
    tried = ("try 1000", "POST", context_path(session) + "/try", {"json": {"message": TRY_MESSAGE}})
    for index in range(pairs):
        pair(rec, index, tried, inspect_of(session, "inspect 1000 (try pairs)"))


def try_request(rec: Recorder, session: Session) -> Request:
    """The request a try with ``TRY_MESSAGE`` sends: the inspected request plus the new user turn."""
    body = rec.http.get(rec.url + context_path(session) + "?format=request", timeout=120).json()
    messages = [message_from_dict(m) for m in body["messages"]]
    return Request(
        model=body["model"],
        system=tuple(Block(b["text"], b["cache_control"]) for b in body["system"]),
        tools=tuple(ToolDef(**t) for t in body["tools"]),
        messages=(*messages, Message("user", (TextBlock(TRY_MESSAGE),), cache_control=True)),
        max_tokens=body["max_tokens"],
    )


def provider_ms(request: Request, reps: int) -> list[float]:
    """The offline provider's own time on ``request``, measured in this process."""
    provider, times = OfflineProvider(), []
    for _ in range(reps):
        started = time.perf_counter()
        provider.complete(request)
        times.append((time.perf_counter() - started) * 1000)
    return times


def concurrency_phase(rec: Recorder, session: Session, seconds: float) -> dict[str, Any]:
    """``CLIENTS`` threads inspecting ``session`` until ``seconds`` have passed."""
    deadline = time.monotonic() + seconds

    def client() -> None:
        http = rec.session()
        while time.monotonic() < deadline:
            rec.timed(CONCURRENT, "GET", context_path(session), http=http)

    threads = [threading.Thread(target=client, daemon=True) for _ in range(CLIENTS)]
    started = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.monotonic() - started
    done = len(rec.samples.get(CONCURRENT, []))
    return {"clients": CLIENTS, "seconds": elapsed, "completed": done, "throughput": done / elapsed}


def run(hango: Hango, sessions: dict[str, Session], plan: Plan) -> dict[str, Any]:
    rec = Recorder(hango.url, hango.principal["api_key"])
    problems = check(rec, sessions)
    warm(rec, sessions, plan.warmup)
    rss = rss_phase(rec, hango, sessions["1000"], plan.rss_inspects)
    ratio_phase(rec, sessions, plan.rounds)
    put_phase(rec, sessions, plan.pairs)
    overridden_phase(rec, sessions, plan.pairs)
    try_phase(rec, sessions, plan.pairs)
    provider = provider_ms(try_request(rec, sessions["1000"]), plan.provider_reps)
    concurrency = concurrency_phase(rec, sessions["1000"], plan.concurrency_seconds)
    rec.samples.pop("warmup", None)
    return {
        "samples_ms": rec.samples | {"offline provider 1000 (in-process)": provider},
        "errors": rec.errors,
        "failures": rec.failures[:50],
        "problems": problems,
        "rss": rss,
        "concurrency": concurrency,
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a reduced run, under a minute")
    parser.add_argument(
        "--no-timing-asserts", action="store_true", help="fail only on errors, never on timings"
    )
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "bench-results", help="where the JSON goes")
    parser.add_argument("--workers", type=int, default=2, help="gunicorn sync workers")
    args = parser.parse_args(argv)
    plan = QUICK if args.quick else FULL
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # unwind, so that everything started is stopped
    try:
        with database(RATE_LIMIT) as (data_dir, url, principal):
            sessions = seed(url, principal, SIZES)
            with serving(data_dir, url, principal, args.workers) as hango:
                results = run(hango, sessions, plan)
    except KeyboardInterrupt:
        print("interrupted; the server and the database it started are stopped", file=sys.stderr)
        return 130
    checks = targets(results)
    results |= {"machine": machine(), "plan": asdict(plan), "sessions": describe(sessions)}
    results["targets"] = [asdict(t) | {"ok": t.ok} for t in checks]
    print(render(results, checks))
    print(f"\nraw figures: {write(args.out, results)}")
    failed = [t for t in checks if not t.ok and (t.name == "errors" or not args.no_timing_asserts)]
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
