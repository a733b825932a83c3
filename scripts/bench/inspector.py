"""Benchmark the context inspector against the floor, as ratios measured in one run.

Run from the repository root after the README's set-up, as a module (its
``scripts.bench`` imports resolve from the root)::

    .venv/bin/python -m scripts.bench.inspector            # the full run: 3-4 minutes on an idle machine
    .venv/bin/python -m scripts.bench.inspector --quick    # a reduced run, about a minute

It seeds, through the store, sessions of 100, 1,000 and 10,000 generated
messages on one agent (``scripts/bench/history.py``), a copy of the 1,000 one, a
session of 50,000 (the 10,000 one's messages five times over, inspected only,
paired with the 10,000 one: the cost per message at both sizes, and the answer's
bytes per message), and a compacted session of 100,000 messages whose summary
covers all but its last 1,000 (the 1,000 session's messages); it starts ``hango serve`` with 2
gunicorn sync workers on an embedded PostgreSQL in a temporary folder, and
drives it over HTTP from this process with a key whose rate limit never
interferes. Pairs of requests are interleaved (their order alternating) so that
machine drift hits both sides equally: the baseline ``GET .../messages`` (every
message: read and serialize the history) against inspect ``GET .../context``;
inspect of the compacted session against inspect at 1,000; a session PUT of 100
excluded parts against inspect at 1,000; try against inspect at 1,000, minus
the offline provider's own time on the same request, measured in this process
after each pair. A ratio is the median of its pairs' ratios, so it keeps the
pairing (a ratio of two medians does not, when the machine changes speed within a phase).
Then windows of 8 clients inspecting at 1,000 alternate with windows of 8
clients reading its baseline (throughput), a worker's RSS is read before and
after 1,000 inspects, and runs on the compacted and the 1,000 session are
paired last (each adds two messages). The load averages are recorded as the
phases end. It prints one table, writes the raw figures as JSON under
``bench-results/`` and exits 1 when a request failed or (unless
``--no-timing-asserts``) a target is missed.
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
from scripts.bench.history import Session, add_agent, add_compacted_session, add_repeated_session, add_session
from scripts.bench.inspector_report import (
    LARGE,
    LARGE_PARTNER,
    PROVIDER,
    SIZES,
    Load,
    conclude,
    describe,
    machine,
    render,
    targets,
)

RATE_LIMIT = 10_000_000
PUT_PARTS = 100
TRY_MESSAGE = "bench: what changed since the last answer?"
RUN_MESSAGE = "bench: and now?"
CLIENTS = 8
CONCURRENT = {"inspect": "inspect 1000, 8 clients at once", "baseline": "baseline 1000, 8 clients at once"}
COMPACTED = "inspect compacted"
WIDE, WIDE_WINDOW = "1000 wide", 1_000_000  # the compacted session's partner, and their agent's window
RUN_COMPACTED = "run compacted"


@dataclass(frozen=True)
class Plan:
    """How many requests each phase sends."""

    rounds: dict[int, int]  # interleaved baseline/inspect pairs per session size
    warmup: int
    pairs: int  # interleaved PUT/inspect, try/inspect and compacted/1,000 inspect pairs
    run_pairs: int  # interleaved runs on the compacted and the 1,000 session
    throughput_windows: int  # interleaved windows of 8 clients inspecting / reading the baseline
    window_seconds: float
    rss_inspects: int
    compacted: int  # messages of the compacted session (1,000 of them after its summary)
    large_pairs: int  # interleaved inspects of the 50,000 and the 10,000 session


FULL = Plan({100: 60, 1_000: 60, 10_000: 20}, 3, 40, 20, 6, 5.0, 1_000, 100_000, 6)
QUICK = Plan({100: 6, 1_000: 6, 10_000: 2}, 0, 5, 3, 2, 1.0, 30, 12_000, 1)


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
        """Send one request; record its latency under ``name``, or an error. Returns the response.

        A message answers 202 with its queued run: the latency is until that run ends, as a user waits.
        """
        started = time.perf_counter()
        http = http or self.http
        try:
            response = http.request(method, self.url + path, timeout=120, **kw)
            if response.status_code == 202:
                response = self.ended(http, response.headers["Location"])
        except requests.RequestException as exc:
            return self.fail(name, f"{method} {path}: {type(exc).__name__}")
        elapsed = (time.perf_counter() - started) * 1000
        if not response.ok:
            return self.fail(name, f"{method} {path}: {response.status_code} {response.text[:300]}")
        if response.json().get("state", "succeeded") != "succeeded":
            return self.fail(name, f"{method} {path}: the run ended {response.json()['status']}")
        self.samples.setdefault(name, []).append(elapsed)
        return response

    def ended(self, http: requests.Session, run: str) -> requests.Response:
        """The run at ``run`` (its Location) once it has ended: the client's poll loop."""
        deadline = time.monotonic() + 120
        while True:
            response = http.get(self.url + run, timeout=120)
            if not response.ok or response.json()["state"] not in ("queued", "running"):
                return response
            if time.monotonic() > deadline:
                raise requests.Timeout(f"run {run} still {response.json()['state']}")
            time.sleep(0.01)

    def fail(self, name: str, what: str) -> None:
        self.errors[name] = self.errors.get(name, 0) + 1
        self.failures.append(what)


