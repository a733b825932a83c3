"""Hostile input: oversized, deeply nested, invalid UTF-8, path tricks, huge sets, bad pages, unknown enums.

Each request gets a clear 4xx in the error envelope within a bounded time and
stores nothing. Regression tests for what the fuzzer found (NUL characters, a
database that goes away) sit at the end.
"""

from __future__ import annotations

import json
import socket
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import pytest
import sqlalchemy as sa
from flask import Flask

from hango.db import db
from hango.store import TenantStore
from tests.reliability.figures import record
from tests.support.clients import As, Tenant, error_code
from tests.support.world import World, build_world, row_counts

# The app runs in this process (Flask's test client), so the CPU seconds this process spends on one
# request bound the work a hostile input buys: another process busy on the same cores lengthens
# the wall clock, not that. The wall clock only has to show that nothing hung.
MAX_SECONDS = 5.0
HANG_SECONDS = 60.0
MB = 1024 * 1024


@dataclass
class Spent:
    """The wall-clock and CPU seconds of this process over a block (filled in when it ends)."""

    wall: float = 0.0
    cpu: float = 0.0


@contextmanager
def spent() -> Iterator[Spent]:
    figures = Spent()
    wall, cpu = time.monotonic(), time.process_time()
    yield figures
    figures.wall, figures.cpu = time.monotonic() - wall, time.process_time() - cpu


@pytest.fixture
def world(engine: sa.Engine, acme: Tenant) -> World:
    return build_world(engine, acme)


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def overrides(count: int, part: str = "message:{n}") -> dict[str, Any]:
    return {"overrides": [{"part": part.format(n=n + 10), "action": "exclude"} for n in range(count)]}


