"""The per-key rate limit holds across two gunicorn workers: counted in PostgreSQL, 429 with Retry-After."""

from __future__ import annotations

import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests
import sqlalchemy as sa

from hango.db.schema import rate_limit_windows
from tests.support.clients import As, Tenant, error_code
from tests.support.minutes import wait_for_fresh_minute

pytestmark = pytest.mark.server

LIMIT = 6
EXTRA = 5
CONNECTIONS = 6


def limited_key(owner: As, holder: As, limit: int) -> tuple[str, str]:
    """A new key of ``holder`` with ``limit`` requests per minute, set by PATCH; returns (id, secret)."""
    made = owner.post("/v1/api-keys", json={"name": "limited", "user_id": holder.user_id}).get_json()
    patched = owner.patch(f"/v1/api-keys/{made['id']}", json={"rate_limit_per_minute": limit})
    assert patched.status_code == 200 and patched.get_json()["rate_limit_per_minute"] == limit
    return made["id"], made["api_key"]


def hit(url: str, secret: str) -> requests.Response:
    """One authenticated request on its own connection (so either worker may take it)."""
    headers = {"Authorization": f"Bearer {secret}", "Connection": "close"}
    return requests.get(f"{url}/v1/me", headers=headers, timeout=30)


def burst(url: str, secret: str, count: int) -> list[requests.Response]:
    with ThreadPoolExecutor(CONNECTIONS) as pool:
        return list(pool.map(lambda _: hit(url, secret), range(count)))


def windows(engine: sa.Engine, user_id: str) -> list[int]:
    """The member's request counts per minute window."""
    query = sa.select(rate_limit_windows.c.count).where(rate_limit_windows.c.user_id == uuid.UUID(user_id))
    with engine.connect() as conn:
        return list(conn.execute(query).scalars())


def one_window_burst(acme: Tenant, url: str, engine: sa.Engine) -> list[requests.Response]:
    """LIMIT + EXTRA requests of a fresh limited key of member2 inside one minute window."""
    _, secret = limited_key(acme.owner, acme.member2, LIMIT)
    wait_for_fresh_minute(engine, 15)
    answers = burst(url, secret, LIMIT + EXTRA)
    assert len(windows(engine, acme.member2.user_id)) == 1, "the burst straddled a minute boundary"
    return answers


def test_a_key_gets_exactly_its_limit_per_minute_across_two_workers(
    acme: Tenant, live_server: str, engine: sa.Engine
) -> None:
    answers = one_window_burst(acme, live_server, engine)

    statuses = sorted(a.status_code for a in answers)
    assert statuses == [200] * LIMIT + [429] * EXTRA
    for refused in (a for a in answers if a.status_code == 429):
        assert 1 <= int(refused.headers["Retry-After"]) <= 60
        body = refused.json()
        assert body["error"]["code"] == "rate_limited"
        assert body["error"]["details"] == {"limit_per_minute": LIMIT}
        assert set(body) == {"error"} and set(body["error"]) == {"code", "message", "details"}
    assert hit(live_server, acme.member.key).status_code == 200


def test_members_cannot_raise_their_own_limit(acme: Tenant) -> None:
    mine = acme.member.post("/v1/api-keys", json={"name": "mine"}).get_json()

    refused = acme.member.patch(f"/v1/api-keys/{mine['id']}", json={"rate_limit_per_minute": 1_000_000})

    assert (refused.status_code, error_code(refused)) == (422, "role_not_allowed")
