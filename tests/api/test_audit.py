"""The audit log: one row per mutation, a closed action set, no secrets or content, owner/admin reads."""

from __future__ import annotations

import uuid

import pytest
import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError

from hango.db.schema import audit_log
from hango.store import TenantStore
from tests.api.examples import BY_ROUTE, WRITE_ROUTES, route_id
from tests.support.world import MEMORY_CONTENT, SKILL_BODY, SYSTEM_PROMPT, World


def _audit_rows(engine: sa.Engine) -> list[sa.Row]:
    with engine.connect() as conn:
        return list(conn.execute(sa.select(audit_log).order_by(audit_log.c.created_at, audit_log.c.id)))


@pytest.mark.parametrize("route", WRITE_ROUTES, ids=route_id)
def test_every_mutating_route_writes_exactly_one_audit_row(route, acme, world: World, engine):
    example = BY_ROUTE[route]
    path, body = example.for_world(world.values())
    before = {row.id for row in _audit_rows(engine)}

    response = acme.admin.request(example.method, path, json=body)

    assert response.status_code == example.ok, response.get_json()
    new = [row for row in _audit_rows(engine) if row.id not in before]
    assert [row.action for row in new] == [example.action]
    assert new[0].tenant_id == uuid.UUID(acme.id)
    assert new[0].actor_user_id == uuid.UUID(acme.admin.user_id)
    me = acme.admin.get("/v1/me").get_json()
    assert new[0].api_key_id == uuid.UUID(me["api_key_id"])


def test_a_refused_mutation_writes_no_audit_row(acme, world: World, engine):
    before = len(_audit_rows(engine))
    assert acme.member2.delete(f"/v1/agents/{world.agent}").status_code == 403
    assert (
        acme.owner.delete(f"/v1/api-keys/{acme.owner.get('/v1/me').get_json()['api_key_id']}").status_code
        == 409
    )
    assert len(_audit_rows(engine)) == before


def test_the_database_rejects_an_unknown_action(acme, engine):
    with pytest.raises(IntegrityError), engine.begin() as conn:
        conn.execute(
            sa.insert(audit_log).values(
                id=uuid.uuid4(), tenant_id=uuid.UUID(acme.id), action="agent.explode", object_type="agent"
            )
        )


def test_the_store_refuses_an_unknown_action_before_the_database(acme, engine):
    with engine.begin() as conn, pytest.raises(ValueError, match="unknown audit action"):
        TenantStore(conn, uuid.UUID(acme.id)).audit.record(
            "agent.explode", "agent", None, actor_user_id=None, api_key_id=None
        )


def test_no_secret_or_content_reaches_the_audit_log(acme, world: World, engine):
    owner = acme.owner
    agent = owner.post("/v1/agents", json={"name": "a", "system_prompt": "PROMPT-SECRET-1"}).get_json()
    owner.patch(f"/v1/agents/{agent['id']}", json={"system_prompt": "PROMPT-SECRET-2"})
    owner.put(f"/v1/agents/{agent['id']}/memory/notes.md", json={"content": "MEMORY-SECRET"})
    owner.post(f"/v1/agents/{agent['id']}/skills", json={"name": "s", "body": "SKILL-SECRET"})
    owner.put(f"/v1/agents/{agent['id']}/skills/s", json={"body": "SKILL-SECRET-2"})
    owner.delete(f"/v1/agents/{world.agent}/memory/AGENTS.md")
    owner.delete(f"/v1/agents/{world.agent}/skills/review")
    key = owner.post("/v1/api-keys", json={"name": "ci"}).get_json()["api_key"]
    secrets = [
        "PROMPT-SECRET-1",
        "PROMPT-SECRET-2",
        "MEMORY-SECRET",
        "SKILL-SECRET",
        key,
        key.split("_", 2)[2],
        MEMORY_CONTENT,
        SKILL_BODY,
        SYSTEM_PROMPT,
    ]
    logged = " ".join(repr(tuple(row)) for row in _audit_rows(engine))
    served = owner.get("/v1/audit?limit=1000").get_data(as_text=True)
    assert "memory.put" in logged and "/memories/notes.md" in logged
    assert [s for s in secrets if s in logged or s in served] == []


def test_audit_is_for_owners_and_admins_and_filters(acme, world: World):
    acme.owner.post("/v1/agents", json={"name": "one"})
    acme.admin.post("/v1/agents", json={"name": "two"})
    acme.admin.put(f"/v1/agents/{world.agent}/memory/x.md", json={"content": "x"})
    assert acme.member.get("/v1/audit").status_code == 404

    created = acme.admin.get("/v1/audit?action=agent.create").get_json()["items"]
    assert [e["action"] for e in created] == ["agent.create", "agent.create"]
    assert created[1]["actor_user_id"] == acme.owner.user_id  # newest first: the admin's, then the owner's
    on_agent = acme.owner.get(f"/v1/audit?object_type=agent&object_id={world.agent}").get_json()["items"]
    assert [(e["action"], e["detail"]) for e in on_agent] == [("memory.put", {"path": "/memories/x.md"})]
    assert acme.owner.get("/v1/audit?action=agent.explode").status_code == 422


def test_the_audit_log_lists_newest_first_and_names_actors_by_email(acme, world: World):
    for name in ("first", "second", "third"):
        assert acme.admin.post("/v1/agents", json={"name": name}).status_code == 201
    acme.owner.patch("/v1/tenant", json={"token_quota": 5000})

    entries = acme.owner.get("/v1/audit").get_json()["items"]

    assert [e["action"] for e in entries[:4]] == [
        "tenant.update",
        "agent.create",
        "agent.create",
        "agent.create",
    ]
    assert [e["created_at"] for e in entries] == sorted((e["created_at"] for e in entries), reverse=True)
    emails = {m["user_id"]: m["email"] for m in acme.owner.get("/v1/members").get_json()["items"]}
    assert [e["actor_email"] for e in entries[:2]] == [emails[acme.owner.user_id], emails[acme.admin.user_id]]
    assert "@" in entries[0]["actor_email"]
    assert entries[0]["actor_user_id"] == acme.owner.user_id
