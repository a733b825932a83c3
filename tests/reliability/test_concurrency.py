"""Concurrency on a live 2-worker gunicorn: override PUTs, runs against PUTs, two runs, quota, rate limit."""

from __future__ import annotations

import os
import threading
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
import sqlalchemy as sa

from hango.messages import Message, Response, TextBlock, ToolUseBlock, Usage
from tests.fakes.provider_server import MESSAGES
from tests.reliability.conftest import MODEL, Live, MakeTenant
from tests.reliability.figures import record
from tests.reliability.histories import store_messages, text
from tests.reliability.http import Http, history, make_agent, make_session
from tests.support.minutes import wait_for_fresh_minute

pytestmark = pytest.mark.server

PUTS = 16
RUNS = 6
TRIES = 24
PER_CALL = 100  # tokens one scripted try answer reports
WORKERS = 2


def together(calls: list[Callable[[], Any]]) -> list[Any]:
    """Start every call at once (a barrier), each on its own thread; their results in order."""
    barrier = threading.Barrier(len(calls))

    def start(call: Callable[[], Any]) -> Any:
        barrier.wait(timeout=10)
        return call()

    with ThreadPoolExecutor(len(calls)) as pool:
        return list(pool.map(start, calls))


def tool_history() -> list[dict[str, Any]]:
    """u1 a2(tool_use) u3(tool_result) a4 u5 a6: pairs to close, texts to replace."""
    use = {"type": "tool_use", "id": "toolu_c1", "name": "ls", "input": {"path": "/"}}
    result = {"type": "tool_result", "tool_use_id": "toolu_c1", "content": "nothing", "is_error": False}
    return [
        text("user", "hello"),
        {"role": "assistant", "content": [{"type": "text", "text": "looking"}, use]},
        {"role": "user", "content": [result]},
        text("assistant", "empty"),
        text("user", "thanks"),
        text("assistant", "welcome"),
    ]


def session_of(who: Http, engine: sa.Engine, messages: list[dict[str, Any]]) -> str:
    session_id = make_session(who, make_agent(who, MODEL))
    store_messages(engine, who.tenant_id, session_id, messages)
    return session_id


def override_set(k: int) -> list[dict[str, Any]]:
    """The k-th of 16 different sets: some exclude the tool_use message (its result follows), all replace."""
    chosen = [{"part": "message:5", "action": "replace", "replacement": f"variant {k}"}]
    if k % 2:
        chosen.append({"part": "message:2", "action": "exclude"})
    if k % 3 == 0:
        chosen.append({"part": "message:4", "action": "exclude"})
    return chosen


def test_sixteen_concurrent_puts_leave_exactly_one_submitted_closed_set(
    fresh: Live, live_tenant: MakeTenant, engine: sa.Engine
) -> None:
    owner = live_tenant(fresh.url).owner
    session_id = session_of(owner, engine, tool_history())
    path = f"/v1/sessions/{session_id}/context-overrides"

    answers = together(
        [lambda k=k: owner.put(path, json={"overrides": override_set(k)}) for k in range(PUTS)]
    )

    assert [a.status_code for a in answers] == [200] * PUTS, [a.text for a in answers]
    closed = [a.json()["overrides"] for a in answers]
    assert any(any(o["paired_from"] for o in c) for c in closed), "some sets pulled a companion in"
    stored = owner.get(path).json()["overrides"]
    assert stored in closed
    record("concurrency/puts", concurrent_puts=PUTS, workers=2, mixed_sets=0)


def scripted_run(live: Live, owner: Http, session_id: str, run: int) -> None:
    """One run that makes two model calls (a tool call, then text); fails loudly otherwise."""
    live.provider.reply(Message("assistant", (ToolUseBlock(f"toolu_r{run}", "ls", {"path": "/"}),)), "done")
    answer = owner.post_and_wait(f"/v1/sessions/{session_id}/messages", json={"content": f"run {run}"})
    assert answer.status_code == 201, answer.text


