"""The compaction preview on inspect, and ``POST /v1/sessions/{id}/compact`` (compact now)."""

from __future__ import annotations

import uuid

import pytest
import sqlalchemy as sa

from hango.agent.chain import SUMMARY_PREFIX
from hango.agent.compaction import FOCUS_PREFIX
from hango.db.schema import audit_log, session_summaries, usage_records
from hango.telemetry import names
from tests.fakes.provider_server import MESSAGES
from tests.inspector.conftest import Lab, assistant, by_id, override_set, user
from tests.support.clients import error_code
from tests.support.world import row_counts

FOCUS = "keep the API decisions, drop the debugging"
SUMMARY = "The user asked twenty questions about the API; each was answered."


def long_chat(turns: int = 20) -> list:
    return [m for i in range(turns) for m in (user(f"question {i} " * 30), assistant(f"answer {i} " * 30))]


@pytest.fixture
def session(lab: Lab) -> str:
    """A session past the trigger of a 1,024-token window: the next call would compact."""
    return lab.session(lab.agent(context_window=1024), long_chat())


def compact(lab: Lab, session: str, body: dict | None = None):
    """Compact now, and the queued compaction run to its end: 200 with its figures, or its error."""
    return lab.who.post_and_wait(f"/v1/sessions/{session}/compact", json=body or {})


def rows(lab: Lab, query) -> list:
    with lab.engine.connect() as conn:
        return list(conn.execute(query))


def test_inspect_shows_the_compaction_split_when_the_next_call_would_compact(lab: Lab, session: str):
    body = lab.inspect(session)

    preview = body["compaction"]
    first, last = preview["summarize"]
    assert first == 1 and last + 1 == preview["keep_from"]
    parts = by_id(body)
    assert preview["tokens_summarized"] == sum(parts[f"message:{s}"]["tokens"] for s in range(1, last + 1))
    assert preview["tokens_kept"] == sum(parts[f"message:{s}"]["tokens"] for s in range(last + 1, 41))
    assert preview["tokens_kept"] <= body["compact_at"] / 2
    assert lab.fake.bodies(MESSAGES) == []


def test_inspect_shows_no_compaction_below_the_trigger_unless_asked_for_a_preview(lab: Lab):
    session = lab.session(lab.agent(), long_chat())
    assert "compaction" not in lab.inspect(session)

    preview = lab.inspect(session, compaction="preview")["compaction"]

    assert preview["summarize"][0] == 1 and preview["keep_from"] > preview["summarize"][1]
    assert preview["tokens_summarized"] > 0 and preview["tokens_kept"] > 0


def test_after_a_second_compaction_the_preview_counts_the_old_summary_apart_and_names_no_missing_message(
    lab: Lab,
):
    session = lab.session(lab.agent(), long_chat(11))  # messages 1-22
    lab.summary(session, 20, SUMMARY)  # an earlier compaction summarized 1-20

    body = lab.inspect(session, compaction="preview")

    preview, parts = body["compaction"], by_id(body)
    assert preview["summarize"] == [21, 22]
    assert preview["keep_from"] is None  # message 23 does not exist
    assert preview["tokens_summarized"] == parts["message:21"]["tokens"] + parts["message:22"]["tokens"]
    assert preview["previous_summary_tokens"] == parts["summary"]["tokens"]


def test_with_nothing_new_to_summarize_there_is_no_compaction_to_do(lab: Lab):
    session = lab.session(lab.agent(), long_chat(11)[:21])  # messages 1-21
    lab.summary(session, 20, SUMMARY)

    assert lab.inspect(session, compaction="preview").get("compaction") is None


def test_compact_now_summarizes_what_the_preview_said_and_the_summary_becomes_the_summary_part(
    lab: Lab, session: str
):
    preview = lab.inspect(session)["compaction"]
    lab.fake.reply(SUMMARY)

    response = compact(lab, session, {"instructions": FOCUS})

    assert response.status_code == 200, response.get_json()
    done = response.get_json()
    assert {k: done[k] for k in preview} == preview
    assert done["through_seq"] == preview["summarize"][1]
    [sent] = lab.fake.bodies(MESSAGES)
    assert FOCUS_PREFIX + FOCUS in [b["text"] for b in sent["system"]]
    after = lab.inspect(session)
    assert after["messages"][0]["id"] == "summary"
    assert lab.who.get(f"/v1/sessions/{session}/context", query_string={"full": "summary"}).get_json()[
        "content"
    ] == [{"type": "text", "text": SUMMARY_PREFIX + SUMMARY}]
    assert after["messages"][1]["id"] == f"message:{preview['keep_from']}"


