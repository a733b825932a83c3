"""``POST /v1/sessions/{id}/context/try``: one real model call with parts removed, the session untouched."""

from __future__ import annotations

import dataclasses
import re
import threading
import time
import uuid

import pytest
import sqlalchemy as sa
from opentelemetry.trace import SpanKind

from hango.db.schema import session_files, sessions, usage_records
from hango.inspector import trying
from hango.messages import Message, Response, TextBlock, ToolUseBlock, Usage
from hango.telemetry import names
from hango.try_pool import EXTENSION, POOL_SIZE
from tests.fakes.provider_server import MESSAGES
from tests.inspector.conftest import ONE_TOOL_CALL, Lab, excluding
from tests.support.clients import error_code
from tests.support.minutes import wait_for_fresh_minute
from tests.support.net import retry_while
from tests.support.world import row_counts

HISTORY = ONE_TOOL_CALL  # the last user text is message:3; 4 calls a tool, 5 answers it


@pytest.fixture
def session(lab: Lab) -> str:
    return lab.session(lab.agent(), HISTORY)


def wire_texts(lab: Lab, index: int = -1) -> list[str]:
    body = lab.fake.bodies(MESSAGES)[index]
    return [b.get("text") or b.get("content") or b["name"] for m in body["messages"] for b in m["content"]]


def counts_but_usage(lab: Lab) -> dict[str, int]:
    """Row counts but the try's bookkeeping: its usage row, its ledger entry (with its parts' costs, waiting
    or folded into their totals), its audit row."""
    bookkeeping = ("usage_records", "model_calls", "pending_part_costs", "part_costs", "audit_log")
    return {name: n for name, n in row_counts(lab.engine).items() if name not in bookkeeping}


def test_try_returns_the_answer_adds_no_message_creates_no_run_and_its_chat_span_is_marked(
    lab: Lab, session: str, spans
):
    lab.fake.reply(
        Response(Message("assistant", (TextBlock("without memory: no idea"),)), "end_turn", Usage(40, 6))
    )
    counts = counts_but_usage(lab)
    spans()

    response = lab.try_(session, {"exclude": ["system:filesystem"], "message": "what do you remember?"})

    assert response.status_code == 200, response.get_json()
    body = response.get_json()
    assert body["message"] == {
        "role": "assistant",
        "content": [{"type": "text", "text": "without memory: no idea"}],
    }
    assert (body["stop_reason"], body["model"]) == ("end_turn", "anthropic/claude-test")
    assert body["usage"] == {
        "input_tokens": 40,
        "output_tokens": 6,
        "cache_read_tokens": 0,
        "cache_write_tokens": 0,
    }
    assert body["excluded"] == ["system:filesystem"] and body["added"] == []
    assert body["duration_ms"] >= 0
    assert counts_but_usage(lab) == counts
    assert len(lab.messages(session)) == 6
    assert lab.who.get(f"/v1/sessions/{session}/runs").get_json()["items"] == []
    finished = spans()
    chat = next(s for s in finished if s.name == names.SPAN_CHAT)
    assert chat.attributes[names.CONTEXT_TRY] is True
    assert chat.attributes[names.PURPOSE] == "context_try"
    server = next(s for s in finished if s.context.span_id == chat.parent.span_id)
    assert (server.name, server.kind) == (names.SPAN_CONTEXT_TRY, SpanKind.SERVER)


def test_try_with_a_message_sends_it_as_a_new_user_turn_after_the_history(lab: Lab, session: str):
    lab.try_(session, {"message": "one more question"})

    assert wire_texts(lab) == [
        "what is the plan?",
        "ship it",
        "and the memory?",
        "ls",
        "result t1",
        "it says to be brief",
        "one more question",
    ]


