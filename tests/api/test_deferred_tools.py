"""Deferred tools (issue 52): an agent's stored deferral, its checks, and a session's revealed tools."""

from __future__ import annotations

import uuid

import jsonschema_rs
import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hango.agent import options
from hango.agent.deferral import Deferral, defers_everything
from hango.agent.parts import MAX_PART_CHARS, TOOL_PART_PATTERN, MalformedPart, kind_of
from hango.agent.state import AgentConfig
from hango.db.schema import audit_log
from hango.store import TenantStore
from tests.support.clients import Tenant, error_code
from tests.support.mcp import TIME_TOOLS, attach
from tests.support.world import World

TIME_PARTS = [f"tool:time/{tool}" for tool in TIME_TOOLS]
NOTHING = {"tools": [], "auto_percent": None, "native": False}


def _agent(who, **fields) -> dict:
    created = who.post("/v1/agents", json={"name": "deferring", "model": "offline/echo", **fields})
    assert created.status_code == 201, created.get_json()
    return created.get_json()


def _refusal(response) -> tuple[str, str]:
    assert response.status_code == 422, response.get_json()
    return error_code(response), response.get_json()["error"]["message"]


# -- the value ----------------------------------------------------------------------------------


def test_a_deferral_names_a_servers_tools_through_the_server_part():
    deferral = Deferral(("tool:time/*", "tool:grep"))

    assert deferral.names_part("tool:time/convert_time") and deferral.names_part("tool:time/*")
    assert deferral.names_part("tool:grep")
    assert not deferral.names_part("tool:git/git_status") and not deferral.names_part("tool:glob")
    assert not Deferral(("tool:time/convert_time",)).names_part("tool:time/get_current_time")


def test_a_stored_deferral_reads_back_and_a_missing_one_defers_nothing():
    stored = {"tools": ["tool:time/*"], "auto_percent": 20}

    assert Deferral.of(stored) == Deferral(("tool:time/*",), 20)
    assert Deferral.of(stored).as_dict() == stored  # stored without the choice: hango's own search
    assert Deferral.of({**stored, "native": True}) == Deferral(("tool:time/*",), 20, native=True)
    assert Deferral.of(None) == Deferral.of({}) == Deferral() and not Deferral.of(None)
    assert Deferral(auto_percent=5) and Deferral(("tool:grep",))


def test_defers_everything_only_when_no_tool_of_the_agent_stays_loaded():
    parts = ["tool:grep", *TIME_PARTS]

    assert defers_everything(Deferral(("tool:grep", "tool:time/*")), parts)
    assert not defers_everything(Deferral(("tool:time/*",)), parts)
    assert not defers_everything(Deferral(("tool:grep", TIME_PARTS[0])), parts)
    assert not defers_everything(Deferral(("tool:grep",)), [])


# -- the API ------------------------------------------------------------------------------------


def test_an_agent_defers_a_server_a_tool_and_auto_and_reads_it_back(acme: Tenant, world: World, engine):
    defer = {"tools": ["tool:time/*", "tool:grep", "tool:git/git_status"], "auto_percent": 15}

    patched = acme.member.patch(f"/v1/agents/{world.agent}", json={"tools": ["grep", "glob"], "defer": defer})

    assert patched.status_code == 200, patched.get_json()
    read = {**defer, "native": False}
    assert patched.get_json()["defer"] == read
    assert acme.member.get(f"/v1/agents/{world.agent}").get_json()["defer"] == read
    listed = acme.member.get("/v1/agents").get_json()["items"]
    assert {a["id"]: a["defer"] for a in listed}[world.agent] == read
    with engine.connect() as conn:
        row = TenantStore(conn, uuid.UUID(acme.id)).agents.get(uuid.UUID(world.agent))
        audited = conn.execute(
            sa.select(audit_log.c.detail).where(audit_log.c.action == "agent.update")
        ).scalar_one()
    assert AgentConfig.from_row(row).defer == Deferral(tuple(defer["tools"]), 15)
    assert audited == {"fields": ["defer", "tools"]}  # the field's name, never what it holds


def test_an_agent_defers_nothing_unless_told_and_a_patch_replaces_the_whole_deferral(acme: Tenant):
    agent = _agent(acme.member)
    assert agent["defer"] == NOTHING

    path = f"/v1/agents/{agent['id']}"
    assert acme.member.patch(path, json={"defer": {"tools": ["tool:grep"]}}).get_json()["defer"] == {
        "tools": ["tool:grep"],
        "auto_percent": None,
        "native": False,
    }
    assert acme.member.patch(path, json={"defer": {"auto_percent": 100}}).get_json()["defer"] == {
        "tools": [],
        "auto_percent": 100,
        "native": False,
    }
    assert acme.member.patch(path, json={"name": "renamed"}).get_json()["defer"]["auto_percent"] == 100


def test_a_deferral_that_would_leave_no_tool_loaded_is_refused_with_422_with_built_ins_only(acme: Tenant):
    every = [f"tool:{name}" for name in options.BUILTIN_TOOLS]

    code, message = _refusal(acme.member.post("/v1/agents", json={"name": "x", "defer": {"tools": every}}))
    assert code == "defers_every_tool" and "at least one tool must stay loaded" in message

    agent = _agent(acme.member, tools=["grep", "glob"], defer={"tools": ["tool:grep"]})
    path = f"/v1/agents/{agent['id']}"
    code, _ = _refusal(acme.member.patch(path, json={"defer": {"tools": ["tool:grep", "tool:glob"]}}))
    assert code == "defers_every_tool"
    # the tools alone can leave only deferred ones: the merged agent is checked
    code, _ = _refusal(acme.member.patch(path, json={"tools": ["grep"]}))
    assert code == "defers_every_tool"
    assert acme.member.get(path).get_json()["tools"] == ["grep", "glob"]  # nothing half-written
    assert acme.member.patch(path, json={"tools": ["glob"]}).status_code == 200
    # auto never defers a built-in, so it alone is no refusal
    assert _agent(acme.member, tools=[], defer={"auto_percent": 1})["defer"]["auto_percent"] == 1


