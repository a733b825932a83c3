"""Usage: one row per model call with its purpose and the provider's tokens; ``GET /v1/usage`` totals."""

from __future__ import annotations

import datetime as dt
from collections import defaultdict

import sqlalchemy as sa

from hango.agent.compaction import SUMMARIZER_PROMPT
from hango.messages import TOKEN_FIELDS
from hango.store.usage import month_start, next_month
from tests.budget.conftest import FAKE_MODEL, delegating_run, make_agent, make_session, say, usage_rows
from tests.fakes.provider_server import MESSAGES, FakeProviderServer
from tests.support.clients import As, Tenant

SMALL_WINDOW = 1024


def test_a_run_with_a_subagent_writes_one_row_per_call_with_its_purpose(
    fake: FakeProviderServer, fake_owner: As, engine: sa.Engine
) -> None:
    result = delegating_run(fake, fake_owner)
    me = fake_owner.get("/v1/me").get_json()

    rows = usage_rows(engine, fake_owner.tenant_id)

    assert len(fake.bodies(MESSAGES)) == len(rows) == 3
    assert [(r.purpose, *(getattr(r, c) for c in TOKEN_FIELDS)) for r in rows] == [
        ("run", 100, 20, 300, 40),
        ("subagent", 50, 10, 0, 0),
        ("run", 120, 30, 280, 0),
    ]
    billed = {
        (r.provider, r.model, str(r.run_id), str(r.session_id), str(r.api_key_id), str(r.user_id))
        for r in rows
    }
    run = result["run"]
    assert billed == {
        ("anthropic", "claude-fake-1", run["id"], run["session_id"], me["api_key_id"], me["user_id"])
    }


def test_compaction_bills_its_call_as_summarize(
    fake: FakeProviderServer, fake_owner: As, engine: sa.Engine
) -> None:
    agent = make_agent(
        fake_owner,
        model=FAKE_MODEL,
        tools=[],
        settings={"memory": False, "skills": False},
        context_window=SMALL_WINDOW,
    )
    session = make_session(fake_owner, agent)
    for turn in range(1, 9):
        say(
            fake_owner,
            session,
            f"Part {turn} of the story: " + " ".join(f"event{turn}n{i}" for i in range(120)),
        )
        if any(r.purpose == "summarize" for r in usage_rows(engine, fake_owner.tenant_id)):
            break

    rows = usage_rows(engine, fake_owner.tenant_id)
    bodies = fake.bodies(MESSAGES)
    summarizing = [b for b in bodies if b["system"][0]["text"] == SUMMARIZER_PROMPT]
    assert len(rows) == len(bodies)
    assert [r.purpose for r in rows].count("summarize") == len(summarizing) >= 1
    assert {r.purpose for r in rows} == {"run", "summarize"}
    assert all(r.run_id is not None for r in rows)
    # The summary gets the room recent history leaves it: half of 0.8 × the window.
    assert {b["max_tokens"] for b in summarizing} == {int(SMALL_WINDOW * 0.8 * 0.5)}


def totals_of(rows: list[sa.Row]) -> list[dict]:
    """``GET /v1/usage`` totals as they should be: calls and token sums per purpose, provider and model."""
    grouped: dict[tuple, dict] = defaultdict(lambda: {"calls": 0, **dict.fromkeys(TOKEN_FIELDS, 0)})
    for row in rows:
        group = grouped[(row.purpose, row.provider, row.model)]
        group["calls"] += 1
        for column in TOKEN_FIELDS:
            group[column] += getattr(row, column)
    return [
        {"purpose": p, "provider": provider, "model": m, **sums}
        for (p, provider, m), sums in sorted(grouped.items())
    ]


def test_usage_shows_this_months_totals_per_purpose_and_model_and_the_quota_left(
    fake: FakeProviderServer, fake_owner: As, acme: Tenant, globex: Tenant, engine: sa.Engine
) -> None:
    delegating_run(fake, fake_owner)
    say(fake_owner, make_session(fake_owner, make_agent(fake_owner)), "hello offline")
    assert fake_owner.patch("/v1/tenant", json={"token_quota": 5000}).status_code == 200

    shown = acme.member.get("/v1/usage").get_json()

    rows = usage_rows(engine, acme.id)
    assert shown["totals"] == totals_of(rows)
    assert shown["totals"][0] == {
        "purpose": "run",
        "provider": "anthropic",
        "model": "claude-fake-1",
        "calls": 2,
        "input_tokens": 220,
        "output_tokens": 50,
        "cache_read_tokens": 580,
        "cache_write_tokens": 40,
    }
    assert [(t["purpose"], t["provider"]) for t in shown["totals"]] == [
        ("run", "anthropic"),
        ("run", "offline"),
        ("subagent", "anthropic"),
    ]
    used = sum(getattr(r, c) for r in rows for c in TOKEN_FIELDS)
    assert (shown["used_tokens"], shown["token_quota"], shown["quota_left"]) == (used, 5000, 5000 - used)
    start = month_start(dt.datetime.now(dt.UTC))
    assert dt.datetime.fromisoformat(shown["period_start"]) == start
    assert dt.datetime.fromisoformat(shown["period_end"]) == next_month(start)

    assert fake_owner.patch("/v1/tenant", json={"token_quota": 10}).status_code == 200
    assert acme.owner.get("/v1/usage").get_json()["quota_left"] == 0
    other = globex.owner.get("/v1/usage").get_json()
    assert (other["totals"], other["used_tokens"]) == ([], 0)
