"""Members and API keys: roles owners and admins may manage, the last owner, the last key."""

from __future__ import annotations

from tests.support.clients import error_code
from tests.support.world import World


def _my_key_id(caller) -> str:
    return caller.get("/v1/me").get_json()["api_key_id"]


def test_adding_a_member_then_changing_their_role(acme):
    added = acme.admin.post("/v1/members", json={"email": "New@Acme.test", "name": "Nu"})
    assert added.status_code == 201
    assert added.get_json()["email"] == "new@acme.test"
    assert added.get_json()["role"] == "member"
    changed = acme.admin.post("/v1/members", json={"email": "new@acme.test", "role": "admin"})
    assert changed.status_code == 200
    assert changed.get_json()["user_id"] == added.get_json()["user_id"]
    entries = acme.owner.get("/v1/audit?action=member.create").get_json()["items"]
    assert [e["detail"] for e in entries] == [
        {"role": "admin", "previous_role": "member"},
        {"role": "member"},
    ]


def test_only_an_owner_makes_changes_or_removes_an_owner(acme):
    owner_email = "owner@acme.test"
    for response in (
        acme.admin.post("/v1/members", json={"email": "boss@acme.test", "role": "owner"}),
        acme.admin.post("/v1/members", json={"email": owner_email, "role": "member"}),
        acme.admin.delete(f"/v1/members/{acme.owner.user_id}"),
    ):
        assert response.status_code == 422
        assert error_code(response) == "role_not_allowed"
    assert (
        acme.owner.post("/v1/members", json={"email": "boss@acme.test", "role": "owner"}).status_code == 201
    )


def test_the_last_owner_cannot_leave_or_step_down(acme):
    for response in (
        acme.owner.delete(f"/v1/members/{acme.owner.user_id}"),
        acme.owner.post("/v1/members", json={"email": "owner@acme.test", "role": "admin"}),
    ):
        assert response.status_code == 409
        assert error_code(response) == "last_owner"
    acme.owner.post("/v1/members", json={"email": "admin@acme.test", "role": "owner"})
    assert (
        acme.owner.post("/v1/members", json={"email": "owner@acme.test", "role": "admin"}).status_code == 200
    )
    assert acme.admin.delete(f"/v1/members/{acme.owner.user_id}").status_code == 204


def test_removing_a_member_removes_their_keys(acme):
    assert acme.admin.delete(f"/v1/members/{acme.member.user_id}").status_code == 204
    assert acme.member.get("/v1/me").status_code == 401
    assert acme.admin.delete(f"/v1/members/{acme.member.user_id}").status_code == 404


def test_a_new_key_is_shown_once_and_works(acme, client):
    created = acme.member.post("/v1/api-keys", json={"name": "laptop"})
    assert created.status_code == 201
    body = created.get_json()
    assert body["user_id"] == acme.member.user_id
    assert body["api_key"].startswith(f"hgo_{body['prefix']}_")
    listed = acme.member.get("/v1/api-keys").get_data(as_text=True)
    assert body["id"] in listed and body["api_key"] not in listed and 'api_key"' not in listed
    me = client.get("/v1/me", headers={"Authorization": f"Bearer {body['api_key']}"})
    assert me.get_json()["api_key_id"] == body["id"]


def test_rate_limits_and_other_members_keys_are_for_owners_and_admins(acme, world: World):
    refused = [
        acme.member.post("/v1/api-keys", json={"rate_limit_per_minute": 10}),
        acme.member.patch(f"/v1/api-keys/{world.key}", json={"rate_limit_per_minute": 10}),
        acme.member.post("/v1/api-keys", json={"user_id": acme.member2.user_id}),
        acme.admin.post("/v1/api-keys", json={"user_id": acme.owner.user_id}),
    ]
    assert [(r.status_code, error_code(r)) for r in refused] == [(422, "role_not_allowed")] * 4
    unknown = acme.admin.post("/v1/api-keys", json={"user_id": world.agent})
    assert (unknown.status_code, error_code(unknown)) == (422, "unknown_user")
    patched = acme.admin.patch(f"/v1/api-keys/{world.key}", json={"rate_limit_per_minute": 10})
    assert patched.get_json()["rate_limit_per_minute"] == 10
    for_member = acme.owner.post("/v1/api-keys", json={"user_id": acme.member.user_id, "name": "ops"})
    assert for_member.status_code == 201
    assert for_member.get_json()["user_id"] == acme.member.user_id


def test_your_own_last_key_cannot_be_revoked(acme):
    own = acme.owner.delete(f"/v1/api-keys/{_my_key_id(acme.owner)}")
    assert (own.status_code, error_code(own)) == (409, "last_api_key")
    assert acme.owner.get("/v1/me").status_code == 200
    # Someone else's last key is not "your own": an admin may revoke it.
    assert acme.admin.delete(f"/v1/api-keys/{_my_key_id(acme.member2)}").status_code == 204
    assert error_code(acme.member2.get("/v1/me")) == "revoked_api_key"


def test_revoking_the_key_in_use_works_when_another_remains(acme, world: World):
    current = _my_key_id(acme.member)
    assert acme.member.delete(f"/v1/api-keys/{current}").status_code == 204
    assert acme.member.get("/v1/me").status_code == 401
    listed = acme.owner.get("/v1/api-keys").get_json()["items"]
    revoked = {k["id"]: k["revoked_at"] for k in listed}
    assert revoked[current] is not None
    assert revoked[world.key] is None


def test_tenant_settings_are_read_by_all_and_changed_by_owners_and_admins(acme):
    assert acme.member.get("/v1/tenant").get_json()["token_quota"] is None
    assert acme.member.patch("/v1/tenant", json={"token_quota": 5}).status_code == 403
    changed = acme.admin.patch("/v1/tenant", json={"token_quota": 5000, "trace_llm_content": True})
    assert changed.status_code == 200
    assert changed.get_json()["token_quota"] == 5000
    assert changed.get_json()["trace_llm_content"] is True
    assert acme.owner.patch("/v1/tenant", json={"token_quota": None}).get_json()["token_quota"] is None
    entries = acme.owner.get("/v1/audit?action=tenant.update").get_json()["items"]
    assert [e["detail"]["fields"] for e in entries] == [["token_quota"], ["token_quota", "trace_llm_content"]]
