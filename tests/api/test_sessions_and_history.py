"""Sessions, their messages and runs, and this month's usage."""

from __future__ import annotations

import datetime as dt
import threading
import uuid

import pytest

from hango.store import TenantStore
from hango.store.usage import month_start, next_month
from tests.support.clients import error_code
from tests.support.world import World, add_usage


def test_any_member_starts_a_session_on_any_agent_of_the_tenant(acme, world: World):
    started = acme.member2.post("/v1/sessions", json={"agent_id": world.agent, "title": "mine"})
    assert started.status_code == 201
    assert started.get_json()["owner_id"] == acme.member2.user_id
    assert started.get_json()["todos"] == []
    unknown = acme.member2.post("/v1/sessions", json={"agent_id": str(uuid.uuid4())})
    assert (unknown.status_code, error_code(unknown)) == (422, "unknown_agent")


def test_sessions_filter_by_agent(acme, world: World):
    listed = acme.owner.get(f"/v1/sessions?agent_id={world.other_agent}").get_json()["items"]
    assert [s["id"] for s in listed] == [world.other_session]


def test_deleting_a_session_takes_its_history_and_runs(acme, world: World):
    assert acme.member.delete(f"/v1/sessions/{world.session}").status_code == 204
    assert acme.member.get(f"/v1/runs/{world.run}").status_code == 404
    assert acme.member.get(f"/v1/sessions/{world.session}/messages").status_code == 404


def test_runs_of_a_session(acme, world: World):
    runs = acme.member.get(f"/v1/sessions/{world.session}/runs").get_json()["items"]
    assert len(runs) == 2 and world.run in {r["id"] for r in runs}
    run = acme.admin.get(f"/v1/runs/{world.run}").get_json()
    assert (run["session_id"], run["status"], run["stop_reason"]) == (world.session, "completed", "end_turn")


def test_append_numbers_messages_without_gaps_under_concurrency(acme, world: World, engine):
    def append() -> None:
        with engine.begin() as conn:
            TenantStore(conn, uuid.UUID(acme.id)).messages.append(
                uuid.UUID(world.session), "user", [{"type": "text", "text": "again"}]
            )

    threads = [threading.Thread(target=append) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    with engine.connect() as conn:
        history = TenantStore(conn, uuid.UUID(acme.id)).messages.history(uuid.UUID(world.session))
        assert [m.seq for m in history] == list(range(1, 11))


@pytest.mark.parametrize(
    ("now", "start", "end"),
    [
        ("2026-03-31T23:30:00-02:00", "2026-04-01T00:00:00+00:00", "2026-05-01T00:00:00+00:00"),
        ("2026-12-15T08:00:00+00:00", "2026-12-01T00:00:00+00:00", "2027-01-01T00:00:00+00:00"),
        ("2026-03-01T00:30:00+01:00", "2026-02-01T00:00:00+00:00", "2026-03-01T00:00:00+00:00"),
    ],
)
def test_the_usage_month_is_the_utc_calendar_month(now, start, end):
    first = month_start(dt.datetime.fromisoformat(now))
    assert first == dt.datetime.fromisoformat(start)
    assert next_month(first) == dt.datetime.fromisoformat(end)


def test_usage_totals_this_month_per_purpose_and_model(acme, world: World, engine):
    empty = acme.member.get("/v1/usage").get_json()
    assert (empty["totals"], empty["used_tokens"], empty["quota_left"]) == ([], 0, None)
    last_month = month_start(dt.datetime.now(dt.UTC)) - dt.timedelta(seconds=1)
    add_usage(engine, world, input_tokens=999, created_at=last_month)
    add_usage(engine, world, input_tokens=100, output_tokens=20, cache_read_tokens=5)
    add_usage(engine, world, input_tokens=50, cache_write_tokens=10)
    add_usage(engine, world, purpose="summarize", input_tokens=7)
    acme.owner.patch("/v1/tenant", json={"token_quota": 1000})
    body = acme.member.get("/v1/usage").get_json()
    assert [(t["purpose"], t["model"], t["calls"], t["input_tokens"]) for t in body["totals"]] == [
        ("run", "echo", 2, 150),
        ("summarize", "echo", 1, 7),
    ]
    assert body["used_tokens"] == 150 + 20 + 5 + 10 + 7
    assert (body["token_quota"], body["quota_left"]) == (1000, 1000 - 192)
    acme.owner.patch("/v1/tenant", json={"token_quota": 150})
    assert acme.member.get("/v1/usage").get_json()["quota_left"] == 0
