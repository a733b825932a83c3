"""The monthly token quota: 402 before any call, ``quota_exhausted`` mid-run with a valid history."""

from __future__ import annotations

import datetime as dt
import uuid

import pytest
import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

from hango.agent.validate import validate_history
from hango.db.schema import runs
from hango.messages import Message, Response, TextBlock, ToolUseBlock, Usage
from hango.store import TenantStore
from hango.store.usage import _QUOTA_LEFT, month_start
from tests.budget.conftest import FAKE_MODEL, as_messages, make_agent, make_session, say, stored, usage_rows
from tests.fakes.provider_server import MESSAGES, FakeProviderServer
from tests.support.clients import As, Tenant, error_code

LS_CALL = Message("assistant", (TextBlock("looking"), ToolUseBlock("toolu_1", "ls", {"path": "/"})))
TASK_CALL = Message("assistant", (ToolUseBlock("toolu_2", "task", {"description": "count the files"}),))


def set_quota(who: As, quota: int | None) -> dict:
    changed = who.patch("/v1/tenant", json={"token_quota": quota})
    assert changed.status_code == 200, changed.get_json()
    return changed.get_json()


def usage(who: As) -> dict:
    return who.get("/v1/usage").get_json()


def run_count(engine: sa.Engine, session_id: str) -> int:
    with engine.connect() as conn:
        query = sa.select(sa.func.count()).where(runs.c.session_id == uuid.UUID(session_id))
        return conn.execute(query).scalar_one()


def record_usage(engine: sa.Engine, tenant_id: str, at: dt.datetime, tokens: int) -> None:
    """One model call of ``tokens`` input tokens, billed at ``at``."""
    with engine.begin() as conn:
        TenantStore(conn, uuid.UUID(tenant_id)).usage.record(
            purpose="run",
            provider="offline",
            model="echo",
            input_tokens=tokens,
            output_tokens=0,
            cache_read_tokens=0,
            cache_write_tokens=0,
            created_at=at,
        )


@pytest.fixture
def session(fake_owner: As) -> str:
    return make_session(fake_owner, make_agent(fake_owner, model=FAKE_MODEL, tools=["ls", "task"]))


def test_owners_set_the_quota_and_members_cannot(acme: Tenant) -> None:
    assert set_quota(acme.owner, 5000)["token_quota"] == 5000
    assert usage(acme.member)["token_quota"] == 5000

    refused = acme.member.patch("/v1/tenant", json={"token_quota": None})

    assert (refused.status_code, error_code(refused)) == (403, "forbidden")  # the tenant is theirs to read
    assert acme.owner.get("/v1/tenant").get_json()["token_quota"] == 5000
    assert set_quota(acme.owner, None)["token_quota"] is None
    assert usage(acme.owner)["quota_left"] is None


def test_a_used_up_quota_answers_402_before_anything_happens(
    fake: FakeProviderServer, fake_owner: As, session: str, engine: sa.Engine
) -> None:
    say(fake_owner, session, "hello")
    set_quota(fake_owner, usage(fake_owner)["used_tokens"])
    assert usage(fake_owner)["quota_left"] == 0
    history, calls, rows = (
        stored(fake_owner, session),
        len(fake.requests),
        usage_rows(engine, fake_owner.tenant_id),
    )

    refused = fake_owner.post_and_wait(f"/v1/sessions/{session}/messages", json={"content": "again"})

    assert (refused.status_code, error_code(refused)) == (402, "quota_exhausted")
    assert stored(fake_owner, session) == history
    assert run_count(engine, session) == 1
    assert len(fake.requests) == calls
    assert usage_rows(engine, fake_owner.tenant_id) == rows


def test_a_zero_quota_refuses_the_first_message_of_a_session(
    fake: FakeProviderServer, fake_owner: As, session: str, engine: sa.Engine
) -> None:
    set_quota(fake_owner, 0)

    refused = fake_owner.post_and_wait(f"/v1/sessions/{session}/messages", json={"content": "hi"})

    assert (refused.status_code, error_code(refused)) == (402, "quota_exhausted")
    assert stored(fake_owner, session) == []
    assert run_count(engine, session) == 0
    assert fake.requests == [] and usage_rows(engine, fake_owner.tenant_id) == []