SESSION_SET = "/v1/sessions/{session}/context-overrides"
AGENT_SET = "/v1/agents/{agent}/context-overrides"
# (name, method, path, request arguments, status, error code)
CASES: list[tuple[str, str, str, dict[str, Any], int, str]] = [
    (
        "oversized body",
        "POST",
        "/v1/agents",
        {"json": {"name": "x", "system_prompt": "x" * 3 * MB}},
        413,
        "payload_too_large",
    ),
    (
        "10 MB replacement",
        "PUT",
        SESSION_SET,
        {"json": {"overrides": [{"part": "message:1", "action": "replace", "replacement": "x" * 10 * MB}]}},
        413,
        "payload_too_large",
    ),
    (
        "replacement past its limit",
        "PUT",
        SESSION_SET,
        {"json": {"overrides": [{"part": "message:1", "action": "replace", "replacement": "x" * 200_001}]}},
        422,
        "invalid",
    ),
    ("100,000 overrides", "PUT", SESSION_SET, {"json": overrides(100_000)}, 413, "payload_too_large"),
    ("5,001 overrides", "PUT", SESSION_SET, {"json": overrides(5_001)}, 422, "invalid"),
    (
        "deeply nested JSON",
        "PUT",
        SESSION_SET,
        {"data": nested(100_000), "content_type": "application/json"},
        400,
        "bad_request",
    ),
    (
        "nested JSON in a field",
        "PUT",
        AGENT_SET,
        {"data": '{"overrides": ' + nested(50_000) + "}", "content_type": "application/json"},
        400,
        "bad_request",
    ),
    (
        "invalid UTF-8",
        "POST",
        "/v1/agents",
        {"data": b'{"name": "\xff\xfe\xfd"}', "content_type": "application/json"},
        400,
        "bad_request",
    ),
    (
        "not JSON at all",
        "POST",
        "/v1/agents",
        {"data": b"\x00\x01\x02", "content_type": "application/json"},
        400,
        "bad_request",
    ),
    (
        "memory path trick",
        "PUT",
        AGENT_SET,
        {"json": {"overrides": [{"part": "system:memory:../../etc", "action": "exclude"}]}},
        422,
        "malformed_part",
    ),
    (
        "absolute path trick",
        "PUT",
        AGENT_SET,
        {"json": {"overrides": [{"part": "system:memory:/memories/../../etc/passwd", "action": "exclude"}]}},
        422,
        "malformed_part",
    ),
    (
        "part of another kind",
        "PUT",
        SESSION_SET,
        {"json": {"overrides": [{"part": "tool:grep", "action": "exclude"}]}},
        422,
        "wrong_target",
    ),
    (
        "full= path trick",
        "GET",
        "/v1/sessions/{session}/context?full=system:memory:../../etc",
        {},
        422,
        "malformed_part",
    ),
    (
        "try with a path trick",
        "POST",
        "/v1/sessions/{session}/context/try",
        {"json": {"exclude": ["system:memory:../../etc"]}},
        422,
        "malformed_part",
    ),
    (
        "memory file path trick",
        "PUT",
        "/v1/agents/{agent}/memory/..%2F..%2Fetc%2Fpasswd",
        {"json": {"content": "x"}},
        422,
        "invalid_path",
    ),
    ("negative limit", "GET", "/v1/agents?limit=-1", {}, 422, "invalid"),
    ("zero limit", "GET", "/v1/sessions?limit=0", {}, 422, "invalid"),
    ("huge limit", "GET", "/v1/audit?limit=1000000000000000000000000000000", {}, 422, "invalid"),
    ("limit not a number", "GET", "/v1/api-keys?limit=ten", {}, 422, "invalid"),
    ("huge message limit", "GET", "/v1/sessions/{session}/messages?limit=10001", {}, 422, "invalid"),
    (
        "negative after_seq",
        "GET",
        "/v1/sessions/{session}/messages?after_seq=-99999999999999999999",
        {},
        422,
        "invalid",
    ),
    ("forged cursor", "GET", "/v1/agents?cursor=bm90LWEtY3Vyc29y", {}, 400, "invalid_cursor"),
    ("cursor of another alphabet", "GET", "/v1/agents?cursor=%F0%9F%92%A3", {}, 400, "invalid_cursor"),
    (
        "unknown override action",
        "PUT",
        SESSION_SET,
        {"json": {"overrides": [{"part": "message:1", "action": "delete"}]}},
        422,
        "invalid",
    ),
    (
        "unknown role",
        "POST",
        "/v1/members",
        {"json": {"email": "x@acme.test", "role": "god"}},
        422,
        "invalid",
    ),
    ("unknown audit action", "GET", "/v1/audit?action=tenant.explode", {}, 422, "invalid"),
    ("unknown tool", "POST", "/v1/agents", {"json": {"name": "x", "tools": ["rm_rf"]}}, 422, "invalid"),
    ("unknown inspect format", "GET", "/v1/sessions/{session}/context?format=xml", {}, 422, "invalid"),
    (
        "unknown field in a try",
        "POST",
        "/v1/sessions/{session}/context/try",
        {"json": {"exclude": [], "temperature": 2}},
        422,
        "invalid",
    ),
    (
        "blank try message",
        "POST",
        "/v1/sessions/{session}/context/try",
        {"json": {"message": "  \n "}},
        422,
        "invalid",
    ),
    (
        "NUL in a system prompt",
        "POST",
        "/v1/agents",
        {"json": {"name": "x", "system_prompt": "a\u0000b"}},
        422,
        "nul_character",
    ),
    ("NUL in a key name", "POST", "/v1/api-keys", {"json": {"name": "ci\u0000"}}, 422, "nul_character"),
    (
        "NUL in a member name",
        "POST",
        "/v1/members",
        {"json": {"email": "n@acme.test", "name": "\u0000"}},
        422,
        "nul_character",
    ),
    (
        "NUL in a replacement",
        "PUT",
        SESSION_SET,
        {"json": {"overrides": [{"part": "message:1", "action": "replace", "replacement": "\u0000"}]}},
        422,
        "nul_character",
    ),
    ("NUL in a query", "GET", "/v1/audit?object_type=a%00b", {}, 422, "nul_character"),
    (
        "NUL in a dict key",
        "PATCH",
        "/v1/agents/{agent}",
        {"json": {"settings": {"a\u0000": 1}}},
        422,
        "nul_character",
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_hostile_input_gets_a_clear_4xx_in_bounded_time_and_stores_nothing(
    case: tuple, acme: Tenant, world: World, engine: sa.Engine
) -> None:
    name, method, path, kwargs, status, code = case
    before = row_counts(engine)

    with spent() as took:
        response = acme.owner.request(method, path.format(**world.values()), **kwargs)

    assert (response.status_code, error_code(response)) == (status, code), response.get_data(as_text=True)[
        :500
    ]
    assert took.cpu < MAX_SECONDS
    assert took.wall < HANG_SECONDS
    assert row_counts(engine) == before
    record(
        f"bad_input/{name}", status=status, code=code, seconds=round(took.wall, 3), cpu_s=round(took.cpu, 3)
    )


def test_the_largest_allowed_set_is_stored_in_bounded_time(acme: Tenant, world: World, engine) -> None:
    # every part must be in the next request (unknown ones are refused): a history long enough
    texts = [("user" if n % 2 else "assistant", [{"type": "text", "text": f"m{n}"}]) for n in range(5_010)]
    with engine.begin() as conn:
        TenantStore(conn, uuid.UUID(acme.id)).messages.append_many(uuid.UUID(world.session), texts)
    with spent() as took:
        response = acme.owner.put(SESSION_SET.format(**world.values()), json=overrides(5_000))
    assert response.status_code == 200, response.get_json()
    assert len(response.get_json()["overrides"]) == 5_000
    assert took.cpu < 3 * MAX_SECONDS
    assert took.wall < HANG_SECONDS
    record(
        "bad_input/largest allowed set",
        overrides=5_000,
        seconds=round(took.wall, 3),
        cpu_s=round(took.cpu, 3),
    )


def test_a_database_that_cannot_be_reached_gives_503_json(make_app, acme: Tenant) -> None:
    unreachable = make_app(
        database_url="postgresql+psycopg2://postgres@127.0.0.1:9/hango", check_schema=False
    )
    response = As(unreachable.test_client(), acme.owner.key, "", "", "owner").get("/v1/me")
    assert (response.status_code, error_code(response)) == (503, "database_unavailable")
    assert response.headers["Retry-After"] == "1"


def test_a_connection_lost_at_commit_gives_503_json(app: Flask, acme: Tenant, monkeypatch) -> None:
    def lost() -> None:
        raise sa.exc.OperationalError("COMMIT", {}, Exception("server closed the connection unexpectedly"))

    monkeypatch.setattr(db, "commit", lost)
    response = acme.owner.post("/v1/agents", json={"name": "never stored"})
    assert (response.status_code, error_code(response)) == (503, "database_unavailable")


@pytest.mark.server
def test_the_longest_documented_query_value_is_answered_by_hango_not_gunicorn(live, live_tenant) -> None:
    """A 520-character part id of 4-byte characters is 6 KB percent-encoded: gunicorn.conf.py lets it in."""
    owner = live_tenant(live.url).owner
    session = owner.post(
        "/v1/sessions", json={"agent_id": owner.post("/v1/agents", json={"name": "q"}).json()["id"]}
    )
    part = "system:memory:/" + "\U0001f600" * 505
    answer = owner.get(f"/v1/sessions/{session.json()['id']}/context", params={"full": part})
    assert answer.status_code in (404, 422), answer.text[:200]
    assert answer.headers["Content-Type"] == "application/json"


def raw_post(url: str, path: str, headers: dict[str, bytes], body: bytes) -> tuple[int, str, Any]:
    """POST through a plain socket (HTTP clients refuse to send control bytes); status, type, JSON body."""
    parts = urlsplit(url)
    lines = [f"POST {path} HTTP/1.1".encode(), f"Host: {parts.netloc}".encode()]
    lines += [name.encode() + b": " + value for name, value in headers.items()]
    lines += [
        b"Content-Type: application/json",
        f"Content-Length: {len(body)}".encode(),
        b"Connection: close",
    ]
    with socket.create_connection((parts.hostname, parts.port), timeout=30) as sock:
        sock.sendall(b"\r\n".join(lines) + b"\r\n\r\n" + body)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    head, _, content = answer.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    fields = dict(line.split(b": ", 1) for line in head.split(b"\r\n")[1:])
    kind = fields.get(b"Content-Type", b"").decode()
    return status, kind, json.loads(content) if kind == "application/json" else content


IDEMPOTENCY_KEYS = {
    "300 characters": (b"k" * 300, 422, "invalid_header"),  # hango's own limit
    "not ASCII": ("clé".encode("latin-1"), 422, "invalid_header"),
    "a control byte": (b"k\x01k", 400, "bad_request"),  # gunicorn refuses it itself
    "16 KB": (b"k" * 16_384, 431, "header_too_large"),  # past gunicorn's limit_request_field_size
}


@pytest.mark.server
@pytest.mark.parametrize("case", IDEMPOTENCY_KEYS)
def test_a_bad_idempotency_key_is_refused_in_json_by_hango_or_gunicorn(live, live_tenant, case: str) -> None:
    """Issue 38 §4: every refusal of the header is the JSON envelope, whoever refuses it."""
    owner = live_tenant(live.url).owner
    agent = owner.post("/v1/agents", json={"name": "k", "model": "offline/echo"}).json()["id"]
    session = owner.post("/v1/sessions", json={"agent_id": agent}).json()["id"]
    key, status, code = IDEMPOTENCY_KEYS[case]
    headers = {"Authorization": f"Bearer {owner.key}".encode(), "Idempotency-Key": key}

    answer = raw_post(live.url, f"/v1/sessions/{session}/messages", headers, b'{"content": "hi"}')

    assert answer[:2] == (status, "application/json"), answer
    assert answer[2]["error"]["code"] == code
    assert owner.get(f"/v1/sessions/{session}/runs").json()["items"] == []