# --- seeding --------------------------------------------------------------------------------------


def seed(database_url: str, principal: dict, sizes: Sequence[int], compacted: int) -> dict[str, Session]:
    """The agent and the sessions: one per size (the 100 one with a summary), the 10,000 one's messages five
    times over (the 50,000 session), a 1,000 copy for PUTs; and
    the compacted pair, on a second agent whose window no run here fills (so that the runs never
    compact): a copy of the 1,000 session, and a compacted session of ``compacted`` messages whose
    last 1,000 (after its summary) are the same."""
    engine = make_engine(database_url)
    owner = uuid.UUID(principal["user_id"])
    with engine.begin() as conn:
        store = TenantStore(conn, uuid.UUID(principal["tenant_id"]))
        agent = add_agent(store, owner)
        sessions = {str(n): add_session(store, agent.id, owner, n, seed=n, summary=n == 100) for n in sizes}
        copies = LARGE // sessions["10000"].messages
        sessions[str(LARGE)] = add_repeated_session(store, agent.id, owner, copies, filler=sessions["10000"])
        sessions["put"] = add_session(store, agent.id, owner, 1_000, seed=1_000, summary=False)
        wide = add_agent(store, owner, context_window=WIDE_WINDOW, name="bench wide")
        sessions[WIDE] = add_session(store, wide.id, owner, 1_000, seed=1_000, summary=False)
        sessions["compacted"] = add_compacted_session(
            store, wide.id, owner, compacted, filler=sessions["10000"], tail=sessions[WIDE]
        )
    engine.dispose()
    return sessions


# --- requests -------------------------------------------------------------------------------------


def messages_path(session: Session) -> str:
    return f"/v1/sessions/{session.id}/messages?limit=10000"


def run_path(session: Session) -> str:
    return f"/v1/sessions/{session.id}/messages"


def context_path(session: Session) -> str:
    return f"/v1/sessions/{session.id}/context"


def put_body(session: Session) -> dict[str, Any]:
    """100 message parts spread over the session (never its opening turn), excluded."""
    step = (session.messages - 20) / PUT_PARTS
    seqs = sorted({10 + int(i * step) for i in range(PUT_PARTS)})
    return {"overrides": [{"part": f"message:{seq}", "action": "exclude"} for seq in seqs]}


def pair(rec: Recorder, index: int, first: tuple, second: tuple) -> bool:
    """Two requests, their order alternating with ``index``; each tuple is (name, method, path, kw).

    The two names' samples stay paired, the n-th of one with the n-th of the other (the report's
    ratios are taken pair by pair): when a request fails, the other's sample of the pair is dropped
    too. Whether both were answered.
    """
    before = {name: len(rec.samples.get(name, [])) for name, *_ in (first, second)}
    for name, method, path, kw in (first, second) if index % 2 == 0 else (second, first):
        rec.timed(name, method, path, **kw)
    if all(len(rec.samples.get(name, [])) > count for name, count in before.items()):
        return True
    for name, count in before.items():
        del rec.samples.setdefault(name, [])[count:]
    return False