def variants_by_run(bodies: list[dict[str, Any]]) -> dict[str, set[str]]:
    """For each run's calls (told apart by their last ``run N`` text), the variants of message 5 they saw."""
    seen: dict[str, set[str]] = {}
    for body in bodies:
        texts = [b["text"] for m in body["messages"] for b in m["content"] if b["type"] == "text"]
        run = [t for t in texts if t.startswith("run ")][-1]
        seen.setdefault(run, set()).update(t for t in texts if t.startswith(("variant", "thanks")))
    return seen


def test_runs_interleaved_with_puts_each_see_one_set(fresh: Live, live_tenant: MakeTenant, engine: sa.Engine):
    owner = live_tenant(fresh.url).owner
    session_id = session_of(owner, engine, tool_history())
    path = f"/v1/sessions/{session_id}/context-overrides"
    stop = threading.Event()

    def keep_putting() -> int:
        sent = 0
        while not stop.is_set() and sent < 500:
            assert owner.put(path, json={"overrides": override_set(sent % PUTS)}).status_code == 200
            sent += 1
        return sent

    with ThreadPoolExecutor(1) as pool:
        putting = pool.submit(keep_putting)
        for run in range(RUNS):
            scripted_run(fresh, owner, session_id, run)
        stop.set()
        puts = putting.result(timeout=30)

    seen = variants_by_run(fresh.provider.bodies(MESSAGES))
    assert len(seen) == RUNS
    assert all(len(variants) == 1 for variants in seen.values()), seen
    assert fresh.ledger.invalid == []
    record("concurrency/runs_and_puts", runs=RUNS, calls=2 * RUNS, puts_meanwhile=puts, mixed_runs=0)


def test_two_simultaneous_runs_give_one_409_and_no_interleaved_history(
    fresh: Live, live_tenant: MakeTenant, engine: sa.Engine
) -> None:
    owner = live_tenant(fresh.url).owner
    session_id = session_of(owner, engine, [text("user", "hello"), text("assistant", "hi")])
    fresh.provider.hang(1.0, times=1, path=MESSAGES)  # the run that wins holds the session a while

    answers = together(
        [
            lambda k=k: owner.post_and_wait(
                f"/v1/sessions/{session_id}/messages", json={"content": f"race {k}"}
            )
            for k in (1, 2)
        ]
    )

    assert sorted(a.status_code for a in answers) == [201, 409], [a.text for a in answers]
    loser = next(a for a in answers if a.status_code == 409)
    assert loser.json()["error"]["code"] == "session_busy"
    stored = history(owner, session_id)
    winner = next(a for a in answers if a.status_code == 201).json()["run"]["id"]
    assert [m["role"] for m in stored] == ["user", "assistant", "user", "assistant"]
    assert {m["run_id"] for m in stored[2:]} == {winner}


def set_quota(owner: Http, tokens: int | None) -> None:
    assert owner.request("PATCH", "/v1/tenant", json={"token_quota": tokens}).status_code == 200


def test_quota_holds_under_concurrent_tries_with_at_most_one_call_in_flight_per_worker(
    fresh: Live, live_tenant: MakeTenant, engine: sa.Engine
) -> None:
    owner = live_tenant(fresh.url).owner
    session_id = session_of(owner, engine, [text("user", "hello")])
    quota = 10 * PER_CALL
    set_quota(owner, quota)
    answer = Response(Message("assistant", (TextBlock("ok"),)), "end_turn", Usage(input_tokens=PER_CALL))
    fresh.provider.reply(*[answer] * TRIES)

    answers = together([lambda: owner.post(f"/v1/sessions/{session_id}/context/try", json={})] * TRIES)

    statuses = sorted(a.status_code for a in answers)
    assert set(statuses) == {200, 402}, [a.text for a in answers if a.status_code not in (200, 402)]
    assert all(a.json()["error"]["code"] == "quota_exhausted" for a in answers if a.status_code == 402)
    used = owner.get("/v1/usage").json()["used_tokens"]
    assert used == statuses.count(200) * PER_CALL
    # The check comes before the call, so while tokens are left each sync worker may start one call:
    # with 2 workers the month can end at most one call's tokens over the quota.
    assert quota <= used <= quota + (WORKERS - 1) * PER_CALL, statuses
    record(
        "concurrency/quota",
        tries=TRIES,
        ok=statuses.count(200),
        quota=quota,
        used=used,
        overspend=used - quota,
    )