def test_a_trys_scratch_messages_do_not_share_ids_with_real_ones(lab: Lab, session: str):
    assert lab.try_(session, {"message": "one more question"}).status_code == 200
    [call] = lab.who.get(f"/v1/sessions/{session}/calls").get_json()["items"]
    parts = lab.who.get(f"/v1/sessions/{session}/calls/{call['id']}").get_json()["parts"]
    [tried] = [p for p in parts if p["kind"] == "scratch"]
    assert re.fullmatch(r"scratch:[0-9a-f]{8}:" + str(len(HISTORY) + 1), tried["id"])

    assert lab.say(session, "a real question").status_code == 201

    seqs = [m["seq"] for m in lab.messages(session)]
    assert seqs == list(range(1, len(HISTORY) + 3))  # the try left no gap in the real history


def test_try_lists_every_part_it_leaves_out_the_trailing_assistant_message_included(lab: Lab, session: str):
    response = lab.try_(session, {"exclude": ["system:memory"]})

    assert response.status_code == 200, response.get_json()
    assert response.get_json()["excluded"] == ["system:memory", "message:4", "message:5", "message:6"]


def test_try_without_a_message_re_answers_the_last_user_turn(lab: Lab, session: str):
    with_memory = lab.try_(session)
    without = lab.try_(session, {"exclude": ["system:memory"]})

    assert with_memory.status_code == without.status_code == 200
    assert wire_texts(lab, 0) == wire_texts(lab, 1) == ["what is the plan?", "ship it", "and the memory?"]
    assert len(lab.fake.bodies(MESSAGES)[1]["system"]) == len(lab.fake.bodies(MESSAGES)[0]["system"]) - 1


def test_try_include_re_includes_a_stored_exclusion_for_that_call_only(lab: Lab, session: str):
    agent = lab.inspect(session)["agent_id"]
    lab.put_session(session, excluding("message:2"))
    lab.put_agent(agent, excluding("tool:grep"))

    response = lab.try_(session, {"include": ["message:2", "tool:grep"]})

    # the turn re-answered is message 3: the messages after it are left out, and listed
    assert response.get_json()["excluded"] == ["message:4", "message:5", "message:6"]
    assert wire_texts(lab) == ["what is the plan?", "ship it", "and the memory?"]
    assert "grep" in [t["name"] for t in lab.fake.bodies(MESSAGES)[-1]["tools"]]
    lab.try_(session)
    assert wire_texts(lab) == ["what is the plan?", "and the memory?"]
    assert "grep" not in [t["name"] for t in lab.fake.bodies(MESSAGES)[-1]["tools"]]
    assert [
        o["part"] for o in lab.who.get(f"/v1/sessions/{session}/context-overrides").get_json()["overrides"]
    ] == ["message:2"]


def test_try_body_overrides_are_closed_under_pairing_and_reported(lab: Lab, session: str):
    response = lab.try_(session, {"exclude": ["message:4"], "message": "again"})

    assert response.get_json()["added"] == ["message:5"]
    assert response.get_json()["excluded"] == ["message:4", "message:5"]
    assert wire_texts(lab) == [
        "what is the plan?",
        "ship it",
        "and the memory?",
        "it says to be brief",
        "again",
    ]


@pytest.mark.parametrize(
    ("body", "code", "parts"),
    [
        (
            {"exclude": ["message:1", "message:3", "message:4"]},
            "no_user_message",
            ["message:1", "message:3", "message:4", "message:5"],
        ),
        ({"exclude": ["message:1"]}, "starts_with_assistant", ["message:1"]),
        ({"replace": {"tool:ls": "x"}}, "replace_not_allowed_for_tools", ["tool:ls"]),
        ({"replace": {"message:4": "x"}, "message": "again"}, "replace_needs_text", ["message:4"]),
        ({"replace": {"message:2": " "}}, "replacement_required", ["message:2"]),
        ({"exclude": ["system:memory:../../etc"]}, "malformed_part", ["system:memory:../../etc"]),
        ({"include": ["message:2"], "exclude": ["widget:1"]}, "malformed_part", ["widget:1"]),
    ],
)
def test_try_body_overrides_are_validated_like_put(
    lab: Lab, session: str, body: dict, code: str, parts: list
):
    counts = row_counts(lab.engine)

    response = lab.try_(session, body)

    assert response.status_code == 422
    assert error_code(response) == code
    assert response.get_json()["error"]["details"]["parts"] == parts
    assert lab.fake.bodies(MESSAGES) == []
    assert row_counts(lab.engine) == counts