def inspect_of(session: Session, name: str | None = None) -> tuple:
    return (name or f"inspect {session.messages}", "GET", context_path(session), {})


def baseline_of(session: Session) -> tuple:
    return (f"baseline {session.messages}", "GET", messages_path(session), {})


# --- phases ---------------------------------------------------------------------------------------


def check(rec: Recorder, sessions: dict[str, Session], sizes: dict[str, int]) -> list[str]:
    """Correctness of each kind of response (outside the timings): counts and shapes. ``sizes`` gets the
    bytes of each inspect answer by session size."""
    problems = []
    for key in map(str, SIZES):
        session = sessions[key]
        items = rec.http.get(rec.url + messages_path(session), timeout=120).json()["items"]
        inspected = rec.http.get(rec.url + context_path(session), timeout=120)
        sizes[key], parts = len(inspected.content), inspected.json()["messages"]
        if len(items) != session.messages or len(parts) != session.visible:
            problems.append(f"{key}: {len(items)} messages, {len(parts)} parts; want {session.visible}")
    large = rec.http.get(rec.url + context_path(sessions[str(LARGE)]), timeout=300)
    sizes[str(LARGE)] = len(large.content)
    if len(large.json()["messages"]) != LARGE:
        problems.append(f"{LARGE}: {len(large.json()['messages'])} parts; want {LARGE}")
    for key in (WIDE, "compacted"):  # the run pairs compare runs that call the model once, never compacting
        inspected = rec.http.get(rec.url + context_path(sessions[key]), timeout=120).json()
        if len(inspected["messages"]) != sessions[key].visible or inspected["would_compact"]:
            problems.append(f"{key}: {len(inspected['messages'])} parts, would_compact; want neither")
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


def large_phase(rec: Recorder, sessions: dict[str, Session], pairs: int) -> None:
    """Inspects of the 50,000 session paired with inspects of the 10,000 one whose messages it repeats."""
    for index in range(pairs):
        pair(rec, index, inspect_of(sessions[str(LARGE)]), inspect_of(sessions["10000"], LARGE_PARTNER))


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
    """Tries (a new user turn) paired with inspects of the same session; after each pair, the offline
    provider's own time on the try's request, measured in this process, so drift hits all three alike."""
    session = sessions["1000"]
    request = try_request(rec, session)
    tried = ("try 1000", "POST", context_path(session) + "/try", {"json": {"message": TRY_MESSAGE}})
    for index in range(pairs):
        if pair(rec, index, tried, inspect_of(session, "inspect 1000 (try pairs)")):
            rec.samples.setdefault(PROVIDER, []).extend(provider_ms(request, 1))


def compacted_phase(rec: Recorder, sessions: dict[str, Session], pairs: int) -> None:
    """Inspects of the compacted session paired with inspects of the 1,000 messages it ends with."""
    compacted = inspect_of(sessions["compacted"], COMPACTED)
    for index in range(pairs):
        pair(rec, index, compacted, inspect_of(sessions[WIDE], "inspect 1000 (compacted pairs)"))


def run_phase(rec: Recorder, sessions: dict[str, Session], pairs: int) -> None:
    """Runs whose one model call answers at once, on the compacted and on the 1,000 session (last: they
    add two messages to each per pair)."""
    body = {"json": {"content": RUN_MESSAGE}}
    compacted = (RUN_COMPACTED, "POST", run_path(sessions["compacted"]), body)
    for index in range(pairs):
        pair(rec, index, compacted, ("run 1000", "POST", run_path(sessions[WIDE]), body))


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


