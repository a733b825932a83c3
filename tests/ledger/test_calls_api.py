"""``GET /v1/sessions/{id}/calls[/{call_id}]``: newest first, paged, and parts rebuilt from current sources."""

from __future__ import annotations

import uuid

from hango.messages import prompt_tokens
from tests.inspector.conftest import assistant, override_set, user
from tests.ledger.helpers import call_detail, listed_calls, oldest_first
from tests.runtime.chat import tool_call

MEMORY = "/memories/AGENTS.md"


def two_call_session(lab) -> tuple[str, str]:
    agent = lab.agent()
    lab.memory(agent, MEMORY, "the garden is north-facing")
    session = lab.session(agent, [user("hello"), assistant("hi")])
    lab.fake.reply(tool_call("toolu_1", "ls", {}), "two files")
    assert lab.say(session, "what is in /?").status_code == 201
    return agent, session


def test_calls_are_listed_newest_first_with_usage_estimate_parts_and_verdict(lab) -> None:
    _, session = two_call_session(lab)

    items = listed_calls(lab, session)["items"]

    assert len(items) == 2
    newest, oldest = items
    assert newest["started_at"] > oldest["started_at"]
    assert newest["parts_count"] == oldest["parts_count"] + 2
    for call in items:
        assert call["purpose"] == "run" and call["model"] == "anthropic/claude-test"
        assert set(call["usage"]) == {
            "input_tokens",
            "output_tokens",
            "cache_read_tokens",
            "cache_write_tokens",
            "prompt_tokens",
        }
        assert call["usage"]["prompt_tokens"] == prompt_tokens(call["usage"])
        assert call["estimated_input_tokens"] > 0 and call["duration_ms"] >= 0
    assert oldest["cache"]["miss_reason"] == "first_call"
    assert set(newest["cache"]) == {
        "expected_read_tokens",
        "reported_read_tokens",
        "miss_reason",
        "miss_part",
        "miss_cause",
        "badge",
        "words",
    }


def test_calls_page_with_a_cursor(lab) -> None:
    _, session = two_call_session(lab)
    everything = [c["id"] for c in listed_calls(lab, session)["items"]]

    first = listed_calls(lab, session, limit=1)
    second = listed_calls(lab, session, limit=1, cursor=first["next_cursor"])

    assert [c["id"] for c in first["items"] + second["items"]] == everything
    assert second["next_cursor"] is None


def test_a_call_shows_its_parts_in_the_inspect_shape_from_current_sources(lab) -> None:
    _, session = two_call_session(lab)
    first = oldest_first(lab, session)[0]

    parts = call_detail(lab, session, first["id"])["parts"]

    assert len(parts) == first["parts_count"]
    by_id = {p["id"]: p for p in parts}
    assert by_id[f"system:memory:{MEMORY}"]["preview"].endswith("the garden is north-facing")
    assert by_id["message:3"]["label"] == "#3 user · text"
    assert by_id["message:3"]["preview"] == "what is in /?"
    assert by_id["tool:ls"]["kind"] == "tool"
    assert not any(p["changed_since_call"] for p in parts)
    assert [p["id"] for p in parts if p["cache_breakpoint"]][-1] == "message:3"
    inspected = {p["id"]: p["tokens"] for g in ("system", "tools") for p in lab.inspect(session)[g]}
    assert by_id["system:agent"]["tokens"] == inspected["system:agent"]


def test_a_part_whose_memory_file_was_edited_is_changed_since_the_call_and_shows_no_content(lab) -> None:
    agent, session = two_call_session(lab)
    lab.memory(agent, MEMORY, "the garden is south-facing now")

    part = {p["id"]: p for p in call_detail(lab, session, oldest_first(lab, session)[0]["id"])["parts"]}

    assert part[f"system:memory:{MEMORY}"]["changed_since_call"] is True
    assert part[f"system:memory:{MEMORY}"]["preview"] is None
    assert part["system:agent"]["changed_since_call"] is False


def test_a_part_whose_memory_file_was_deleted_is_changed_since_the_call(lab) -> None:
    agent, session = two_call_session(lab)
    assert lab.who.delete(f"/v1/agents/{agent}/memory{MEMORY}").status_code == 204

    part = {p["id"]: p for p in call_detail(lab, session, oldest_first(lab, session)[0]["id"])["parts"]}

    assert (
        part[f"system:memory:{MEMORY}"]["changed_since_call"],
        part[f"system:memory:{MEMORY}"]["preview"],
    ) == (
        True,
        None,
    )


def test_a_part_sent_with_a_replacement_that_was_edited_since_is_changed_since_the_call(lab) -> None:
    _, session = two_call_session(lab)
    assert lab.put_session(session, override_set(replace={"message:1": "greetings"})).status_code == 200
    lab.fake.reply("ok")
    assert lab.say(session, "again").status_code == 201
    replaced_call = listed_calls(lab, session)["items"][0]["id"]
    sent = {p["id"]: p for p in call_detail(lab, session, replaced_call)["parts"]}
    assert (sent["message:1"]["changed_since_call"], sent["message:1"]["preview"]) == (False, "greetings")

    assert lab.put_session(session, override_set(replace={"message:1": "salutations"})).status_code == 200

    part = {p["id"]: p for p in call_detail(lab, session, replaced_call)["parts"]}
    assert (part["message:1"]["changed_since_call"], part["message:1"]["preview"]) == (True, None)
    assert part["message:2"]["changed_since_call"] is False


def test_past_calls_stay_readable_after_a_compaction(lab) -> None:
    _, session = two_call_session(lab)
    calls = [call["id"] for call in oldest_first(lab, session)]
    before = [call_detail(lab, session, call)["parts"] for call in calls]
    lab.fake.reply("they greeted each other and listed /")
    compacted = lab.who.post_and_wait(f"/v1/sessions/{session}/compact", json={})
    assert compacted.status_code == 200, compacted.get_json()
    assert lab.inspect(session)["messages"][0]["id"] == "summary"  # the next call sends it instead

    after = [call_detail(lab, session, call)["parts"] for call in calls]

    assert after == before
    messages = [p for parts in after for p in parts if p["kind"] == "message"]
    assert len(messages) == 3 + 5 and not any(p["changed_since_call"] for p in messages)
    assert {p["preview"] for p in messages} >= {"hello", "hi", "what is in /?"}


def test_a_call_of_another_session_or_no_call_is_not_found(lab) -> None:
    _, session = two_call_session(lab)
    other = lab.session(lab.agent())
    call_id = listed_calls(lab, session)["items"][0]["id"]

    assert lab.who.get(f"/v1/sessions/{other}/calls/{call_id}").status_code == 404
    assert lab.who.get(f"/v1/sessions/{session}/calls/{uuid.uuid4()}").status_code == 404


def test_another_member_sees_no_calls_of_a_session(lab) -> None:
    _, session = two_call_session(lab)
    call_id = listed_calls(lab, session)["items"][0]["id"]

    for path in (f"/v1/sessions/{session}/calls", f"/v1/sessions/{session}/calls/{call_id}"):
        response = lab.as_("member").get(path)
        assert response.status_code == 404
        assert response.get_json()["error"]["code"] == "not_found"
