"""Authentication: Bearer keys, stored as hashes, scoped to their tenant."""

from __future__ import annotations

import hmac
import uuid

import pytest
import sqlalchemy as sa

from hango import auth
from hango.db.schema import api_keys
from hango.store import TenantStore
from tests.support.clients import error_code
from tests.support.sql import count_statements


@pytest.mark.parametrize(
    ("header", "code"),
    [
        (None, "missing_api_key"),
        ("Basic abc", "malformed_api_key"),
        ("Bearer", "malformed_api_key"),
        ("Bearer hgo_000000000000_nope", "invalid_api_key"),
        ("Bearer not-a-hango-key", "invalid_api_key"),
    ],
)
def test_bad_keys_get_401_envelope(client, acme, header, code):
    headers = {"Authorization": header} if header else {}
    response = client.get("/v1/me", headers=headers)
    assert response.status_code == 401
    assert error_code(response) == code


def test_a_key_with_the_right_prefix_but_wrong_secret_is_refused(client, acme):
    prefix = acme.owner.key.split("_")[1]
    response = client.get("/v1/me", headers={"Authorization": f"Bearer hgo_{prefix}_wrong"})
    assert response.status_code == 401


def test_revoked_key_gets_401(client, acme, engine):
    with engine.begin() as conn:
        conn.execute(sa.update(api_keys).values(revoked_at=sa.func.now()))
    response = acme.owner.get("/v1/me")
    assert response.status_code == 401
    assert error_code(response) == "revoked_api_key"


def test_me_names_the_caller_and_records_last_use(acme, engine):
    response = acme.member.get("/v1/me")
    assert response.status_code == 200
    body = response.get_json()
    assert body["role"] == "member"
    assert body["email"] == "member@acme.test"
    assert body["tenant_slug"] == "acme"
    with engine.connect() as conn:
        used = conn.execute(
            sa.select(api_keys.c.last_used_at).where(api_keys.c.id == uuid.UUID(body["api_key_id"]))
        )
        assert used.scalar_one() is not None


def test_only_a_hash_of_the_key_is_stored(acme, engine):
    with engine.connect() as conn:
        rows = conn.execute(sa.select(api_keys)).all()
    secrets_ = [acme.owner.key, acme.admin.key, acme.member.key, acme.member2.key]
    for row in rows:
        assert row.key_hash not in secrets_
        assert all(row.key_hash != s and s not in str(tuple(row)) for s in secrets_)
    assert {auth.hash_key(s) for s in secrets_} == {r.key_hash for r in rows}


def test_key_check_looks_up_by_prefix_and_compares_in_constant_time(acme, engine, monkeypatch):
    compared = []
    real = hmac.compare_digest

    def spy(a, b):
        compared.append((a, b))
        return real(a, b)

    monkeypatch.setattr(auth.hmac, "compare_digest", spy)
    with count_statements(engine) as statements, engine.begin() as conn:
        principal = auth.authenticate(conn, acme.member.key)
    assert principal.role == "member"
    assert compared == [(auth.hash_key(acme.member.key), auth.hash_key(acme.member.key))]
    lookup = statements[0]
    assert "api_keys.prefix = " in lookup and "key_hash =" not in lookup


def test_the_store_of_one_tenant_never_returns_another_tenants_rows(acme, globex, engine):
    with engine.connect() as conn:
        globex_key_ids = (
            conn.execute(sa.select(api_keys.c.id).where(api_keys.c.tenant_id == uuid.UUID(globex.id)))
            .scalars()
            .all()
        )
        store = TenantStore(conn, uuid.UUID(acme.id))
        assert globex_key_ids
        assert all(store.api_keys.get(key_id) is None for key_id in globex_key_ids)
        own = conn.execute(
            sa.select(api_keys.c.id).where(api_keys.c.tenant_id == uuid.UUID(acme.id))
        ).scalars()
        assert all(store.api_keys.get(key_id) is not None for key_id in own)
