"""One override semantics, decided by the server: PUT and try screen alike, ids, order, scope, ETags."""

from __future__ import annotations

from typing import Any

import pytest

from tests.fakes.provider_server import MESSAGES
from tests.inspector.conftest import ONE_TOOL_CALL, Lab, assistant, by_id, calls, excluding, results, user
from tests.support.clients import error_code
from tests.support.world import row_counts

HISTORY = ONE_TOOL_CALL  # the last user text is message:3; 4 calls a tool, 5 answers it


def _ex(*parts: str) -> list[dict[str, Any]]:
    return [{"part": p, "action": "exclude"} for p in parts]


def _re(part: str, text: str) -> dict[str, Any]:
    return {"part": part, "action": "replace", "replacement": text}


# Each case: (PUT route, PUT overrides), the try body meaning the same, the code, the parts it names.
# A try has no target (each part goes to its own set), so "wrong target" and the session's route
# asked about agent parts have no try body: their cases run against PUT only.
REFUSED = {
    "duplicate part": (
        ("session", _ex("message:2", "message:2")),
        {"exclude": ["message:2", "message:2"]},
        "duplicate_part",
        ["message:2"],
    ),
    "exclude and replace of one part": (
        ("session", [*_ex("message:2"), _re("message:2", "x")]),
        {"exclude": ["message:2"], "replace": {"message:2": "x"}},
        "duplicate_part",
        ["message:2"],
    ),
    "malformed include": (
        ("session", _ex("widget:1")),
        {"include": ["widget:1"]},
        "malformed_part",
        ["widget:1"],
    ),
    "tool replace": (
        ("agent", [_re("tool:ls", "x")]),
        {"replace": {"tool:ls": "x"}},
        "replace_not_allowed_for_tools",
        ["tool:ls"],
    ),
    "wrong target": (("agent", _ex("message:2")), None, "wrong_target", ["message:2"]),
    "unknown message": (
        ("session", _ex("message:999")),
        {"exclude": ["message:999"]},
        "unknown_part",
        ["message:999"],
    ),
    "unknown tool and system part": (
        ("agent", _ex("tool:nope", "system:nope")),
        {"exclude": ["tool:nope", "system:nope"]},
        "unknown_part",
        ["system:nope", "tool:nope"],
    ),
    "unknown tool and system part on the session's route": (
        ("session", _ex("tool:nope", "system:nope")),
        None,
        "unknown_part",
        ["system:nope", "tool:nope"],
    ),
    "unknown include": (
        ("session", _ex("message:998")),
        {"include": ["message:998"]},
        "unknown_part",
        ["message:998"],
    ),
    "no user message left": (
        ("session", _ex("message:1", "message:3", "message:4")),
        {"exclude": ["message:1", "message:3", "message:4"]},
        "no_user_message",
        ["message:1", "message:3", "message:4", "message:5"],
    ),
    "history starting with assistant": (
        ("session", _ex("message:1")),
        {"exclude": ["message:1"]},
        "starts_with_assistant",
        ["message:1"],
    ),
}


def _cases():
    for name, (put, body, code, parts) in REFUSED.items():
        yield pytest.param("put", put, code, parts, id=f"put-{name}")
        if body is not None:
            yield pytest.param("try", body, code, parts, id=f"try-{name}")


@pytest.mark.parametrize(("route", "request_body", "code", "parts"), list(_cases()))
def test_put_and_try_validate_identically(lab: Lab, route: str, request_body: Any, code: str, parts: list):
    agent = lab.agent()
    session = lab.session(agent, HISTORY)
    counts = row_counts(lab.engine)

    if route == "try":
        response = lab.try_(session, request_body)
    else:
        target, overrides = request_body
        put = lab.put_agent if target == "agent" else lab.put_session
        response = put(agent if target == "agent" else session, {"overrides": overrides})

    assert response.status_code == 422, response.get_json()
    assert error_code(response) == code
    assert response.get_json()["error"]["details"]["parts"] == parts
    assert lab.fake.bodies(MESSAGES) == []
    assert row_counts(lab.engine) == counts


def test_a_stored_override_whose_part_disappears_stays_and_is_shown_stale(lab: Lab):
    agent = lab.agent(tools=["ls", "grep"])
    session = lab.session(agent, HISTORY)
    assert lab.put_agent(agent, excluding("tool:grep")).status_code == 200
    lab.who.patch(f"/v1/agents/{agent}", json={"tools": ["ls"]})

    again = lab.put_agent(agent, excluding("tool:grep"))

    assert again.status_code == 200, again.get_json()
    assert by_id(lab.inspect(session))["tool:grep"]["stale"] is True