def burst(rec: Recorder, name: str, path: str, seconds: float) -> float:
    """``CLIENTS`` threads sending GET ``path`` until ``seconds`` have passed; completed requests per second."""
    deadline = time.monotonic() + seconds
    before = len(rec.samples.get(name, []))

    def client() -> None:
        http = rec.session()
        while time.monotonic() < deadline:
            rec.timed(name, "GET", path, http=http)

    threads = [threading.Thread(target=client, daemon=True) for _ in range(CLIENTS)]
    started = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return (len(rec.samples.get(name, [])) - before) / (time.monotonic() - started)


def throughput_phase(rec: Recorder, session: Session, windows: int, seconds: float) -> dict[str, Any]:
    """Windows of ``CLIENTS`` clients inspecting ``session``, interleaved with windows of them reading its
    baseline (the order alternating); each pair of windows gives one throughput ratio."""
    paths = {"inspect": context_path(session), "baseline": messages_path(session)}
    rates: dict[str, list[float]] = {"inspect": [], "baseline": []}
    for index in range(windows):
        for kind in ("inspect", "baseline") if index % 2 == 0 else ("baseline", "inspect"):
            rates[kind].append(burst(rec, CONCURRENT[kind], paths[kind], seconds))
    ratios = [i / b for i, b in zip(rates["inspect"], rates["baseline"], strict=True) if b]
    return {
        "clients": CLIENTS,
        "window_seconds": seconds,
        "throughput": rates,
        "ratios": ratios,
        "completed": sum(len(rec.samples.get(name, [])) for name in CONCURRENT.values()),
    }


def run(hango: Hango, sessions: dict[str, Session], plan: Plan) -> dict[str, Any]:
    rec = Recorder(hango.url, hango.principal["api_key"])
    load = Load()
    sizes: dict[str, int] = {}
    problems = check(rec, sessions, sizes)
    warm(rec, sessions, plan.warmup)
    rss = rss_phase(rec, hango, sessions["1000"], plan.rss_inspects)
    load.mark("rss")
    ratio_phase(rec, sessions, plan.rounds)
    load.mark("ratios")
    large_phase(rec, sessions, plan.large_pairs)
    load.mark("50,000")
    compacted_phase(rec, sessions, plan.pairs)
    put_phase(rec, sessions, plan.pairs)
    overridden_phase(rec, sessions, plan.pairs)
    try_phase(rec, sessions, plan.pairs)
    load.mark("compacted, put, try")
    concurrency = throughput_phase(rec, sessions["1000"], plan.throughput_windows, plan.window_seconds)
    load.mark("throughput")
    run_phase(rec, sessions, plan.run_pairs)
    load.mark("runs")
    rec.samples.pop("warmup", None)
    return {
        "samples_ms": rec.samples,
        "errors": rec.errors,
        "failures": rec.failures[:50],
        "problems": problems,
        "response_bytes": sizes,
        "rss": rss,
        "concurrency": concurrency,
        "load": load.marks,
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a reduced run, about a minute")
    parser.add_argument(
        "--no-timing-asserts", action="store_true", help="fail only on errors, never on timings"
    )
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "bench-results", help="where the JSON goes")
    parser.add_argument("--workers", type=int, default=2, help="gunicorn sync workers")
    parser.add_argument(
        "--write-doc",
        action="store_true",
        help="write the table into docs/performance.md (a full run only), with the commit, date and load",
    )
    args = parser.parse_args(argv)
    if args.write_doc and args.quick:
        parser.error("--write-doc takes a full run: the quick one's few samples are no figures to keep")
    plan = QUICK if args.quick else FULL
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # unwind, so that everything started is stopped
    try:
        with database(RATE_LIMIT) as (data_dir, url, principal):
            sessions = seed(url, principal, SIZES, plan.compacted)
            with serving(data_dir, url, principal, args.workers) as hango:
                results = run(hango, sessions, plan)
    except KeyboardInterrupt:
        print("interrupted; the server and the database it started are stopped", file=sys.stderr)
        return 130
    checks = targets(results)
    results |= {"machine": machine(), "plan": asdict(plan), "sessions": describe(sessions)}
    return conclude("inspect", results, checks, render(results, checks), args)


if __name__ == "__main__":
    raise SystemExit(main())
