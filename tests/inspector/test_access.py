"""Who may see and change context: the authz rows, tenant isolation of ``context_overrides``, the audit rows.

Every route's row is also covered by the isolation matrix (``tests/api/test_isolation.py``) through the
examples in ``tests/api/examples.py``; the cases the spec names are spelled out here.
"""

from __future__ import annotations

import uuid

import pytest
import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError

from hango.authz import AGENT, SESSION, TABLE
from hango.db.schema import audit_log, context_overrides
from hango.store import TenantStore
from hango.store.context_overrides import StoredOverride, Target
from tests.api.examples import BY_ROUTE
from tests.inspector.conftest import OFFLINE, Lab, assistant, excluding, override_set, user
from tests.support.clients import Tenant, error_code
from tests.support.world import snapshot

# Each inspector route follows the rule of the route the spec names.
FOLLOWS = {
    ("GET", f"{SESSION}/context"): ("GET", f"{SESSION}/messages"),
    ("POST", f"{SESSION}/context/try"): ("GET", f"{SESSION}/messages"),
    ("GET", f"{SESSION}/context-overrides"): ("GET", f"{SESSION}/messages"),
    ("PUT", f"{SESSION}/context-overrides"): ("GET", f"{SESSION}/messages"),
    ("GET", f"{AGENT}/context-overrides"): ("GET", AGENT),
    ("PUT", f"{AGENT}/context-overrides"): ("PATCH", AGENT),
}
REPLACEMENT = "REPLACEMENT-TEXT-NEVER-AUDITED"


def test_every_inspector_route_has_its_rule_and_an_example_for_the_isolation_matrix():
    assert {route: TABLE[route] for route in FOLLOWS} == {
        route: TABLE[model] for route, model in FOLLOWS.items()
    }
    assert all(route in BY_ROUTE for route in FOLLOWS)


@pytest.fixture
def members(lab: Lab) -> tuple[str, str]:
    """An agent and a session of ``member`` (not ``member2``)."""
    agent = lab.agent(model=OFFLINE, owner="member")
    return agent, lab.session(agent, [user("mine"), assistant("yours")], owner="member")


def test_a_member_reading_another_members_session_context_gets_404(lab: Lab, members):
    _, session = members
    other = lab.as_("member2")

    for path in (f"/v1/sessions/{session}/context", f"/v1/sessions/{session}/context-overrides"):
        response = other.get(path)
        assert response.status_code == 404 and error_code(response) == "not_found"
    assert other.post(f"/v1/sessions/{session}/context/try", json={}).status_code == 404
    assert (
        other.put(f"/v1/sessions/{session}/context-overrides", json=excluding("message:2")).status_code == 404
    )
    assert lab.as_("member").get(f"/v1/sessions/{session}/context").status_code == 200
    assert lab.as_("admin").get(f"/v1/sessions/{session}/context").status_code == 200


def test_a_member_changing_another_members_agent_overrides_gets_403(lab: Lab, members):
    agent, _ = members
    other = lab.as_("member2")

    response = other.put(f"/v1/agents/{agent}/context-overrides", json=excluding("tool:grep"))

    assert response.status_code == 403 and error_code(response) == "forbidden"  # the agent is theirs to read
    assert other.get(f"/v1/agents/{agent}/context-overrides").status_code == 200  # reading follows GET agent
    assert (
        lab.as_("member")
        .put(f"/v1/agents/{agent}/context-overrides", json=excluding("tool:grep"))
        .status_code
        == 200
    )
    assert (
        other.get(f"/v1/agents/{agent}/context-overrides").get_json()["overrides"][0]["part"] == "tool:grep"
    )


