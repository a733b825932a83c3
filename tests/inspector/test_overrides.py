"""The override routes: pair closure both ways, release of companions, ETag, specific 422s, stale parts."""

from __future__ import annotations

import threading
import time
import uuid

import pytest
import sqlalchemy as sa

from hango.db.schema import sessions
from tests.inspector.conftest import (
    OFFLINE,
    Lab,
    assistant,
    by_id,
    calls,
    excluding,
    override_set,
    results,
    user,
)
from tests.support.clients import error_code
from tests.support.world import row_counts

# 1 user · 2 assistant text+tool_use(a,b) · 3 user tool_results(a,b) · 4 assistant tool_use(c)
# 5 user tool_result(c) + text · 6 assistant text · 7 user text
PAIRED = [
    user("start"),
    calls("a", "b", text="two calls"),
    results("a", "b"),
    calls("c"),
    results("c", text="and one more thing"),
    assistant("done"),
    user("next"),
]


def stored(response) -> list[tuple[str, str, str | None]]:
    return [(o["part"], o["action"], o["paired_from"]) for o in response.get_json()["overrides"]]


@pytest.fixture
def paired(lab: Lab) -> str:
    return lab.session(lab.agent(model=OFFLINE), PAIRED)


def test_excluding_the_tool_use_message_also_excludes_its_tool_result_and_lists_it(lab: Lab, paired: str):
    response = lab.put_session(paired, excluding("message:2"))

    assert response.status_code == 200, response.get_json()
    assert response.get_json()["added"] == ["message:3"]
    assert stored(response) == [("message:2", "exclude", None), ("message:3", "exclude", "message:2")]
    body = lab.inspect(paired)
    assert [p["included"] for p in body["messages"]] == [True, False, False, True, True, True, True]
    assert (by_id(body)["message:3"]["paired"], by_id(body)["message:2"]["paired"]) == (True, False)


def test_excluding_a_tool_result_message_also_excludes_its_tool_use_message(lab: Lab, paired: str):
    response = lab.put_session(paired, excluding("message:3"))

    assert response.get_json()["added"] == ["message:2"]
    assert stored(response) == [("message:2", "exclude", "message:3"), ("message:3", "exclude", None)]


def test_a_message_with_text_and_tool_results_is_pulled_in_with_its_tool_use(lab: Lab, paired: str):
    forward = lab.put_session(paired, excluding("message:4"))
    lab.put_session(paired, {"overrides": []})
    backward = lab.put_session(paired, excluding("message:5"))

    assert forward.get_json()["added"] == ["message:5"]
    assert backward.get_json()["added"] == ["message:4"]


def test_removing_a_part_releases_its_companions(lab: Lab, paired: str):
    first = lab.put_session(paired, excluding("message:2", "message:6")).get_json()
    assert first["added"] == ["message:3"]

    # the client sends back what it got, minus the part it re-checked
    kept = [o for o in first["overrides"] if o["part"] != "message:2"]
    second = lab.put_session(paired, {"overrides": kept})

    assert second.status_code == 200, second.get_json()
    assert stored(second) == [("message:6", "exclude", None)]
    assert second.get_json()["added"] == []
    body = lab.inspect(paired)
    assert by_id(body)["message:3"]["included"] is True
    assert by_id(body)["message:2"]["paired_with"] == ["message:3"]
    assert by_id(body)["message:4"]["paired_with"] == ["message:5"]
    assert by_id(body)["message:1"]["paired_with"] == []


def test_paired_with_is_shown_whatever_the_overrides(lab: Lab, paired: str):
    before = {p["id"]: p["paired_with"] for p in lab.inspect(paired)["messages"]}
    lab.put_session(paired, excluding("message:4"))
    after = {p["id"]: p["paired_with"] for p in lab.inspect(paired)["messages"]}

    assert before == after
    assert after["message:2"] == ["message:3"] and after["message:3"] == ["message:2"]


def test_override_set_leaving_no_user_message_is_rejected_with_422(lab: Lab):
    session = lab.session(lab.agent(model=OFFLINE), [user("only one"), assistant("ok")])
    counts = row_counts(lab.engine)

    response = lab.put_session(session, excluding("message:1"))

    assert response.status_code == 422
    assert error_code(response) == "no_user_message"
    assert response.get_json()["error"]["details"]["parts"] == ["message:1"]
    assert row_counts(lab.engine) == counts


def test_override_set_making_history_start_with_an_assistant_message_is_rejected(lab: Lab, paired: str):
    response = lab.put_session(paired, excluding("message:1"))

    assert response.status_code == 422
    assert error_code(response) == "starts_with_assistant"
    assert response.get_json()["error"]["details"]["parts"] == ["message:1"]


