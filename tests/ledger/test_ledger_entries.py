"""Done when: a run, a subagent call, a compaction and a try each leave a ledger entry whose parts equal,
hash by hash, what the fake provider received."""

from __future__ import annotations

import uuid

import sqlalchemy as sa

from hango.db.schema import messages, model_calls, usage_records
from tests.fakes.provider_server import MESSAGES
from tests.inspector.conftest import assistant, user
from tests.ledger.helpers import call_detail, oldest_first, sent_hashes, wire_hashes
from tests.runtime.chat import tool_call


def test_a_run_leaves_ledger_entries_whose_parts_equal_what_the_provider_received(lab) -> None:
    session = lab.session(lab.agent(), [user("hello"), assistant("hi")])
    lab.fake.reply(tool_call("toolu_1", "ls", {}), "two files")

    assert lab.say(session, "what is in /?").status_code == 201

    bodies = lab.fake.bodies(MESSAGES)
    assert len(bodies) == 2
    assert sent_hashes(lab, session) == [wire_hashes(b) for b in bodies]
    calls = oldest_first(lab, session)
    assert [c["purpose"] for c in calls] == ["run", "run"]
    assert calls[0]["run_id"] == calls[1]["run_id"] is not None
    assert [c["parts_count"] for c in calls] == [len(wire_hashes(b)) for b in bodies]


def test_a_subagent_call_leaves_a_ledger_entry_whose_parts_equal_what_the_provider_received(lab) -> None:
    session = lab.session(lab.agent())
    lab.fake.reply(
        tool_call("toolu_task", "task", {"description": "Count the files in /."}),
        "There are 2 entries.",
        "The subagent counted 2.",
    )

    assert lab.say(session, "How many files? Ask a subagent.").status_code == 201

    bodies = lab.fake.bodies(MESSAGES)
    assert [c["purpose"] for c in oldest_first(lab, session)] == ["run", "subagent", "run"]
    assert sent_hashes(lab, session) == [wire_hashes(b) for b in bodies]


def test_a_compaction_leaves_a_ledger_entry_whose_parts_equal_what_the_provider_received(lab) -> None:
    agent = lab.agent(tools=["ls"], settings={"memory": False, "skills": False}, context_window=1500)
    history = [
        m for i in range(12) for m in (user(f"question {i} " + "words " * 70), assistant(f"answer {i}"))
    ]
    session = lab.session(agent, history)
    assert lab.inspect(session)["would_compact"]
    lab.fake.reply("The user asked twelve questions.", "Here is my answer.")

    assert lab.say(session, "one more question").status_code == 201

    summarizing, answering = lab.fake.bodies(MESSAGES)
    calls = oldest_first(lab, session)
    assert [c["purpose"] for c in calls] == ["summarize", "run"]
    summarized, answered = sent_hashes(lab, session)
    assert summarized == wire_hashes(summarizing)
    # The summary and the first kept message are both user messages: the adapter sends them as one.
    parts = [p["id"] for p in call_detail(lab, session, calls[1]["id"])["parts"]]
    stored = {f"message:{m['seq']}": len(m["content"]) for m in lab.messages(session)}
    assert "summary" in parts
    assert answered == wire_hashes(
        answering, [1 if p == "summary" else stored[p] for p in parts if p in stored or p == "summary"]
    )


def test_a_try_leaves_a_ledger_entry_whose_parts_equal_what_the_provider_received(lab) -> None:
    session = lab.session(lab.agent(), [user("hello"), assistant("hi"), user("and?"), assistant("so.")])
    lab.fake.reply("tried")

    response = lab.try_(session, {"exclude": ["message:3", "message:4"], "message": "try this"})

    assert response.status_code == 200, response.get_json()
    (call,) = oldest_first(lab, session)
    assert (call["purpose"], call["run_id"]) == ("context_try", None)
    assert sent_hashes(lab, session) == [wire_hashes(lab.fake.bodies(MESSAGES)[0])]


def test_a_later_call_stores_only_the_parts_after_the_prefix_it_shares(lab) -> None:
    session = lab.session(lab.agent(), [user("hello"), assistant("hi")])
    lab.fake.reply(tool_call("toolu_1", "ls", {}), "two files")

    lab.say(session, "what is in /?")

    with lab.engine.connect() as conn:
        rows = conn.execute(
            sa.select(model_calls.c.prefix_parts, model_calls.c.tail, model_calls.c.parts_count).order_by(
                model_calls.c.started_at
            )
        ).all()
    first, second = rows
    assert (first.prefix_parts, len(first.tail)) == (0, first.parts_count)
    # The second call shares everything the first sent; it adds the answer and the tool result.
    assert (second.prefix_parts, [p[0] for p in second.tail]) == (
        first.parts_count,
        ["message:4", "message:5"],
    )


def test_ledger_rows_go_with_their_session_and_usage_rows_stay(lab) -> None:
    session = lab.session(lab.agent())
    lab.fake.reply("hi")
    lab.say(session, "hello")

    assert lab.who.delete(f"/v1/sessions/{session}").status_code == 204

    with lab.engine.connect() as conn:
        ledger = conn.execute(sa.select(sa.func.count()).select_from(model_calls)).scalar_one()
        usage = conn.execute(
            sa.select(sa.func.count()).where(usage_records.c.session_id == uuid.UUID(session))
        ).scalar_one()
    assert (ledger, usage) == (0, 1)


def test_a_stored_message_carries_the_hash_its_calls_send_it_with(lab) -> None:
    session = lab.session(lab.agent())
    lab.fake.reply(tool_call("toolu_1", "ls", {}), "two files")

    lab.say(session, "what is in /?")

    with lab.engine.connect() as conn:
        stored = dict(conn.execute(sa.select(messages.c.seq, messages.c.content_hash)).all())
    assert len(stored) == 4 and None not in stored.values()
    last = call_detail(lab, session, oldest_first(lab, session)[-1]["id"])["parts"]
    assert {int(p["id"].removeprefix("message:")): p["hash"] for p in last if p["kind"] == "message"} == {
        seq: digest for seq, digest in stored.items() if seq < 4
    }


def test_a_call_of_more_than_32767_parts_is_recorded_with_its_breakpoints(lab) -> None:
    # A window of a million tokens holds 34,000 short messages without compacting.
    agent = lab.agent(tools=(), context_window=1_000_000)
    session = lab.session(agent)
    items = [
        (role, [{"type": "text", "text": "ok"}]) for _ in range(17_000) for role in ("user", "assistant")
    ]
    lab.store(lambda s: s.messages.append_many(uuid.UUID(session), items))

    answer = lab.try_(session, {"message": "and now?"})

    assert answer.status_code == 200, answer.get_json()
    with lab.engine.connect() as conn:
        row = conn.execute(sa.select(model_calls.c.parts_count, model_calls.c.breakpoints)).one()
    assert row.parts_count > 34_000
    assert max(row.breakpoints) > 32_767  # the last message's breakpoint, past what a smallint holds
