"""Benchmark context suggestions on coding sessions: what they save, what they cost, and that they stay valid.

Run from the repository root after the README's set-up::

    .venv/bin/python -m scripts.bench.suggestions            # the full run: a few minutes on an idle machine
    .venv/bin/python -m scripts.bench.suggestions --quick    # a reduced run, about a minute

It builds the corpus of ``scripts/bench/coding_corpus.py`` (real runs of the
offline model: 25, 100 and 250 turns, i.e. about 100, 400 and 1,000 messages) on
an embedded PostgreSQL, starts ``hango serve`` with 2 gunicorn sync workers and
measures over HTTP, per session: the tokens the suggestions save as a share of
the request, and the time of ``GET .../context/suggestions`` as a ratio to
``GET .../context`` of the same session (interleaved pairs, order alternating,
medians). Then it points the agent at a strict fake Anthropic server (the
reliability suite's rules), applies every suggestion with ordinary override PUTs
(``If-Match``), and sends each session's next request with a try and a run: the
fake must judge 0 of them invalid. One table is printed, the raw figures go to
``bench-results/`` as JSON, and the exit code is 1 on any error or invalid
request, or (unless ``--no-timing-asserts``) a ratio above 1.5.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import statistics
import sys
import uuid
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from hango.agent.deps import Deps
from hango.agent.state import Caller
from hango.config import REPO_ROOT, load_config
from hango.db import make_engine
from hango.store import TenantStore
from scripts.bench.coding_corpus import CorpusSession, add_agent, build_session
from scripts.bench.hango_server import database, serving
from scripts.bench.inspector import Recorder, context_path, pair
from scripts.bench.inspector_report import machine
from tests.fakes.provider_server import MESSAGES, TEST_API_KEY, FakeProviderServer
from tests.reliability.anthropic_rules import Ledger

RATE_LIMIT = 10_000_000
RATIO_LIMIT = 1.5
JUDGED_MODEL = "anthropic/claude-bench"
NEXT_TURN = "bench: and what next?"


@dataclass(frozen=True)
class Plan:
    turns: tuple[int, ...]
    rounds: int
    warmup: int


FULL = Plan((25, 100, 250), 30, 3)
QUICK = Plan((10, 40), 5, 1)


def build(database_url: str, principal: dict, plan: Plan) -> tuple[str, list[CorpusSession]]:
    """The corpus agent and one session per size, each built by real runs of the offline model."""
    engine = make_engine(database_url)
    deps = Deps(engine, load_config(env={}, overrides={"database_url": database_url}))
    tenant, owner = uuid.UUID(principal["tenant_id"]), uuid.UUID(principal["user_id"])
    with engine.begin() as conn:
        agent = add_agent(TenantStore(conn, tenant), owner)
    caller = Caller(owner, uuid.UUID(principal["api_key_id"]))
    sessions = [
        build_session(deps, tenant, agent.id, caller, turns=turns, seed=turns) for turns in plan.turns
    ]
    engine.dispose()
    return str(agent.id), sessions


def suggestions_path(session: CorpusSession) -> str:
    return f"/v1/sessions/{session.id}/context/suggestions?limit=1000"


def timing_phase(rec: Recorder, sessions: list[CorpusSession], plan: Plan) -> None:
    """Interleaved inspect/suggestions pairs per session, the order alternating."""
    for _ in range(plan.warmup):
        for session in sessions:
            rec.timed("warmup", "GET", context_path(session))
            rec.timed("warmup", "GET", suggestions_path(session))
    for index in range(plan.rounds):
        for session in sessions:
            inspect = (f"inspect {session.messages}", "GET", context_path(session), {})
            suggestions = (f"suggestions {session.messages}", "GET", suggestions_path(session), {})
            pair(rec, index, inspect, suggestions)
    rec.samples.pop("warmup", None)


def savings(rec: Recorder, session: CorpusSession) -> dict[str, Any]:
    """What the session's suggestions say they save, by target and kind, as shares of the request."""
    body = rec.http.get(rec.url + suggestions_path(session), timeout=120).json()
    found, total = body["suggestions"], body["total_after"]
    by_target = Counter()
    for item in found:
        by_target[item["target"]] += item["tokens_saved"]
    return {
        "messages": session.messages,
        "total_after": total,
        "suggestions": len(found),
        "kinds": dict(Counter(item["kind"] for item in found)),
        "saved_session": by_target["session"],
        "saved_agent": by_target["agent"],
        "share_session": by_target["session"] / total,
        "share_total": (by_target["session"] + by_target["agent"]) / total,
    }


def apply_all(rec: Recorder, agent_id: str, session: CorpusSession) -> dict[str, Any]:
    """Every suggestion of the session applied as override PUTs with ``If-Match``; the request's new size."""
    before = rec.http.get(rec.url + context_path(session), timeout=120).json()["total_after"]
    found = rec.http.get(rec.url + suggestions_path(session), timeout=120).json()["suggestions"]
    routes = {"agent": f"/v1/agents/{agent_id}", "session": f"/v1/sessions/{session.id}"}
    for target, owner in routes.items():
        parts = [p for item in found if item["target"] == target for p in item["parts"]]
        if not parts:
            continue
        read = rec.http.get(rec.url + owner + "/context-overrides", timeout=60)
        stored = [o for o in read.json()["overrides"] if o["paired_from"] is None]
        body = {"overrides": stored + [{"part": p, "action": "exclude"} for p in parts]}
        headers = {"If-Match": read.headers["ETag"]}
        rec.timed(f"apply {target}", "PUT", owner + "/context-overrides", json=body, headers=headers)
    after = rec.http.get(rec.url + context_path(session), timeout=120).json()["total_after"]
    return {"before": before, "after": after, "predicted": sum(item["tokens_saved"] for item in found)}


