"""The fair queue: a quiet tenant's wait behind another tenant's flood, and each busy tenant's share of the slots.

Run from the repository root::

    .venv/bin/python -m scripts.bench.fairness                      # this tree: about a minute
    .venv/bin/python -m scripts.bench.fairness --tree /tmp/before   # another checkout, for the "before" row
    .venv/bin/python -m scripts.bench.fairness --slow 15            # the flood at issue 38's 15 s model
    .venv/bin/python -m scripts.bench.fairness --turns 10 --hold 1.5  # multi-turn runs: the yield, headroom

It starts ``hango serve`` of the tree on a fresh embedded PostgreSQL in the default shape
(2 gunicorn sync workers, 1 queue worker of ``HANGO_WORKER_CONCURRENCY`` = 4, caps 8 runs
per member and 32 per tenant), its ``anthropic/...`` provider a fake server that answers
each model after that model's hold. Two measurements, from the runs' own server times
(``queued_at``, ``started_at``, ``finished_at``):

- **flood**: a member of tenant A queues 8 runs (its cap) on a slow model to 8 sessions;
  once 4 run, tenant B queues 3 runs on a 0.2 s model. For each of B's runs: its queue
  wait, and its wait counted from the first moment after it was queued that a slot was
  free or freed (the fair queue's target: at most 1 s);
- **share**: another tenant holds the 4 slots on the slow model while N tenants (N = 2, 3,
  4) each queue 8 runs on a 1 s model, one tenant after the other. From the moment the
  slots free until some tenant has no run left waiting, the slots each one held on
  average, against the fair 4 / N (the target: within one slot).

With ``--turns T``, the runs are agents' runs of T model calls of ``--hold`` seconds each (a tool
call between two), and three other measurements, each on a server of its own:

- **turns flood**, without headroom and with ``HANGO_QUEUE_HEADROOM=1``: A's member fills its cap
  with such runs; once 4 run, B queues 3 runs on the 0.2 s model. B's queue waits (the targets:
  at most one model call + 1 s without headroom, since a run gives its slot back at its next turn
  boundary; at most 1 s with headroom);
- **throughput**: A's member alone queues 8 such runs; runs a minute, from the first queued to the
  last finished (compare ``--tree`` of a checkout before the yield: within 5 %).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import requests

from hango.config import REPO_ROOT
from hango.messages import Message, ToolUseBlock
from scripts.bench.hango_server import database, hango_command, hango_env, serving
from tests.fakes.provider_server import TEST_API_KEY, FakeProviderServer

SLOTS = 4  # the default shape: one queue worker of concurrency 4
FLOOD_RUNS = 8  # the per-member cap
QUIET_RUNS = 3
QUICK_HOLD = 0.2
SHARE_HOLD = 1.0
SHARE_RUNS = 8
TURNS_MODEL = "claude-turns"
RUN_WAIT = 300.0
ENDED = {"completed", "max_turns", "quota_exhausted", "failed", "timeout", "cancelled"}


class Member:
    """One tenant's member, talking to the server over HTTP with a key of its own."""

    def __init__(self, url: str, principal: dict) -> None:
        self.url = url
        self.http = requests.Session()
        self.http.headers["Authorization"] = f"Bearer {principal['api_key']}"

    def call(self, method: str, path: str, **kw: Any) -> dict:
        answer = self.http.request(method, self.url + path, timeout=60, **kw)
        assert answer.status_code < 300, answer.text
        return answer.json()

    def sessions(self, model: str, count: int) -> list[str]:
        tools = ["read_file"] if model == TURNS_MODEL else []
        body = {"name": model, "model": f"anthropic/{model}", "system_prompt": "You help.", "tools": tools}
        agent = self.call("POST", "/v1/agents", json=body)["id"]
        return [self.call("POST", "/v1/sessions", json={"agent_id": agent})["id"] for _ in range(count)]

    def queue(self, sessions: list[str]) -> list[str]:
        return [
            self.call("POST", f"/v1/sessions/{s}/messages", json={"content": "go"})["id"] for s in sessions
        ]

    def runs(self, ids: list[str]) -> list[dict]:
        return [self.call("GET", f"/v1/runs/{run}") for run in ids]


@dataclass(frozen=True)
class Span:
    """One run's life by the server's clock, in seconds."""

    tenant: int
    queued: float
    started: float
    finished: float


def spans_of(runs: list[dict], tenant: int) -> list[Span]:
    stamp = lambda text: dt.datetime.fromisoformat(text).timestamp()  # noqa: E731
    return [
        Span(tenant, stamp(r["queued_at"]), stamp(r["started_at"]), stamp(r["finished_at"])) for r in runs
    ]