def test_added_lists_only_the_companions_this_put_pulled_in(lab: Lab):
    session = lab.session(lab.agent(), HISTORY)
    first = lab.put_session(session, excluding("message:4")).get_json()
    assert first["added"] == ["message:5"]

    round_trip = lab.put_session(session, {"overrides": first["overrides"]})
    more = lab.put_session(session, excluding("message:4", "message:2"))

    assert round_trip.status_code == 200 and round_trip.get_json()["added"] == []
    assert more.get_json()["added"] == []
    assert [o["part"] for o in more.get_json()["overrides"]] == ["message:2", "message:4", "message:5"]


@pytest.mark.parametrize(
    ("route", "stored"),
    [("agents", excluding("tool:grep", "system:todo")), ("sessions", excluding("message:2", "message:4"))],
)
def test_a_get_put_round_trip_with_nothing_changed_returns_added_empty(lab: Lab, route: str, stored: dict):
    agent = lab.agent()
    session = lab.session(agent, HISTORY)
    path = f"/v1/{route}/{agent if route == 'agents' else session}/context-overrides"
    assert lab.who.put(path, json=stored).status_code == 200
    got = lab.who.get(path)

    again = lab.who.put(path, json=got.get_json(), headers={"If-Match": got.headers["ETag"]})

    assert again.status_code == 200, again.get_json()
    assert again.get_json()["added"] == []
    assert again.get_json()["overrides"] == got.get_json()["overrides"]
    assert again.headers["ETag"] == got.headers["ETag"]


def test_every_part_carries_its_target_and_its_whole_pair_group(lab: Lab):
    history = [user("go"), calls("a"), results("a"), calls("b"), results("b", text="then"), assistant("ok")]
    session = lab.session(lab.agent(), history)

    body = lab.inspect(session)

    for part in by_id(body).values():
        assert part["target"] == ("agent" if part["kind"] in ("system", "tool") else "session")
        assert isinstance(part["paired_with"], list)
    parts = by_id(body)
    assert parts["message:2"]["paired_with"] == ["message:3"]
    assert parts["message:5"]["paired_with"] == ["message:4"]
    assert parts["message:1"]["paired_with"] == []


def test_the_agent_put_states_how_many_sessions_it_applies_to(lab: Lab):
    agent = lab.agent()
    for _ in range(3):
        lab.session(agent, HISTORY)
    lab.session(lab.agent())  # another agent's session is out of scope

    response = lab.put_agent(agent, excluding("system:todo"))

    assert response.get_json()["scope"] == {"agent_id": agent, "agent_name": "inspected", "sessions": 3}
    got = lab.who.get(f"/v1/agents/{agent}/context-overrides").get_json()
    assert got["scope"] == {"agent_id": agent, "agent_name": "inspected", "sessions": 3}


def test_lists_are_in_part_order(lab: Lab):
    history = [m for i in range(6) for m in (user(f"u{i}"), assistant(f"a{i}"))]
    agent = lab.agent()
    session = lab.session(agent, history)

    put = lab.put_session(session, excluding("message:10", "message:2", "message:11"))
    # neither the order sent nor string order: message:30 before message:200
    refused = lab.put_session(session, excluding("message:200", "message:4", "message:30"))
    tried = lab.try_(
        session, {"exclude": ["message:10", "tool:ls", "message:2", "system:todo"], "message": "again"}
    )
    agent_put = lab.put_agent(agent, excluding("tool:ls", "system:memory", "tool:grep", "system:skills"))

    assert [o["part"] for o in put.get_json()["overrides"]] == ["message:2", "message:10", "message:11"]
    assert refused.get_json()["error"]["details"]["parts"] == ["message:30", "message:200"]
    assert tried.get_json()["excluded"] == ["system:todo", "tool:ls", "message:2", "message:10", "message:11"]
    # system blocks as they are sent (skills before memory), tools by name
    assert [o["part"] for o in agent_put.get_json()["overrides"]] == [
        "system:skills",
        "system:memory",
        "tool:grep",
        "tool:ls",
    ]


def test_if_match_accepts_a_list_of_etags(lab: Lab):
    session = lab.session(lab.agent(), HISTORY)
    path = f"/v1/sessions/{session}/context-overrides"
    etag = lab.who.get(path).headers["ETag"]

    listed = lab.put_session(session, excluding("message:6"), headers={"If-Match": f'"other", {etag}'})
    stale = lab.put_session(session, {"overrides": []}, headers={"If-Match": f'"other", {etag}'})

    assert listed.status_code == 200, listed.get_json()
    assert stale.status_code == 412 and error_code(stale) == "etag_mismatch"


def test_try_checks_the_set_against_the_history_it_sends_after_the_cut(lab: Lab):
    session = lab.session(lab.agent(), HISTORY)

    # message:4 holds no text, but without `message` the call is cut after message:3: it is not sent
    response = lab.try_(session, {"replace": {"message:4": "x"}})

    assert response.status_code == 200, response.get_json()
    sent = lab.fake.bodies(MESSAGES)[-1]
    assert [m["content"][0]["text"] for m in sent["messages"]] == [
        "what is the plan?",
        "ship it",
        "and the memory?",
    ]