def test_replace_on_a_tool_part_is_rejected_with_422(lab: Lab):
    agent = lab.agent(model=OFFLINE)

    response = lab.put_agent(
        agent, {"overrides": [{"part": "tool:grep", "action": "replace", "replacement": "x"}]}
    )

    assert response.status_code == 422
    assert error_code(response) == "replace_not_allowed_for_tools"
    assert response.get_json()["error"]["details"]["parts"] == ["tool:grep"]


@pytest.mark.parametrize(
    ("route", "override", "code"),
    [
        ("agent", {"part": "system:memory:../../etc", "action": "exclude"}, "malformed_part"),
        ("agent", {"part": "system:memory:/memories/../x", "action": "exclude"}, "malformed_part"),
        ("agent", {"part": "widget:1", "action": "exclude"}, "malformed_part"),
        ("session", {"part": "message:abc", "action": "exclude"}, "malformed_part"),
        ("session", {"part": "message:0", "action": "exclude"}, "malformed_part"),
        ("session", {"part": "message:01", "action": "exclude"}, "malformed_part"),
        ("agent", {"part": "message:1", "action": "exclude"}, "wrong_target"),
        ("agent", {"part": "summary", "action": "exclude"}, "wrong_target"),
        ("session", {"part": "system:agent", "action": "exclude"}, "wrong_target"),
        ("session", {"part": "tool:ls", "action": "exclude"}, "wrong_target"),
        ("agent", {"part": "system:agent", "action": "replace"}, "replacement_required"),
        ("agent", {"part": "system:agent", "action": "replace", "replacement": "  "}, "replacement_required"),
        ("session", {"part": "message:1", "action": "replace", "replacement": ""}, "replacement_required"),
        (
            "agent",
            {"part": "system:agent", "action": "exclude", "replacement": "x"},
            "replacement_not_allowed",
        ),
        ("session", {"part": "message:3", "action": "replace", "replacement": "x"}, "replace_needs_text"),
        (
            "agent",
            {"part": "tool:ls", "action": "replace", "replacement": "x"},
            "replace_not_allowed_for_tools",
        ),
    ],
)
def test_each_422_names_its_rule_and_parts(lab: Lab, paired: str, route: str, override: dict, code: str):
    agent = lab.inspect(paired)["agent_id"]
    put = lab.put_agent if route == "agent" else lab.put_session
    counts = row_counts(lab.engine)

    response = put(agent if route == "agent" else paired, {"overrides": [override]})

    assert response.status_code == 422, response.get_json()
    assert error_code(response) == code
    assert response.get_json()["error"]["details"]["parts"] == [override["part"]]
    assert row_counts(lab.engine) == counts


def test_a_part_named_twice_is_rejected(lab: Lab, paired: str):
    response = lab.put_session(paired, excluding("message:6", "message:6"))

    assert error_code(response) == "duplicate_part"
    assert response.get_json()["error"]["details"]["parts"] == ["message:6"]


def test_get_returns_the_set_and_an_empty_list_clears_it(lab: Lab, paired: str):
    agent = lab.inspect(paired)["agent_id"]
    lab.put_agent(agent, override_set(replace={"system:agent": "Be brief."}))
    lab.put_session(paired, excluding("message:6"))

    got = lab.who.get(f"/v1/agents/{agent}/context-overrides").get_json()
    replaced = {"part": "system:agent", "action": "replace", "replacement": "Be brief.", "paired_from": None}
    assert got == {
        "overrides": [replaced],
        "scope": {"agent_id": agent, "agent_name": "inspected", "sessions": 1},
    }
    assert stored(lab.who.get(f"/v1/sessions/{paired}/context-overrides")) == [("message:6", "exclude", None)]

    scope = {"agent_id": agent, "agent_name": "inspected", "sessions": 1}
    assert lab.put_agent(agent, {"overrides": []}).get_json() == {
        "overrides": [],
        "added": [],
        "scope": scope,
    }
    assert lab.put_session(paired, {"overrides": []}).status_code == 200
    assert lab.who.get(f"/v1/agents/{agent}/context-overrides").get_json() == {
        "overrides": [],
        "scope": scope,
    }
    assert lab.who.get(f"/v1/sessions/{paired}/context-overrides").get_json() == {"overrides": []}


@pytest.mark.parametrize("route", ["agent", "session"])
def test_if_match_against_a_stale_etag_is_412(lab: Lab, paired: str, route: str):
    agent = lab.inspect(paired)["agent_id"]
    target, put, part = (
        (f"/v1/agents/{agent}", lab.put_agent, "system:todo")
        if route == "agent"
        else (f"/v1/sessions/{paired}", lab.put_session, "message:6")
    )
    ident = agent if route == "agent" else paired
    etag = lab.who.get(f"{target}/context-overrides").headers["ETag"]

    first = put(ident, excluding(part), headers={"If-Match": etag})
    assert first.status_code == 200
    assert first.headers["ETag"] != etag
    stale = put(ident, {"overrides": []}, headers={"If-Match": etag})

    assert stale.status_code == 412
    assert error_code(stale) == "etag_mismatch"
    assert lab.who.get(f"{target}/context-overrides").headers["ETag"] == first.headers["ETag"]
    fresh = put(ident, {"overrides": []}, headers={"If-Match": first.headers["ETag"]})
    assert fresh.status_code == 200