def test_try_returns_tool_calls_without_executing_them(lab: Lab, session: str):
    call = ToolUseBlock("w1", "write_file", {"path": "/tried.md", "content": "side effect"})
    lab.fake.reply(Message("assistant", (TextBlock("writing"), call)))

    response = lab.try_(session, {"message": "write it down"})

    assert response.get_json()["stop_reason"] == "tool_use"
    assert response.get_json()["message"]["content"][1] == {
        "type": "tool_use",
        "id": "w1",
        "name": "write_file",
        "input": {"path": "/tried.md", "content": "side effect"},
    }
    assert len(lab.fake.bodies(MESSAGES)) == 1
    with lab.engine.connect() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(session_files)).scalar_one() == 0
    assert len(lab.messages(session)) == 6


def test_try_writes_a_usage_row_with_purpose_context_try_and_no_run(lab: Lab, session: str):
    lab.fake.reply(Response(Message("assistant", (TextBlock("ok"),)), "end_turn", Usage(90, 3)))

    assert lab.try_(session).status_code == 200

    with lab.engine.connect() as conn:
        rows = conn.execute(sa.select(usage_records)).all()
    assert [(r.purpose, r.run_id, r.session_id, r.input_tokens) for r in rows] == [
        ("context_try", None, uuid.UUID(session), 90)
    ]
    assert rows[0].estimated_input_tokens > 0


def last_seq(lab: Lab, session: str) -> int:
    with lab.engine.connect() as conn:
        return conn.execute(sa.select(sessions.c.last_seq).where(sessions.c.id == session)).scalar_one()


def test_try_is_rejected_with_402_when_the_quota_is_exhausted(lab: Lab, session: str):
    lab.store(lambda s: s.update_tenant(token_quota=0))
    counter = last_seq(lab, session)

    response = lab.try_(session, {"message": "hello?"})

    assert response.status_code == 402
    assert error_code(response) == "quota_exhausted"
    assert lab.fake.bodies(MESSAGES) == []
    with lab.engine.connect() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(usage_records)).scalar_one() == 0
    # checked in the request's transaction before the call: the 402 rolls back the new turn's seq
    assert last_seq(lab, session) == counter


def timed_out(answer) -> bool:
    """A 504 ``provider_timeout``: the try's deadline kept."""
    return answer.status_code == 504 and error_code(answer) == "provider_timeout"


def test_try_timeout_is_504_within_the_bound_and_the_pool_recovers(make_lab):
    lab = make_lab(context_try_timeout=1)
    session = lab.session(lab.agent(), HISTORY)
    lab.fake.hang(30, times=POOL_SIZE, path=MESSAGES)

    for _ in range(POOL_SIZE):
        started = time.monotonic()
        response = lab.try_(session)
        assert response.status_code == 504
        assert error_code(response) == "provider_timeout"
        assert time.monotonic() - started < 10

    # every abandoned call's SDK timeout was the time left to its deadline: its slot is free, or
    # freeing, which the next try waits for. That try has 1 s for the fake's answer, which a loaded
    # machine may miss: a 504 is the deadline kept, so it is tried again (bounded); a slot never
    # given back would answer 503 try_pool_full and end the loop at once.
    tries = retry_while(lambda: lab.try_(session), timed_out, timeout=60)
    assert tries[-1].status_code == 200, tries[-1].get_json()


def test_a_try_waits_for_a_slot_whose_call_is_past_its_deadline_instead_of_503(lab: Lab, session: str):
    slots = lab.who.client.application.extensions[EXTENSION]
    overdue = time.monotonic() - 0.1
    for _ in range(POOL_SIZE):
        slots.take(overdue)
    threading.Timer(0.3, slots.give_back, (overdue,)).start()  # one abandoned call ends
    try:
        response = lab.try_(session)
    finally:
        for _ in range(POOL_SIZE - 1):
            slots.give_back(overdue)

    assert response.status_code == 200, response.get_json()