def test_the_rate_limit_holds_exactly_per_key_across_workers(
    fresh: Live, live_tenant: MakeTenant, engine: sa.Engine
) -> None:
    limit = 20
    tenant = live_tenant(fresh.url, limit=limit)
    wait_for_fresh_minute(engine, 5)

    answers = together(
        [lambda who=who: who.get("/v1/me") for who in [tenant.owner] * 40 + [tenant.member] * 5]
    )

    owner_statuses = [a.status_code for a in answers[:40]]
    assert owner_statuses.count(200) == limit
    assert owner_statuses.count(429) == 40 - limit
    assert all(a.headers.get("Retry-After") for a in answers[:40] if a.status_code == 429)
    assert [a.status_code for a in answers[40:]] == [200] * 5  # another key has its own window
    record(
        "concurrency/rate_limit",
        requests=45,
        limit=limit,
        over_limit_answered=owner_statuses.count(200) - limit,
    )


LOAD_SECONDS = float(os.environ.get("HANGO_SOAK_SECONDS", "8"))
LOAD_THREADS = 8


def mixed_traffic(who: Http, session_id: str, until: float) -> list[tuple[int, float]]:
    """Inspect, PUT, try, run and list on one session until ``until``: (status, seconds) of each."""
    path = f"/v1/sessions/{session_id}"
    steps = [
        lambda n: who.get(f"{path}/context"),
        lambda n: who.put(f"{path}/context-overrides", json={"overrides": override_set(n % PUTS)}),
        lambda n: who.post(f"{path}/context/try", json={"message": f"try {n}"}),
        lambda n: who.post(f"{path}/messages", json={"content": f"load {n}"}),
        lambda n: who.get(f"{path}/messages", params={"limit": 50}),
        lambda n: who.get("/v1/agents"),
    ]
    seen = []
    for n in range(100_000):
        if time.monotonic() > until:
            break
        started = time.monotonic()
        response = steps[n % len(steps)](n)
        status = response.status_code
        if status == 409:
            # a run still queued or running on the session: the documented answer, not a fault
            assert response.json()["error"]["code"] == "session_busy", response.text
        seen.append((status, time.monotonic() - started))
    return seen


def test_mixed_load_holds_with_no_server_error(
    fresh: Live, live_tenant: MakeTenant, engine: sa.Engine
) -> None:
    owner = live_tenant(fresh.url).owner
    sessions = [session_of(owner, engine, tool_history()) for _ in range(LOAD_THREADS)]
    until = time.monotonic() + LOAD_SECONDS

    with ThreadPoolExecutor(LOAD_THREADS) as pool:
        results = [r for rs in pool.map(lambda s: mixed_traffic(owner, s, until), sessions) for r in rs]

    statuses = Counter(status for status, _ in results)
    latencies = sorted(seconds for _, seconds in results)
    assert not [s for s in statuses if s >= 500], statuses
    assert set(statuses) <= {200, 201, 202, 409}, statuses
    assert statuses[202] > 0, statuses
    assert fresh.ledger.invalid == []
    record(
        "load/mixed",
        seconds=LOAD_SECONDS,
        threads=LOAD_THREADS,
        requests=len(results),
        per_second=round(len(results) / LOAD_SECONDS, 1),
        p95_ms=round(1000 * latencies[int(0.95 * (len(latencies) - 1))]),
        statuses=dict(statuses),
    )