def test_compact_now_treats_blank_instructions_as_no_focus(lab: Lab, session: str):
    lab.fake.reply(SUMMARY)

    assert compact(lab, session, {"instructions": "  \n "}).status_code == 200

    [sent] = lab.fake.bodies(MESSAGES)
    assert not any(b["text"].startswith(FOCUS_PREFIX) for b in sent["system"])
    [audit] = rows(lab, sa.select(audit_log).where(audit_log.c.action == "session.compact"))
    assert audit.detail["focused"] is False


def test_compact_now_leaves_the_stored_history_unchanged(lab: Lab, session: str):
    history = lab.messages(session)
    lab.fake.reply(SUMMARY)

    assert compact(lab, session).status_code == 200

    assert lab.messages(session) == history
    [summary] = rows(lab, sa.select(session_summaries))
    assert summary.text == SUMMARY


def test_compact_now_writes_one_usage_row_with_the_summarize_purpose_billed_to_its_compact_run(
    lab: Lab, session: str
):
    lab.fake.reply(SUMMARY)

    assert compact(lab, session).status_code == 200

    [usage] = rows(lab, sa.select(usage_records))
    [run] = lab.who.get(f"/v1/sessions/{session}/runs").get_json()["items"]
    assert (usage.purpose, str(usage.run_id), usage.session_id) == (
        "summarize",
        run["id"],
        uuid.UUID(session),
    )
    assert usage.input_tokens > 0
    assert (run["kind"], run["state"]) == ("compact", "succeeded")


def test_compact_now_with_stored_overrides_calls_the_summarizer_once_on_the_request_as_sent(
    lab: Lab, session: str
):
    replaced = "a question put another way"
    assert lab.put_session(session, override_set(replace={"message:3": replaced})).status_code == 200
    lab.fake.reply(SUMMARY)

    assert compact(lab, session).status_code == 200

    assert len(rows(lab, sa.select(usage_records))) == 1  # not once without the overrides and once with
    [summarized] = [r.body for r in lab.fake.requests if r.path == MESSAGES]
    texts = [b.get("text", "") for m in summarized["messages"] for b in m["content"] if isinstance(b, dict)]
    assert any(replaced in t for t in texts)


def test_compact_now_is_audited_without_content(lab: Lab, session: str):
    lab.fake.reply(SUMMARY)

    queued = lab.who.post(f"/v1/sessions/{session}/compact", json={"instructions": FOCUS}).get_json()

    [audit] = rows(lab, sa.select(audit_log).where(audit_log.c.action == "session.compact"))
    assert (audit.object_type, audit.object_id) == ("session", session)
    assert audit.detail == {"run_id": queued["id"], "focused": True}
    text = str(audit.detail)
    assert "API" not in text and "twenty" not in text


def test_compact_now_is_refused_with_409_while_a_run_is_queued_on_the_session(lab: Lab, session: str):
    assert lab.who.post(f"/v1/sessions/{session}/messages", json={"content": "hi"}).status_code == 202
    counts = row_counts(lab.engine)

    response = compact(lab, session)

    assert response.status_code == 409
    assert error_code(response) == "session_busy"
    assert lab.fake.bodies(MESSAGES) == []
    assert row_counts(lab.engine) == counts


def test_compact_now_is_refused_with_402_when_the_quota_is_exhausted(lab: Lab, session: str):
    lab.store(lambda s: s.update_tenant(token_quota=0))
    counts = row_counts(lab.engine)

    response = compact(lab, session)

    assert response.status_code == 402
    assert error_code(response) == "quota_exhausted"
    assert lab.fake.bodies(MESSAGES) == []
    assert row_counts(lab.engine) == counts


def test_compact_now_without_a_place_to_cut_is_422_and_calls_nothing(lab: Lab):
    session = lab.session(lab.agent(), [user("only one message")])

    response = compact(lab, session)

    assert response.status_code == 422
    assert error_code(response) == "nothing_to_compact"
    assert lab.fake.bodies(MESSAGES) == []
    assert rows(lab, sa.select(session_summaries)) == []


def test_compact_now_takes_its_span_name(lab: Lab, session: str, spans):
    lab.fake.reply(SUMMARY)
    spans()
    assert compact(lab, session).status_code == 200
    assert {names.SPAN_SESSION_COMPACT, names.SPAN_SUMMARIZE} <= {s.name for s in spans()}


def test_compact_now_summarizes_a_history_without_a_cut_whole(lab: Lab):
    session = lab.session(lab.agent(), [user("hello"), assistant("hi")])
    assert lab.inspect(session, compaction="preview")["compaction"]["summarize"] == [1, 2]
    lab.fake.reply(SUMMARY)

    done = compact(lab, session).get_json()

    assert (done["summarize"], done["keep_from"], done["tokens_kept"]) == ([1, 2], None, 0)  # no message 3
    assert [p["id"] for p in lab.inspect(session)["messages"]] == ["summary"]