def test_a_run_that_reaches_the_quota_mid_way_ends_quota_exhausted_with_a_valid_history(
    fake: FakeProviderServer, fake_owner: As, session: str, engine: sa.Engine
) -> None:
    set_quota(fake_owner, 1000)
    fake.reply(Response(LS_CALL, "tool_use", Usage(input_tokens=900, output_tokens=200)))

    result = say(fake_owner, session, "list the files")

    assert (result["run"]["status"], result["run"]["stop_reason"]) == ("quota_exhausted", None)
    roles = [(m["role"], [b["type"] for b in m["content"]]) for m in result["messages"]]
    assert roles == [("user", ["text"]), ("assistant", ["text", "tool_use"]), ("user", ["tool_result"])]
    history = stored(fake_owner, session)
    assert validate_history(as_messages(history)) == []
    assert len(fake.bodies(MESSAGES)) == 1
    assert [r.purpose for r in usage_rows(engine, fake_owner.tenant_id)] == ["run"]
    assert usage(fake_owner)["quota_left"] == 0

    refused = fake_owner.post_and_wait(f"/v1/sessions/{session}/messages", json={"content": "go on"})
    assert (refused.status_code, error_code(refused)) == (402, "quota_exhausted")
    assert stored(fake_owner, session) == history


def test_a_subagent_that_reaches_the_quota_ends_the_run_quota_exhausted(
    fake: FakeProviderServer, fake_owner: As, session: str
) -> None:
    set_quota(fake_owner, 1000)
    fake.reply(Response(TASK_CALL, "tool_use", Usage(input_tokens=900, output_tokens=200)))

    sent = fake_owner.post_and_wait(f"/v1/sessions/{session}/messages", json={"content": "delegate"})

    assert sent.status_code == 201, sent.get_json()
    assert sent.get_json()["run"]["status"] == "quota_exhausted"
    history = stored(fake_owner, session)
    assert validate_history(as_messages(history)) == []
    [result] = history[-1]["content"]
    assert (result["type"], result["is_error"]) == ("tool_result", True)


def test_only_this_utc_month_counts(acme: Tenant, engine: sa.Engine) -> None:
    start = month_start(dt.datetime.now(dt.UTC))
    record_usage(engine, acme.id, start - dt.timedelta(seconds=1), 10_000)
    record_usage(engine, acme.id, start, 300)
    set_quota(acme.owner, 1000)

    shown = usage(acme.owner)

    assert (shown["used_tokens"], shown["quota_left"]) == (300, 700)
    with engine.connect() as conn:
        assert TenantStore(conn, uuid.UUID(acme.id)).usage.quota_left(dt.datetime.now(dt.UTC)) == 700


def usage_rows_summed(engine: sa.Engine, tenant_id: str) -> int:
    """How many usage rows the quota check reads (PostgreSQL's own count, from EXPLAIN ANALYZE)."""
    values = {"the_tenant": uuid.UUID(tenant_id), "the_month": month_start(dt.datetime.now(dt.UTC))}
    statement = _QUOTA_LEFT.params(values).compile(
        dialect=postgresql.dialect(), compile_kwargs={"literal_binds": True}
    )
    with engine.connect() as conn:
        plan = conn.exec_driver_sql(f"explain (analyze, format json) {statement}").scalar_one()
    return sum(
        node.get("Actual Rows", 0) * node.get("Actual Loops", 0)
        for node in nodes(plan[0]["Plan"])
        if node.get("Relation Name") == "usage_records"
    )


def nodes(plan: dict) -> list[dict]:
    return [plan, *(n for child in plan.get("Plans", ()) for n in nodes(child))]


def test_the_quota_check_of_a_tenant_without_a_quota_reads_no_usage(acme: Tenant, engine: sa.Engine) -> None:
    for tokens in (100, 200, 300):
        record_usage(engine, acme.id, dt.datetime.now(dt.UTC), tokens)

    assert usage_rows_summed(engine, acme.id) == 0  # nothing to count against
    set_quota(acme.owner, 1000)
    assert usage_rows_summed(engine, acme.id) == 3  # the month's rows, summed