def test_another_tenant_cannot_read_or_change_the_overrides(lab: Lab, globex: Tenant):
    agent = lab.agent(model=OFFLINE)
    session = lab.session(agent, [user("a"), assistant("b")])
    lab.put_agent(agent, excluding("tool:grep"))
    lab.put_session(session, excluding("message:2"))
    stranger = globex.owner.__class__(
        lab.who.client, globex.owner.key, globex.id, globex.owner.user_id, "owner"
    )
    before = snapshot(lab.engine, lab.tenant.id)

    responses = [
        stranger.get(f"/v1/agents/{agent}/context-overrides"),
        stranger.put(f"/v1/agents/{agent}/context-overrides", json={"overrides": []}),
        stranger.get(f"/v1/sessions/{session}/context-overrides"),
        stranger.put(f"/v1/sessions/{session}/context-overrides", json={"overrides": []}),
        stranger.get(f"/v1/sessions/{session}/context"),
        stranger.post(f"/v1/sessions/{session}/context/try", json={}),
    ]

    assert [r.status_code for r in responses] == [404] * 6
    assert snapshot(lab.engine, lab.tenant.id) == before


def _two_tenants(lab: Lab, globex: Tenant) -> dict[str, uuid.UUID]:
    """Overrides on two agents and two sessions of tenant A, and on one agent and session of tenant B."""
    ids: dict[str, uuid.UUID] = {}
    for name in ("a", "b"):
        ids[f"agent_{name}"] = uuid.UUID(lab.agent(model=OFFLINE))
        ids[f"session_{name}"] = uuid.UUID(lab.session(str(ids[f"agent_{name}"]), [user("x")]))
    owner = uuid.UUID(lab.tenant.owner.user_id)
    lab.store(lambda s: _seed(s, ids["agent_a"], ids["session_a"], owner, "A"))
    lab.store(lambda s: _seed(s, ids["agent_b"], ids["session_b"], owner, "B"))
    with lab.engine.begin() as conn:
        store = TenantStore(conn, uuid.UUID(globex.id))
        theirs = uuid.UUID(globex.owner.user_id)
        agent = store.agents.create(theirs, name="theirs", model=OFFLINE)
        session = store.sessions.create(agent.id, theirs, "theirs")
        _seed(store, agent.id, session.id, theirs, "G")
    ids["agent_g"], ids["session_g"] = agent.id, session.id
    return ids


def _seed(store: TenantStore, agent: uuid.UUID, session: uuid.UUID, by: uuid.UUID, mark: str) -> None:
    store.context_overrides.replace(
        Target("agent", agent), [StoredOverride("system:agent", "replace", f"agent {mark}", None)], by
    )
    store.context_overrides.replace(
        Target("session", session), [StoredOverride("message:1", "replace", f"session {mark}", None)], by
    )


def test_for_run_never_returns_another_tenants_or_another_agents_rows(lab: Lab, globex: Tenant):
    ids = _two_tenants(lab, globex)

    with lab.engine.connect() as conn:
        mine, theirs = TenantStore(conn, lab.tenant_id), TenantStore(conn, uuid.UUID(globex.id))
        agent, session = mine.context_overrides.for_run(ids["agent_a"], ids["session_a"])
        assert [o.replacement for o in agent] == ["agent A"]
        assert [o.replacement for o in session] == ["session A"]
        assert theirs.context_overrides.for_run(ids["agent_a"], ids["session_a"]) == ([], [])
        assert mine.context_overrides.for_run(ids["agent_g"], ids["session_g"]) == ([], [])
        assert theirs.context_overrides.list(Target("agent", ids["agent_a"])) == []
        assert mine.context_overrides.list(Target("session", ids["session_g"])) == []
        assert mine.context_overrides.lock_target(Target("agent", ids["agent_g"])) is False
        assert mine.context_overrides.count_active() == 4


def test_replace_never_touches_another_tenants_rows(lab: Lab, globex: Tenant):
    ids = _two_tenants(lab, globex)

    with lab.engine.begin() as conn:
        TenantStore(conn, lab.tenant_id).context_overrides.replace(
            Target("agent", ids["agent_g"]), [], uuid.uuid4()
        )

    with lab.engine.connect() as conn:
        theirs = TenantStore(conn, uuid.UUID(globex.id)).context_overrides
        assert [o.replacement for o in theirs.list(Target("agent", ids["agent_g"]))] == ["agent G"]