def test_a_put_waits_for_the_lock_on_its_session_row(lab: Lab, paired: str):
    done: list[int] = []
    with lab.engine.connect() as conn:
        conn.execute(sa.select(sessions.c.id).where(sessions.c.id == uuid.UUID(paired)).with_for_update())
        worker = threading.Thread(
            target=lambda: done.append(lab.put_session(paired, excluding("message:6")).status_code)
        )
        worker.start()
        time.sleep(0.5)
        assert done == [] and worker.is_alive()
        conn.rollback()
    worker.join(10)
    assert done == [200]


def test_stale_overrides_are_shown_in_their_group_and_cause_no_error(lab: Lab):
    agent = lab.agent(model="anthropic/claude-test", tools=["ls", "grep"])
    lab.memory(agent, "/memories/old.md", "soon gone")
    session = lab.session(
        agent, [user("one"), assistant("two"), user("three"), assistant("four"), user("five")]
    )
    lab.summary(session, 2, "they said one and two")
    agent_set = excluding("system:memory:/memories/old.md", "tool:grep")
    assert lab.put_agent(agent, agent_set).status_code == 200
    assert lab.put_session(session, excluding("message:3")).status_code == 200
    lab.summary(session, 3, "they said one, two and three")  # message:3 is no part any more
    lab.store(lambda s: s.messages.delete(uuid.UUID(session), 5))
    lab.append(session, [user("five")])  # message:6: message:5 is gone for good
    lab.store(lambda s: s.memory_files.delete(uuid.UUID(agent), "/memories/old.md"))
    lab.who.patch(f"/v1/agents/{agent}", json={"tools": ["ls"]})

    body = lab.inspect(session)

    stale = {p["id"]: p for g in ("system", "tools", "messages") for p in body[g] if p["stale"]}
    assert set(stale) == {"system:memory:/memories/old.md", "tool:grep", "message:3"}
    for part in stale.values():
        assert (part["included"], part["tokens"], part["override"]) == (False, 0, "exclude")
    assert "system:memory:/memories/old.md" in [p["id"] for p in body["system"]]
    assert "tool:grep" in [p["id"] for p in body["tools"]]
    assert [p["id"] for p in body["messages"]] == [
        "summary",
        "message:4",
        "message:6",
        "message:3",
    ]
    assert body["messages"][0]["kind"] == "summary"
    assert lab.say(session, "six").status_code == 201
    assert lab.try_(session).status_code == 200
    # resending the stored set keeps its stale entries
    resent = lab.who.get(f"/v1/sessions/{session}/context-overrides").get_json()
    assert stored(lab.put_session(session, resent)) == [("message:3", "exclude", None)]


def test_a_new_session_without_messages_refuses_parts_it_lacks_and_clears_overrides(lab: Lab):
    session = lab.session(lab.agent(model=OFFLINE))

    refused = lab.put_session(session, excluding("message:1"))
    cleared = lab.put_session(session, {"overrides": []})

    assert refused.status_code == 422 and error_code(refused) == "unknown_part"
    assert cleared.status_code == 200, cleared.get_json()


def test_each_part_says_its_role_and_the_tools_it_defines_calls_or_answers(lab: Lab, paired: str):
    body = lab.inspect(paired)
    parts = by_id(body)
    assert [(parts[f"message:{seq}"]["role"], parts[f"message:{seq}"]["tools"]) for seq in (1, 2, 3, 6)] == [
        ("user", []),
        ("assistant", ["ls"]),
        ("user", ["ls"]),
        ("assistant", []),
    ]
    assert all((p["role"], p["tools"]) == (None, [p["id"].removeprefix("tool:")]) for p in body["tools"])
    assert all((p["role"], p["tools"]) == (None, []) for p in body["system"])


def test_an_override_whose_paired_from_names_a_part_not_in_the_request_is_422_not_silently_dropped(
    lab: Lab, paired: str
):
    stray = {"part": "message:3", "action": "exclude", "paired_from": "message:99"}

    response = lab.put_session(paired, {"overrides": [{"part": "message:6", "action": "exclude"}, stray]})

    assert (response.status_code, error_code(response)) == (422, "unknown_paired_from")
    assert response.get_json()["error"]["details"]["parts"] == ["message:3"]
    assert lab.who.get(f"/v1/sessions/{paired}/context-overrides").get_json()["overrides"] == []