def test_try_pool_full_is_503_with_retry_after(lab: Lab, session: str):
    slots = lab.who.client.application.extensions[EXTENSION]
    due = time.monotonic() + 60  # calls still within their deadline
    for _ in range(POOL_SIZE):
        slots.take(due)
    try:
        response = lab.try_(session)
    finally:
        for _ in range(POOL_SIZE):
            slots.give_back(due)

    assert response.status_code == 503
    assert error_code(response) == "try_pool_full"
    assert int(response.headers["Retry-After"]) > 0
    assert lab.fake.bodies(MESSAGES) == []
    assert lab.try_(session).status_code == 200


def test_try_without_a_message_re_answers_the_last_user_turn_that_is_sent(lab: Lab, session: str):
    lab.put_session(session, excluding("message:3"))

    assert lab.try_(session).status_code == 200

    assert wire_texts(lab) == ["what is the plan?"]


def test_try_on_a_new_session_sends_the_message_alone_and_without_one_is_422(lab: Lab):
    session = lab.session(lab.agent())

    with_message = lab.try_(session, {"message": "first words"})
    without = lab.try_(session)

    assert with_message.status_code == 200, with_message.get_json()
    assert wire_texts(lab) == ["first words"]
    assert without.status_code == 422
    assert error_code(without) == "no_user_message"
    assert len(lab.fake.bodies(MESSAGES)) == 1


def test_try_counts_against_the_api_keys_rate_limit(lab: Lab, session: str):
    wait_for_fresh_minute(lab.engine, 45)  # a try can take seconds on a loaded machine
    # The member's count is shared by their keys: the POST that makes the key is the first of 3.
    made = lab.who.post("/v1/api-keys", json={"name": "slow", "rate_limit_per_minute": 3})
    slow = dataclasses.replace(lab.who, key=made.get_json()["api_key"])

    statuses = [slow.post(f"/v1/sessions/{session}/context/try", json={}).status_code for _ in range(3)]

    assert statuses == [200, 200, 429]
    assert len(lab.fake.bodies(MESSAGES)) == 2


def test_try_refuses_a_blank_message(lab: Lab, session: str):
    response = lab.try_(session, {"message": " \n "})

    assert response.status_code == 422
    assert error_code(response) == "invalid"
    assert lab.fake.bodies(MESSAGES) == []


def test_try_include_of_a_stored_exclusion_releases_its_companions_too(lab: Lab, session: str):
    assert lab.put_session(session, excluding("message:4")).get_json()["added"] == ["message:5"]

    response = lab.try_(session, {"include": ["message:4"], "message": "again"})

    assert response.get_json()["excluded"] == []
    assert wire_texts(lab)[3:5] == ["ls", "result t1"]


def test_try_include_of_a_companion_releases_its_whole_pair_group(lab: Lab, session: str):
    assert lab.put_session(session, excluding("message:4")).get_json()["added"] == ["message:5"]

    response = lab.try_(session, {"include": ["message:5"], "message": "again"})

    assert response.get_json()["excluded"] == []
    assert wire_texts(lab)[3:5] == ["ls", "result t1"]


def test_a_try_without_message_overrides_checks_the_history_without_capturing_the_call_first(
    lab: Lab, session: str, monkeypatch
):
    captured = []
    real = trying.capture
    monkeypatch.setattr(trying, "capture", lambda *a, **kw: captured.append(1) or real(*a, **kw))

    plain = lab.try_(session, {"message": "and now?"})
    excluding_one = lab.try_(session, {"message": "and now?", "exclude": ["message:2"]})

    assert (plain.status_code, excluding_one.status_code) == (200, 200), excluding_one.get_json()
    assert captured == [1]  # only the try whose set had to be closed on the call's messages
    assert wire_texts(lab, 0)[-1] == "and now?" and len(lab.fake.bodies(MESSAGES)) == 2
