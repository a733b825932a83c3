"""Security: isolation under generated ids, no key or content in logs/spans/audit, constant-time key checks."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import re
from collections.abc import Callable, Iterator

import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st
from opentelemetry.sdk.trace import ReadableSpan

from hango import auth
from hango.db.schema import audit_log, usage_records
from hango.providers import close_providers
from tests.api.examples import EXAMPLES, Example
from tests.fakes.provider_server import MESSAGES, TEST_API_KEY, FakeProviderServer
from tests.reliability.conftest import MODEL, Live
from tests.reliability.figures import record
from tests.support.clients import As, Tenant, error_code
from tests.support.world import World, build_world, snapshot

CANARY = "canary-7f3a9c"
KEY_PATTERN = re.compile(r"hgo_[0-9a-f]{12}_[A-Za-z0-9_-]{16,}")
OBJECT_ROUTES = [e for e in EXAMPLES if e.has_object]
PLACEHOLDERS = ("agent", "session", "run", "queued_run", "key", "user", "message", "call", "mcp_server")


@pytest.fixture
def world(engine: sa.Engine, acme: Tenant) -> World:
    return build_world(engine, acme)


def fuzzed_ids(example: Example, ids: dict[str, str]) -> tuple[str, object]:
    """The example's path and body with generated ids where the world's objects would be."""
    values = {"skill": "review", **ids}
    return example.path.format(**values), example.body


@seed(404)
@settings(
    max_examples=12, deadline=None, database=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(ids=st.fixed_dictionaries({name: st.uuids().map(str) for name in PLACEHOLDERS}))
def test_generated_ids_are_404_on_every_object_route_for_every_caller(
    ids: dict[str, str], acme: Tenant, globex: Tenant, world: World, engine: sa.Engine
) -> None:
    before = snapshot(engine, world.tenant)
    for example in OBJECT_ROUTES:
        path, body = fuzzed_ids(example, ids)
        for who in (acme.owner, acme.member, globex.owner):
            response = who.request(example.method, path, json=body)
            assert response.status_code == 404, (example.id, response.get_json())
            assert error_code(response) == "not_found"
    assert snapshot(engine, world.tenant) == before


def test_another_members_objects_are_404_under_every_route(acme: Tenant, world: World, engine) -> None:
    """member2 on member's session, run, key: 404; writes to member's agent (readable): 403; nothing changed."""
    private = [e for e in OBJECT_ROUTES if any(p in e.path for p in ("{session}", "{run}", "{key}"))]
    writes = [e for e in OBJECT_ROUTES if "{agent}" in e.path and e.method != "GET"]
    before = snapshot(engine, world.tenant)
    for example in private + writes:
        path, body = example.for_world(world.values())
        response = acme.member2.request(example.method, path, json=body)
        status = 403 if example in writes else 404
        assert response.status_code == status, (example.id, response.get_json())
    assert snapshot(engine, world.tenant) == before
    record("security/isolation", member_routes=len(private) + len(writes), object_routes=len(OBJECT_ROUTES))


def test_key_checks_are_constant_time_by_construction(
    acme: Tenant, engine: sa.Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Looked up by prefix, compared with ``hmac.compare_digest``, never with ``==`` on a secret or hash.

    Behaviour, not spelling: the database sees only the prefix (no secret, no hash to compare in SQL),
    and the one comparison of the hashes goes through ``hmac.compare_digest``, for a right key and a
    wrong key of the same prefix alike; the wrong key is refused like an unknown one.
    """
    compared: list[tuple[str, str]] = []
    real = auth.hmac.compare_digest

    def spy(a, b):
        compared.append((a, b))
        return real(a, b)

    monkeypatch.setattr(auth.hmac, "compare_digest", spy)
    key = acme.owner.key
    wrong = key[:-4] + ("aaaa" if not key.endswith("aaaa") else "bbbb")
    with engine.connect() as conn, count_statements_with_params(engine) as sent:
        principal = auth.authenticate(conn, key)
        with pytest.raises(auth.Unauthorized) as refused:
            auth.authenticate(conn, wrong)
        with pytest.raises(auth.Unauthorized) as unknown:
            auth.authenticate(conn, "hgo_000000000000_" + "x" * 32)

    assert str(principal.user_id) == acme.owner.user_id
    assert refused.value.code == unknown.value.code == "invalid_api_key"
    assert compared == [(auth.hash_key(key), auth.hash_key(key)), (auth.hash_key(key), auth.hash_key(wrong))]
    sent_text = json.dumps(sent, default=str)
    for secret in (key, wrong, auth.hash_key(key), auth.hash_key(wrong)):
        assert secret not in sent_text
    prefix = key.split("_")[1]
    assert [list(params.values()) for _, params in sent][:2] == [[prefix]] * 2  # the prefix, nothing else
    assert all("key_hash =" not in statement for statement, _ in sent)


@contextlib.contextmanager
def count_statements_with_params(engine: sa.Engine) -> Iterator[list[tuple[str, object]]]:
    """Every statement ``engine`` executes inside the block, with its parameters."""
    sent: list[tuple[str, object]] = []

    def record(_conn, _cursor, statement, params, _context, _many) -> None:
        sent.append((statement, params))

    sa.event.listen(engine, "before_cursor_execute", record)
    try:
        yield sent
    finally:
        sa.event.remove(engine, "before_cursor_execute", record)


def every_text(spans: tuple[ReadableSpan, ...]) -> str:
    """Every attribute and event of every span, as one text to search."""
    parts = []
    for span in spans:
        parts.append(json.dumps(dict(span.attributes or {}), default=str))
        parts.extend(json.dumps(dict(e.attributes or {}), default=str) for e in span.events)
    return "\n".join(parts)