def ended(members: list[tuple[Member, list[str]]]) -> list[list[dict]]:
    """Every member's runs once all of them ended."""
    deadline = time.monotonic() + RUN_WAIT
    while True:
        shown = [member.runs(ids) for member, ids in members]
        if all(r["status"] in ENDED for runs in shown for r in runs):
            assert all(r["status"] == "completed" for runs in shown for r in runs), shown
            return shown
        if time.monotonic() > deadline:
            raise TimeoutError("runs still in flight")
        time.sleep(0.2)


def first_free(spans: list[Span], at: float) -> float:
    """The first moment from ``at`` on when a slot is free: ``at`` itself, or when a run then running ends."""
    running = [s.finished for s in spans if s.started <= at < s.finished]
    return at if len(running) < SLOTS else min(running)


def fill_slots(member: Member, model: str, runs: int, slots: int = SLOTS) -> list[str]:
    """Queue ``runs`` runs of ``member`` on ``model`` and wait until ``slots`` of them run (every slot open
    to a tenant with runs running)."""
    queued = member.queue(member.sessions(model, runs))
    deadline = time.monotonic() + RUN_WAIT
    while sum(r["status"] == "running" for r in member.runs(queued)) < slots:
        assert time.monotonic() < deadline, "the runs never filled the slots"
        time.sleep(0.1)
    return queued


def flood(a: Member, b: Member) -> dict[str, list[float]]:
    """Tenant A's member fills its cap on the slow model; then tenant B queues 3 quick runs."""
    a_runs = fill_slots(a, "claude-slow", FLOOD_RUNS)
    b_runs = b.queue(b.sessions("claude-quick", QUIET_RUNS))
    shown_a, shown_b = ended([(a, a_runs), (b, b_runs)])
    spans = spans_of(shown_a, 0) + spans_of(shown_b, 1)
    quiet = [s for s in spans if s.tenant == 1]
    return {
        "wait": [s.started - s.queued for s in quiet],
        "after_free": [s.started - first_free(spans, s.queued) for s in quiet],
    }


def share(blocker: Member, members: list[Member]) -> list[float]:
    """Each tenant's slots held on average while every tenant had a run waiting.

    ``blocker`` (a tenant of its own) holds every slot on the slow model while the others
    queue their runs, one tenant after the other; the window opens when its runs ended
    and closes when some tenant has no run left waiting.
    """
    blocking = fill_slots(blocker, "claude-slow", SLOTS)
    queued = [(m, m.queue(m.sessions("claude-share", SHARE_RUNS))) for m in members]
    shown = ended([(blocker, blocking), *queued])
    spans = [s for tenant, runs in enumerate(shown[1:]) for s in spans_of(runs, tenant)]
    start = max([s.queued for s in spans] + [s.finished for s in spans_of(shown[0], -1)])
    end = min(max(s.started for s in spans if s.tenant == t) for t in range(len(members)))
    return [held(spans, t, start, end) / (end - start) for t in range(len(members))]


def held(spans: list[Span], tenant: int, start: float, end: float) -> float:
    """Slot-seconds ``tenant``'s runs held between ``start`` and ``end``."""
    return sum(max(0.0, min(s.finished, end) - max(s.started, start)) for s in spans if s.tenant == tenant)


def turns_flood(a: Member, b: Member, headroom: int) -> list[float]:
    """A's member fills its cap with multi-turn runs; once they hold every slot open to them (4 less the
    headroom), B queues 3 quick runs: B's queue waits."""
    a_runs = fill_slots(a, TURNS_MODEL, FLOOD_RUNS, SLOTS - headroom)
    b_runs = b.queue(b.sessions("claude-quick", QUIET_RUNS))
    _, shown_b = ended([(a, a_runs), (b, b_runs)])
    return [s.started - s.queued for s in spans_of(shown_b, 1)]


def throughput(a: Member) -> float:
    """A's member alone queues its cap of multi-turn runs: runs a minute, first queued to last finished."""
    (shown,) = ended([(a, a.queue(a.sessions(TURNS_MODEL, FLOOD_RUNS)))])
    spans = spans_of(shown, 0)
    return len(spans) * 60 / (max(s.finished for s in spans) - min(s.queued for s in spans))


def answer_turns(turns: int) -> Any:
    """The fake provider's answerer: a multi-turn run's model calls a tool until its ``turns``-th call."""

    def answer(body: dict) -> Any:
        calls = 1 + sum(1 for m in body["messages"] if m["role"] == "assistant")
        if body.get("model") != TURNS_MODEL or calls >= turns:
            return "Done."
        return Message("assistant", (ToolUseBlock(f"toolu_{calls}", "read_file", {"path": "/none.md"}),))

    return answer


def principal(data_dir: Path, tree: Path, tenant: str) -> dict:
    boot = ("admin", "bootstrap", "--tenant", tenant, "--email", f"member@{tenant.lower()}.test")
    argv = (*boot, "--role", "member", "--rate-limit", "1000000", "--json")
    return json.loads(hango_command(hango_env(data_dir, 0), *argv, tree=tree))