def validity_phase(
    rec: Recorder, agent_id: str, sessions: list[CorpusSession], fake: FakeProviderServer
) -> dict:
    """The agent on the strict fake; every suggestion applied; each session's next request sent twice."""
    rec.timed("switch model", "PATCH", f"/v1/agents/{agent_id}", json={"model": JUDGED_MODEL})
    applied = {}
    for session in sessions:
        applied[str(session.messages)] = apply_all(rec, agent_id, session)
        rec.timed("try after applying", "POST", context_path(session) + "/try", json={"message": NEXT_TURN})
        rec.timed(
            "run after applying", "POST", f"/v1/sessions/{session.id}/messages", json={"content": NEXT_TURN}
        )
    ledger: Ledger = fake.validator
    return {
        "applied": applied,
        "requests_judged": ledger.checked,
        "model_calls": len(fake.bodies(MESSAGES)),
        "invalid": [verdict for verdict, _ in ledger.invalid],
    }


def ratios(samples: dict[str, list[float]], sessions: list[CorpusSession]) -> dict[str, dict[str, float]]:
    out = {}
    for session in sessions:
        inspect = statistics.median(samples.get(f"inspect {session.messages}", [0.0]))
        suggest = statistics.median(samples.get(f"suggestions {session.messages}", [0.0]))
        out[str(session.messages)] = {
            "inspect_ms": inspect,
            "suggestions_ms": suggest,
            "ratio": suggest / inspect if inspect else float("inf"),
        }
    return out


def render(results: dict[str, Any]) -> str:
    lines = [
        "| messages | suggestions | by kind | saved, session | saved, with agent | inspect ms | suggestions ms | ratio |",
        "|---:|---:|---|---:|---:|---:|---:|---:|",
    ]
    for key, saved in results["savings"].items():
        timing = results["timing"][key]
        kinds = ", ".join(f"{k} {n}" for k, n in sorted(saved["kinds"].items()))
        lines.append(
            f"| {key} | {saved['suggestions']} | {kinds} | {saved['share_session']:.1%} | "
            f"{saved['share_total']:.1%} | {timing['inspect_ms']:.1f} | {timing['suggestions_ms']:.1f} | "
            f"{timing['ratio']:.2f} |"
        )
    valid = results["validity"]
    lines.append(
        f"\nafter applying every suggestion: {valid['model_calls']} model calls, "
        f"{valid['requests_judged']} requests judged, **{len(valid['invalid'])} invalid**"
    )
    return "\n".join(lines)


def failures(results: dict[str, Any], timing_asserts: bool) -> list[str]:
    found = [f"{n} errors in {name}" for name, n in results["errors"].items()]
    found += [f"invalid request: {verdict}" for verdict in results["validity"]["invalid"]]
    if timing_asserts:
        found += [
            f"suggestions at {key} cost {t['ratio']:.2f}x an inspect (limit {RATIO_LIMIT})"
            for key, t in results["timing"].items()
            if t["ratio"] > RATIO_LIMIT
        ]
    return found


def measure(plan: Plan) -> dict[str, Any]:
    with FakeProviderServer(validator=Ledger()) as fake, database(RATE_LIMIT) as (data_dir, url, principal):
        os.environ |= {"HANGO_ANTHROPIC_BASE_URL": fake.anthropic_base_url, "ANTHROPIC_API_KEY": TEST_API_KEY}
        agent_id, sessions = build(url, principal, plan)
        with serving(data_dir, url, principal, workers=2) as hango:
            rec = Recorder(hango.url, hango.principal["api_key"])
            timing_phase(rec, sessions, plan)
            saved = {str(s.messages): savings(rec, s) for s in sessions}
            validity = validity_phase(rec, agent_id, sessions, fake)
    return {
        "plan": asdict(plan),
        "sessions": [asdict(s) for s in sessions],
        "savings": saved,
        "timing": ratios(rec.samples, sessions),
        "validity": validity,
        "errors": rec.errors,
        "failures": rec.failures[:50],
        "samples_ms": rec.samples,
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a reduced run, about a minute")
    parser.add_argument(
        "--no-timing-asserts", action="store_true", help="fail only on errors and invalid requests"
    )
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "bench-results", help="where the JSON goes")
    args = parser.parse_args(argv)
    results = measure(QUICK if args.quick else FULL) | {"machine": machine()}
    print(render(results))
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / f"suggestions-{dt.datetime.now():%Y%m%d-%H%M%S}.json"
    path.write_text(json.dumps(results, indent=1, default=str))
    print(f"\nraw figures: {path}")
    problems = failures(results, not args.no_timing_asserts)
    for problem in problems:
        print(f"FAILED: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