def test_a_deferral_that_would_leave_no_tool_loaded_is_refused_with_422_with_a_server_attached(acme: Tenant):
    agent = _agent(acme.owner, tools=["grep"])
    attach(acme.owner, agent["id"], "time", catalog="time")  # the reference mcp-server-time
    path = f"/v1/agents/{agent['id']}"

    both = {"defer": {"tools": ["tool:grep", "tool:time/*"]}}
    assert _refusal(acme.owner.patch(path, json=both))[0] == "defers_every_tool"
    one_by_one = {"defer": {"tools": ["tool:grep", *TIME_PARTS]}}
    assert _refusal(acme.owner.patch(path, json=one_by_one))[0] == "defers_every_tool"
    assert _refusal(acme.owner.patch(path, json={"tools": [], "defer": {"tools": ["tool:time/*"]}}))[0] == (
        "defers_every_tool"
    )

    kept = acme.owner.patch(path, json={"defer": {"tools": ["tool:grep", TIME_PARTS[0]]}})
    assert kept.status_code == 200, kept.get_json()
    assert acme.owner.patch(path, json={"tools": [], "defer": {"tools": ["tool:time/*"]}}).status_code == 422
    assert acme.owner.get(path).get_json()["defer"]["tools"] == ["tool:grep", TIME_PARTS[0]]


@pytest.mark.parametrize(
    ("defer", "reason"),
    [
        ({"tools": ["system:agent"]}, "is not a tool part id"),
        ({"tools": ["message:3"]}, "is not a tool part id"),
        ({"tools": ["tool:Bad Server/x"]}, "is not a tool part id"),
        ({"tools": ["grep"]}, "is not a tool part id"),
        ({"tools": ["tool:grep", "tool:grep"]}, "must not repeat"),
        ({"tools": [f"tool:s{i}/*" for i in range(1001)]}, "1000"),
        ({"auto_percent": 0}, "1"),
        ({"auto_percent": 101}, "100"),
        ({"auto_percent": "50"}, "integer"),
        ({"tools": "tool:grep"}, "list"),
    ],
)
def test_bad_deferral_entries_are_422_with_the_reason(acme: Tenant, world: World, defer, reason):
    response = acme.member.patch(f"/v1/agents/{world.agent}", json={"tools": ["grep"], "defer": defer})

    assert response.status_code == 422, response.get_json()
    assert error_code(response) == "invalid"
    assert reason in str(response.get_json()["error"]["details"]["json"]["defer"])
    assert acme.member.get(f"/v1/agents/{world.agent}").get_json()["defer"] == NOTHING


def test_the_openapi_document_gives_the_deferral_its_shape(session_app):
    schemas = session_app.test_client().get("/openapi.json").get_json()["components"]["schemas"]
    defer = schemas["Defer"]["properties"]

    assert defer["tools"]["maxItems"] == 1000 and defer["tools"]["uniqueItems"] is True
    assert defer["tools"]["items"]["pattern"].startswith("^tool:")
    assert (defer["auto_percent"]["minimum"], defer["auto_percent"]["maximum"]) == (1, 100)


@settings(max_examples=300, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(
    st.text(alphabet=st.characters(codec="utf-8"), max_size=40)
    | st.from_regex(r"\Atool:[a-z0-9_./*-]{0,40}", fullmatch=True)
    | st.from_regex(r"\A(tool|message|system):", fullmatch=False)
)
def test_the_deferred_part_pattern_is_exactly_the_tool_grammar_the_server_reads(candidate: str) -> None:
    schema = {"type": "string", "pattern": TOOL_PART_PATTERN, "maxLength": MAX_PART_CHARS}
    try:
        accepted = kind_of(candidate) == "tool"
    except MalformedPart:
        accepted = False
    assert jsonschema_rs.validator_for(schema).is_valid(candidate) == accepted


# -- the provider's own deferred loading ----------------------------------------------------------


def test_a_native_deferral_is_kept_for_an_anthropic_agent_and_refused_with_422_for_an_openai_one(
    acme: Tenant,
):
    native = {"tools": ["tool:grep"], "native": True}
    agent = _agent(acme.member, model="anthropic/claude-test", tools=["grep", "glob"], defer=native)
    assert agent["defer"] == {"tools": ["tool:grep"], "auto_percent": None, "native": True}

    created = acme.member.post("/v1/agents", json={"name": "x", "model": "openai/gpt-test", "defer": native})
    code, message = _refusal(created)
    assert code == "native_deferral_needs_anthropic" and "anthropic/" in message
    path = f"/v1/agents/{agent['id']}"
    # the model alone can leave a native deferral on another provider: the merged agent is checked
    code, _ = _refusal(acme.member.patch(path, json={"model": "openai/gpt-test"}))
    assert code == "native_deferral_needs_anthropic"
    assert acme.member.get(path).get_json()["model"] == "anthropic/claude-test"  # nothing half-written
    switched = acme.member.patch(path, json={"model": "openai/gpt-test", "defer": {"tools": ["tool:grep"]}})
    assert switched.status_code == 200 and switched.get_json()["defer"]["native"] is False