def hold_by_model(slow_hold: float) -> Any:
    """The fake provider's validator: a model call waits its model's hold, then is answered."""
    holds = {
        "claude-slow": slow_hold,
        "claude-quick": QUICK_HOLD,
        "claude-share": SHARE_HOLD,
        TURNS_MODEL: slow_hold,
    }

    def hold(body: dict) -> None:
        if "max_tokens" in body:  # a model call, not a token count
            time.sleep(holds.get(body.get("model"), 0.0))

    return hold


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", type=Path, default=REPO_ROOT, help="the source tree to serve")
    parser.add_argument("--slow", type=float, default=3.0, help="seconds tenant A's model takes per call")
    parser.add_argument(
        "--turns", type=int, default=0, help="model calls of each of A's runs (multi-turn mode)"
    )
    parser.add_argument("--hold", type=float, default=1.5, help="seconds each of those calls takes")
    args = parser.parse_args()
    if args.turns:
        multi_turn(args.tree, args.turns, args.hold)
        return
    with database(1_000_000, args.tree) as (data_dir, url, owner), FakeProviderServer() as provider:
        provider.validator = hold_by_model(args.slow)
        members = [principal(data_dir, args.tree, f"Tenant{n}") for n in range(4)]
        env = {
            "HANGO_ANTHROPIC_BASE_URL": provider.anthropic_base_url,
            "ANTHROPIC_API_KEY": TEST_API_KEY,
            "HANGO_QUEUE_WORKERS": "1",
        }
        with serving(data_dir, url, owner, 2, tree=args.tree, env=env) as hango:
            clients = [Member(hango.url, p) for p in members]
            seen = flood(clients[0], clients[1])
            blocker = Member(hango.url, owner)
            shares = {n: share(blocker, clients[:n]) for n in (2, 3, 4)}
    print(f"tree: {args.tree}; slow model {args.slow} s, quick {QUICK_HOLD} s; {SLOTS} slots")
    print("| figure | value | target |")
    print("|---|---|---|")
    waits = ", ".join(f"{w:.2f}" for w in seen["wait"])
    after = ", ".join(f"{w:.2f}" for w in seen["after_free"])
    print(f"| B's queue wait behind A's flood, each run (s) | {waits} | |")
    print(
        f"| B's wait once a slot was free or freed, max (s) | {max(seen['after_free']):.2f} ({after}) | ≤ 1 |"
    )
    for n, slots in shares.items():
        held_text = ", ".join(f"{s:.2f}" for s in slots)
        worst = max(abs(s - SLOTS / n) for s in slots)
        print(
            f"| {n} busy tenants: slots held each (fair {SLOTS / n:.2f}); worst gap | {held_text}; {worst:.2f} | ≤ 1 |"
        )


def multi_turn(tree: Path, turns: int, hold: float) -> None:
    """The turns flood without and with headroom, and one busy tenant's throughput, each on a fresh server."""
    rows = []
    for name, headroom in (
        ("turns flood, no headroom", 0),
        ("turns flood, headroom 1", 1),
        ("throughput", 0),
    ):
        with database(1_000_000, tree) as (data_dir, url, owner), FakeProviderServer() as provider:
            provider.validator = hold_by_model(hold)
            provider.answerer = answer_turns(turns)
            members = [principal(data_dir, tree, f"Tenant{n}") for n in range(2)]
            env = {
                "HANGO_ANTHROPIC_BASE_URL": provider.anthropic_base_url,
                "ANTHROPIC_API_KEY": TEST_API_KEY,
                "HANGO_QUEUE_WORKERS": "1",
                "HANGO_QUEUE_HEADROOM": str(headroom),
            }
            with serving(data_dir, url, owner, 2, tree=tree, env=env) as hango:
                a, b = (Member(hango.url, p) for p in members)
                if name == "throughput":
                    rows.append(
                        (f"{name}: one tenant's {FLOOD_RUNS} runs, runs a minute", f"{throughput(a):.2f}")
                    )
                else:
                    waits = turns_flood(a, b, headroom)
                    target = "≤ 1" if headroom else f"≤ {hold + 1:g}"
                    text = ", ".join(f"{w:.2f}" for w in waits)
                    rows.append(
                        (f"{name}: B's queue wait, max (each) (s)", f"{max(waits):.2f} ({text})", target)
                    )
            print("| " + " | ".join((*rows[-1], "")[:3]) + " |", flush=True)
    print(f"tree: {tree}; {turns} calls of {hold} s a run; quick {QUICK_HOLD} s; {SLOTS} slots")
    print("| figure | value | target |")
    print("|---|---|---|")
    for row in rows:
        print("| " + " | ".join((*row, "")[:3]) + " |")


if __name__ == "__main__":
    main()
