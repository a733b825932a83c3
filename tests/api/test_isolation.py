"""The isolation matrix: every ``/v1`` route of the authz table, called by each kind of caller.

Cases: the tenant's owner and admin (may do everything), ``member`` (owns the world's agent, sessions
and spare key), ``member2`` (another member of the same tenant) and ``stranger`` (another tenant's
owner). Whatever a caller may not see is 404 and changes nothing; a write the caller may not make on
what they may read is 403 ``forbidden`` and changes nothing (issue 37 item 4: one rule for who may
write); responses never carry ids the caller may not see.
"""

from __future__ import annotations

import json

import pytest

from hango.authz import TABLE, WRITES_OF_READABLE
from tests.api.examples import API_ROUTES, BY_ROUTE, Example, route_id
from tests.support.clients import error_code
from tests.support.world import World, add_usage, snapshot

CASES = ("owner", "admin", "member", "member2", "stranger")


def expected_status(example: Example, case: str) -> int:
    """What the authz rule of the example's route lets ``case`` get."""
    rule = TABLE[(example.method, example.rule)]
    refused = 403 if example.method != "GET" and rule in WRITES_OF_READABLE else 404
    if case == "stranger":
        return 404 if example.has_object else (example.stranger or example.ok)
    if case == "member2":
        return example.ok if rule in ("tenant", "agent:read", "mcp_server") else refused
    if case == "member":
        return refused if rule in ("admin", "member:admin", "mcp_server:admin", "agent:admin") else example.ok
    return example.ok


def _ids_in(text: str, ids: set[str]) -> set[str]:
    return {ident for ident in ids if ident in text}


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("route", API_ROUTES, ids=route_id)
def test_isolation_matrix(route, case, caller, world: World, engine):
    example = BY_ROUTE.get(route)
    assert example is not None, f"{route} has no example request in tests/api/examples.py"
    path, body = example.for_world(world.values())
    before = snapshot(engine, world.tenant)

    response = caller(case).request(example.method, path, json=body)

    status = expected_status(example, case)
    assert response.status_code == status, response.get_data(as_text=True)
    text = response.get_data(as_text=True)
    if status in (403, 404):
        assert error_code(response) == {403: "forbidden", 404: "not_found"}[status]
    if status in (403, 404) or case == "stranger":
        assert snapshot(engine, world.tenant) == before
    if case == "stranger":
        asked = _ids_in(path + json.dumps(body), world.all_ids())
        assert _ids_in(text, world.all_ids()) - asked == set()
    if case == "member2":
        assert _ids_in(text, world.member_private()) == set()
    if example.shows and case in ("owner", "admin", "member") and example.method == "GET":
        assert example.shows.format(**world.values()) in text


def test_one_rule_for_who_may_write(acme, world: World):
    """Issue 37 item 4: what a member reads but may not change answers 403 on every write route."""
    agent = f"/v1/agents/{world.agent}"
    assert acme.member2.get(agent).status_code == 200
    assert acme.member2.get(f"{agent}/context-overrides").status_code == 200
    session = acme.member2.post("/v1/sessions", json={"agent_id": world.agent}).get_json()["id"]
    grep = {"overrides": [{"part": "tool:grep", "action": "exclude"}]}
    writes = [
        acme.member2.patch(agent, json={"name": "renamed"}),
        acme.member2.put(f"{agent}/context-overrides", json=grep),
        acme.member2.post(f"/v1/sessions/{session}/context/save", json={"agent": grep}),
        acme.member.patch("/v1/tenant", json={"token_quota": 5}),
        acme.member.delete(f"/v1/members/{acme.member2.user_id}"),
    ]
    answers = [(r.status_code, error_code(r)) for r in writes]
    assert set(answers) == {(403, "forbidden")}


def test_a_member_lists_only_their_own_sessions_and_keys(acme, world: World):
    mine = acme.member.get("/v1/sessions").get_json()["items"]
    theirs = acme.member2.get("/v1/sessions").get_json()["items"]
    everyone = acme.admin.get("/v1/sessions").get_json()["items"]
    assert {s["id"] for s in mine} == {world.session, world.other_session}
    assert theirs == []
    assert {s["id"] for s in everyone} == {world.session, world.other_session}
    keys = acme.member2.get("/v1/api-keys").get_json()["items"]
    assert {k["user_id"] for k in keys} == {acme.member2.user_id}


def test_another_tenant_sees_none_of_the_usage(acme, globex, world: World, engine):
    add_usage(engine, world, input_tokens=100, output_tokens=50)
    assert acme.owner.get("/v1/usage").get_json()["used_tokens"] == 150
    body = globex.owner.get("/v1/usage").get_json()
    assert body["used_tokens"] == 0
    assert body["totals"] == []