@pytest.mark.parametrize(
    ("values", "broken"),
    [
        ({"target": "agent", "part": "system:agent", "action": "drop"}, "bad action"),
        ({"target": "both", "part": "system:agent", "action": "exclude"}, "both targets set"),
        ({"target": "none", "part": "system:agent", "action": "exclude"}, "no target set"),
        ({"target": "agent", "part": "system:agent", "action": "replace"}, "replace without replacement"),
        (
            {"target": "agent", "part": "system:agent", "action": "exclude", "replacement": "x"},
            "exclude with text",
        ),
        ({"target": "agent", "part": "message:1", "action": "exclude"}, "agent row with a message part"),
        ({"target": "session", "part": "tool:ls", "action": "exclude"}, "session row with a tool part"),
        (
            {
                "target": "session",
                "part": "message:1",
                "action": "replace",
                "replacement": "x",
                "paired_from": "message:2",
            },
            "a companion that replaces",
        ),
    ],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_context_overrides_check_constraints(lab: Lab, values: dict, broken: str):
    agent = uuid.UUID(lab.agent(model=OFFLINE))
    session = uuid.UUID(lab.session(str(agent)))
    target = values.pop("target")
    row = {
        "id": uuid.uuid4(),
        "tenant_id": lab.tenant_id,
        "agent_id": agent if target in ("agent", "both") else None,
        "session_id": session if target in ("session", "both") else None,
        "created_by": uuid.UUID(lab.tenant.owner.user_id),
        **values,
    }

    with pytest.raises(IntegrityError, match="check"), lab.engine.begin() as conn:
        conn.execute(sa.insert(context_overrides).values(**row))


def context_audit(query: sa.Select) -> sa.Select:
    """Only the inspector's audit rows (the fixtures' set-up writes others), oldest first."""
    return query.where(audit_log.c.action.like("context.%")).order_by(audit_log.c.created_at)


def test_both_puts_write_a_context_override_audit_row_and_try_writes_context_try(lab: Lab):
    agent = lab.agent()
    session = lab.session(agent, [user("a"), assistant("b"), user("c")])

    lab.put_agent(agent, override_set(["tool:grep"], {"system:agent": REPLACEMENT}))
    lab.put_session(session, override_set(replace={"message:2": REPLACEMENT}))
    lab.try_(session, {"exclude": ["message:2"], "replace": {"system:skills": REPLACEMENT}, "message": "d"})

    with lab.engine.connect() as conn:
        rows = conn.execute(context_audit(sa.select(audit_log))).all()
    assert [(r.action, r.object_type, r.object_id) for r in rows] == [
        ("context.override", "agent", agent),
        ("context.override", "session", session),
        ("context.try", "session", session),
    ]
    assert rows[0].detail == {
        "parts": [{"part": "system:agent", "action": "replace"}, {"part": "tool:grep", "action": "exclude"}],
        "added": [],
        "cleared": [],
    }
    assert rows[2].detail["excluded"] == ["tool:grep", "message:2"]  # in part order
    assert rows[2].detail["model"] == "anthropic/claude-test"
    assert all(r.actor_user_id == uuid.UUID(lab.tenant.owner.user_id) for r in rows)
    assert REPLACEMENT not in repr([tuple(r) for r in rows])
    assert REPLACEMENT not in lab.who.get("/v1/audit").get_data(as_text=True)


def test_a_failed_try_is_audited_too(lab: Lab):
    session = lab.session(lab.agent(), [user("a")])
    lab.fake.fail(500)

    assert lab.try_(session).status_code == 502

    with lab.engine.connect() as conn:
        rows = conn.execute(context_audit(sa.select(audit_log.c.action, audit_log.c.detail))).all()
    assert [(r.action, r.detail["outcome"]) for r in rows] == [("context.try", "provider_error")]
