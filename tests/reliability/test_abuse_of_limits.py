"""Abuse of the limits on a live 2-worker gunicorn: many keys of one member, failed authentication, and
a body past the size limit sent chunked.

Both budgets are counted per minute window in PostgreSQL. Where a burst could
straddle a minute boundary, the expected answers are computed from the stored
windows (each window admits its limit), so the assertions are exact either way.
"""

from __future__ import annotations

import json
import secrets
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests
import sqlalchemy as sa

from hango.config import load_config
from hango.db.schema import auth_failures, rate_limit_windows
from tests.reliability.conftest import AUTH_FAILURE_LIMIT, Live, MakeTenant, Proxied
from tests.reliability.figures import record
from tests.reliability.http import Http
from tests.support.minutes import wait_for_fresh_minute

pytestmark = pytest.mark.server

KEY_LIMIT = 20
KEYS = 8
CONNECTIONS = 8
WRONG_SECRETS = 300


def hit(url: str, key: str, client: str | None = None) -> requests.Response:
    """One ``GET /v1/me`` on its own connection (either worker may take it), optionally as a proxied client."""
    headers = {"Authorization": f"Bearer {key}", "Connection": "close"}
    if client:
        headers["X-Forwarded-For"] = client
    return requests.get(f"{url}/v1/me", headers=headers, timeout=30)


def together(calls: list[Callable[[], requests.Response]]) -> list[requests.Response]:
    with ThreadPoolExecutor(CONNECTIONS) as pool:
        return list(pool.map(lambda call: call(), calls))


def wrong_key(prefix: str | None = None) -> str:
    return f"hgo_{prefix or secrets.token_hex(6)}_{secrets.token_urlsafe(24)}"


def mint_keys(owner: Http, holder: Http, limits: list[int]) -> list[str]:
    """New keys of ``holder`` with the given per-key limits, minted by the owner; their secrets."""
    secrets_ = []
    for limit in limits:
        body = {"name": "extra", "user_id": holder.user_id, "rate_limit_per_minute": limit}
        made = owner.post("/v1/api-keys", json=body)
        assert made.status_code == 201, made.text
        secrets_.append(made.json()["api_key"])
    return secrets_


def member_windows(engine: sa.Engine, who: Http) -> list[int]:
    query = sa.select(rate_limit_windows.c.count).where(
        rate_limit_windows.c.user_id == uuid.UUID(who.user_id)
    )
    with engine.connect() as conn:
        return list(conn.execute(query).scalars())


def failure_windows(engine: sa.Engine, subject: str) -> list[int]:
    query = sa.select(auth_failures.c.count).where(auth_failures.c.subject == subject)
    with engine.connect() as conn:
        return list(conn.execute(query).scalars())


def failure_subjects(engine: sa.Engine) -> set[str]:
    with engine.connect() as conn:
        return set(conn.execute(sa.select(auth_failures.c.subject)).scalars())


def admitted(windows: list[int], limit: int) -> int:
    """How many requests the windows let through: each admits its first ``limit``."""
    return sum(min(count, limit) for count in windows)


def assert_throttled(answers: list[requests.Response]) -> None:
    for refused in answers:
        body = refused.json()
        assert body["error"]["code"] == "too_many_failures"
        assert body["error"]["details"] == {"failures_per_minute": AUTH_FAILURE_LIMIT}
        assert 1 <= int(refused.headers["Retry-After"]) <= 60


def test_a_members_eight_keys_share_one_rate_limit_across_two_workers(
    live: Live, live_tenant: MakeTenant, engine: sa.Engine
) -> None:
    tenant = live_tenant(live.url)
    keys = mint_keys(tenant.owner, tenant.member, [KEY_LIMIT] * KEYS)
    wait_for_fresh_minute(engine, 20)

    answers = together([lambda key=key: hit(live.url, key) for key in keys * KEY_LIMIT])

    statuses = [a.status_code for a in answers]
    windows = member_windows(engine, tenant.member)
    assert sum(windows) == KEYS * KEY_LIMIT and len(windows) <= 2
    assert statuses.count(200) == admitted(windows, KEY_LIMIT)  # 20 in one minute, not 8 x 20
    assert statuses.count(429) == KEYS * KEY_LIMIT - statuses.count(200)
    assert hit(live.url, tenant.member2.key).status_code == 200  # another member has their own budget
    record(
        "limits/member_keys",
        keys=KEYS,
        key_limit=KEY_LIMIT,
        sent=KEYS * KEY_LIMIT,
        answered=statuses.count(200),
    )


def test_the_presenting_keys_limit_caps_the_members_shared_count(
    live: Live, live_tenant: MakeTenant, engine: sa.Engine
) -> None:
    tenant = live_tenant(live.url)
    low, high = mint_keys(tenant.owner, tenant.member, [5, 10])
    wait_for_fresh_minute(engine, 20)

    with_low = [hit(live.url, low).status_code for _ in range(6)]
    with_high = [hit(live.url, high).status_code for _ in range(5)]

    assert with_low == [200] * 5 + [429]
    # The member's count is 6 (refused requests count too): the high key admits up to its 10.
    assert with_high == [200] * 4 + [429]