def stored_bookkeeping(engine: sa.Engine) -> str:
    with engine.connect() as conn:
        rows = [*conn.execute(sa.select(audit_log)), *conn.execute(sa.select(usage_records))]
    return json.dumps([tuple(r) for r in rows], default=str)


@pytest.fixture
def canary_owner(make_app, acme: Tenant) -> Iterator[tuple[As, FakeProviderServer]]:
    """The owner on an app whose Anthropic agents call a fake that echoes the canary back."""
    with FakeProviderServer() as fake:
        app = make_app(anthropic_base_url=fake.anthropic_base_url, anthropic_api_key=TEST_API_KEY)
        yield dataclasses.replace(acme.owner, client=app.test_client()), fake
        close_providers()


def touch_everything(who: As, fake: FakeProviderServer) -> str:
    """Put the canary in a prompt, memory, messages, a replacement and a try; returns the session."""
    agent = who.post("/v1/agents", json={"name": "c", "model": MODEL, "system_prompt": f"secret {CANARY}"})
    agent_id = agent.get_json()["id"]
    assert who.put(f"/v1/agents/{agent_id}/memory/AGENTS.md", json={"content": CANARY}).status_code == 200
    session_id = who.post("/v1/sessions", json={"agent_id": agent_id}).get_json()["id"]
    fake.reply(f"echo {CANARY}", f"again {CANARY}")
    assert (
        who.post_and_wait(f"/v1/sessions/{session_id}/messages", json={"content": f"hi {CANARY}"}).status_code
        == 201
    )
    override = {"part": "message:1", "action": "replace", "replacement": f"new {CANARY}"}
    put = who.put(f"/v1/sessions/{session_id}/context-overrides", json={"overrides": [override]})
    assert put.status_code == 200, put.get_json()
    assert who.get(f"/v1/sessions/{session_id}/context").status_code == 200
    tried = who.post(f"/v1/sessions/{session_id}/context/try", json={"message": f"try {CANARY}"})
    assert tried.status_code == 200, tried.get_json()
    fake.fail(500, {"type": "error", "error": {"type": "api_error", "message": f"boom {TEST_API_KEY}"}})
    failed = who.post(f"/v1/sessions/{session_id}/context/try", json={"message": "fail"})
    assert failed.status_code == 502
    fake.fail(
        500, {"type": "error", "error": {"type": "api_error", "message": f"boom {TEST_API_KEY} {CANARY}"}}
    )
    failed_run = who.post_and_wait(f"/v1/sessions/{session_id}/messages", json={"content": "fail"})
    assert failed_run.status_code == 502
    for answer in (failed, failed_run):
        assert TEST_API_KEY not in answer.text
    return session_id


def test_content_and_keys_never_reach_logs_spans_or_audit(
    canary_owner, spans: Callable[[], tuple[ReadableSpan, ...]], caplog, engine: sa.Engine
) -> None:
    who, fake = canary_owner
    caplog.set_level(logging.DEBUG)
    touch_everything(who, fake)
    assert len(fake.bodies(MESSAGES)) == 4
    assert CANARY in json.dumps(fake.bodies(MESSAGES))  # the content did travel: to the provider only

    for where, text in {
        "spans": every_text(spans()),
        "logs": caplog.text,
        "audit": stored_bookkeeping(engine),
    }.items():
        assert CANARY not in text, where
        assert who.key not in text and TEST_API_KEY not in text, where
        assert not KEY_PATTERN.search(text), where
    record("security/canaries", provider_calls=4, places_checked=["spans", "logs", "audit", "usage"], leaks=0)


def test_content_reaches_spans_only_when_the_tenant_traces_it(
    canary_owner, spans: Callable[[], tuple[ReadableSpan, ...]], caplog, engine: sa.Engine
) -> None:
    who, fake = canary_owner
    caplog.set_level(logging.DEBUG)
    assert who.patch("/v1/tenant", json={"trace_llm_content": True}).status_code == 200
    touch_everything(who, fake)

    assert CANARY in every_text(spans())  # so the test above could have seen it
    assert CANARY not in caplog.text
    assert CANARY not in stored_bookkeeping(engine)
    assert TEST_API_KEY not in every_text(spans())


@pytest.mark.server
def test_the_live_servers_log_holds_no_key(fresh: Live, live_tenant) -> None:
    """Good keys, forged keys, provider failures: gunicorn's output (both workers) names no key."""
    owner = live_tenant(fresh.url).owner
    forged = f"hgo_{'0' * 12}_{'x' * 32}"
    answers = [owner.get("/v1/me").status_code]
    answers += [
        owner.request("GET", "/v1/me", headers={"Authorization": f"Bearer {forged}"}).status_code
        for _ in range(4)
    ]
    agent = owner.post("/v1/agents", json={"name": "k", "model": MODEL}).json()["id"]
    session = owner.post("/v1/sessions", json={"agent_id": agent}).json()["id"]
    fresh.provider.fail(
        401, {"type": "error", "error": {"type": "authentication_error", "message": TEST_API_KEY}}
    )
    answers.append(
        owner.post_and_wait(f"/v1/sessions/{session}/messages", json={"content": "hi"}).status_code
    )

    assert answers == [200, 401, 401, 401, 401, 502]
    log = fresh.log_text()
    assert log.strip(), "the server's output is captured"
    for secret in (TEST_API_KEY, owner.key, forged):
        assert secret not in log
    assert not KEY_PATTERN.search(log)