def test_300_wrong_secrets_from_one_client_get_429_with_retry_after_across_workers(
    proxied: Proxied, engine: sa.Engine, clean_db: None
) -> None:
    answers = together([lambda: hit(proxied.gunicorn, wrong_key()) for _ in range(WRONG_SECRETS)])

    statuses = [a.status_code for a in answers]
    windows = failure_windows(engine, "client:127.0.0.1")
    assert sum(windows) == WRONG_SECRETS and len(windows) <= 2
    assert statuses.count(401) == admitted(windows, AUTH_FAILURE_LIMIT)
    assert statuses.count(429) == WRONG_SECRETS - statuses.count(401)
    assert_throttled([a for a in answers if a.status_code == 429])
    record(
        "limits/wrong_secrets",
        sent=WRONG_SECRETS,
        unauthorized=statuses.count(401),
        throttled=statuses.count(429),
    )


def test_failures_against_one_key_prefix_get_429_from_any_client(
    proxied: Proxied, live_tenant: MakeTenant, engine: sa.Engine
) -> None:
    prefix = live_tenant(proxied.gunicorn).member.key.split("_")[1]
    attempts = 3 * AUTH_FAILURE_LIMIT

    answers = together(
        [lambda n=n: hit(proxied.gunicorn, wrong_key(prefix), f"10.0.{n}.1") for n in range(attempts)]
    )

    statuses = [a.status_code for a in answers]
    windows = failure_windows(engine, f"prefix:{prefix}")
    assert sum(windows) == attempts
    assert statuses.count(401) == admitted(windows, AUTH_FAILURE_LIMIT)
    assert statuses.count(429) == attempts - statuses.count(401)
    assert_throttled([a for a in answers if a.status_code == 429])


def test_the_right_secret_is_never_locked_out_by_failures_on_its_prefix_or_from_its_client(
    proxied: Proxied, live_tenant: MakeTenant
) -> None:
    member = live_tenant(proxied.gunicorn).member
    prefix, attacker = member.key.split("_")[1], "192.0.2.7"
    attack = together(
        [lambda: hit(proxied.gunicorn, wrong_key(prefix), attacker) for _ in range(3 * AUTH_FAILURE_LIMIT)]
    )
    assert [a.status_code for a in attack].count(
        429
    ) >= AUTH_FAILURE_LIMIT  # 60 failures: at most 2 x 20 pass

    assert hit(proxied.gunicorn, member.key, attacker).status_code == 200  # same prefix, same client
    assert hit(proxied.gunicorn, member.key, "198.51.100.9").status_code == 200
    assert (
        hit(proxied.gunicorn, wrong_key(), "198.51.100.9").status_code == 401
    )  # other clients are not blocked


def test_x_forwarded_for_is_believed_only_from_the_trusted_proxy(
    live: Live, proxied: Proxied, engine: sa.Engine, clean_db: None
) -> None:
    spoofed = [f"203.0.113.{n}" for n in range(10)]

    through_nginx = [hit(proxied.nginx, wrong_key(), client).status_code for client in spoofed]
    direct_untrusted = [hit(live.url, wrong_key(), client).status_code for client in spoofed]

    assert set(through_nginx) == set(direct_untrusted) == {401}
    # nginx replaces the header with the peer it saw; a server trusting no proxy ignores it.
    assert {s for s in failure_subjects(engine) if s.startswith("client:")} == {"client:127.0.0.1"}


def chunked(body: bytes, piece: int = 64 * 1024) -> Iterator[bytes]:
    """``body`` as a generator: ``requests`` sends it ``Transfer-Encoding: chunked``, no ``Content-Length``."""
    for start in range(0, len(body), piece):
        yield body[start : start + piece]


def test_a_3_mb_body_sent_chunked_gets_413_payload_too_large_not_400(
    live: Live, live_tenant: MakeTenant
) -> None:
    owner = live_tenant(live.url).owner
    limit = load_config(env={}).max_body_bytes
    big = json.dumps({"name": "x", "model": "offline/echo", "system_prompt": "x" * 3 * 1024 * 1024}).encode()
    small = json.dumps({"name": "chunked", "model": "offline/echo", "system_prompt": "You help."}).encode()
    headers = {"Content-Type": "application/json", "Connection": "close"}

    refused = owner.post("/v1/agents", data=chunked(big), headers=headers)
    taken = owner.post("/v1/agents", data=chunked(small), headers=headers)

    assert len(big) > limit and refused.request.headers.get("Transfer-Encoding") == "chunked"
    assert "Content-Length" not in refused.request.headers
    assert (refused.status_code, refused.json()["error"]["code"]) == (413, "payload_too_large"), refused.text
    assert str(limit) in refused.json()["error"]["message"]
    assert taken.status_code == 201, taken.text  # a chunked body under the limit is read whole


def test_a_3_mb_body_gets_one_413_message_with_content_length_or_chunked(
    live: Live, live_tenant: MakeTenant
) -> None:
    owner = live_tenant(live.url).owner
    big = json.dumps({"name": "x", "model": "offline/echo", "system_prompt": "x" * 3 * 1024 * 1024}).encode()
    headers = {"Content-Type": "application/json", "Connection": "close"}

    declared = owner.post("/v1/agents", data=big, headers=headers)
    streamed = owner.post("/v1/agents", data=chunked(big), headers=headers)

    assert declared.request.headers["Content-Length"] == str(len(big))
    assert [declared.status_code, streamed.status_code] == [413, 413]
    assert declared.json()["error"] == streamed.json()["error"]
    limit = load_config(env={}).max_body_bytes
    assert (
        declared.json()["error"]["message"]
        == f"the request body is larger than {limit} bytes (HANGO_MAX_BODY_BYTES)"
    )
