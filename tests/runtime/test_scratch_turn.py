"""A whole turn on a scratch copy of the session (issue 27): ``POST …/context/try`` with ``"mode": "turn"``.

The turn runs on the real queue worker (``tests.support.queue.drain``, or ``execute_run`` with
the worker's own try plan where a test must hold it between two calls) against the fake
provider server; its tools really run, against the overlay, and nothing of the session changes.
"""

from __future__ import annotations

import threading
import uuid
from typing import Any

import sqlalchemy as sa

from hango.agent.deps import Deps
from hango.agent.overlay import file_change
from hango.agent.runner import QueuedRun, execute_run
from hango.agent.state import Caller
from hango.db import schema
from hango.inspector.trying import shape_turn
from hango.store import TenantStore
from hango.store.locks import lock_run, unlock_run
from hango.store.part_costs import fold_waiting
from tests.fakes.provider_server import MESSAGES, FakeProviderServer
from tests.runtime.chat import Chat, tool_call, tool_calls
from tests.runtime.conftest import OpenChat
from tests.support.net import wait_until
from tests.support.queue import drain

WAIT = 60.0
TOOLS = ("ls", "read_file", "write_file", "edit_file", "grep", "write_todos", "task")
PREFS = "/memories/prefs.md"


def values_of(engine: sa.Engine, column: sa.Column) -> list[Any]:
    with engine.connect() as conn:
        return list(conn.execute(sa.select(column)).scalars())


def try_turn(chat: Chat, **body: Any) -> Any:
    return chat.who.post(f"/v1/sessions/{chat.session_id}/context/try", json={"mode": "turn", **body})


def ended(chat: Chat, sent: Any) -> dict[str, Any]:
    """Run the queued scratch run to its end in this process and read it back."""
    assert sent.status_code == 202, sent.get_json()
    drain(chat.who.client.application)
    return run_of(chat, sent.get_json()["id"])


def run_of(chat: Chat, run_id: str) -> dict[str, Any]:
    run = chat.who.get(f"/v1/runs/{run_id}")
    assert run.status_code == 200, run.get_json()
    return run.get_json()


def seed(
    chat: Chat,
    files: dict[str, str] | None = None,
    memory: dict[str, str] | None = None,
    todos: list | None = None,
) -> None:
    """Give the session files, the agent memory files and the session a todo list, as earlier runs would."""
    with chat.engine.begin() as conn:
        store = TenantStore(conn, chat.tenant_id)
        for path, content in (files or {}).items():
            store.session_files.put(uuid.UUID(chat.session_id), path, content)
        for path, content in (memory or {}).items():
            store.memory_files.put(uuid.UUID(chat.agent_id), path, content)
        if todos is not None:
            store.todos.set(uuid.UUID(chat.session_id), todos)


def seed_history(chat: Chat, turns: int, words: int) -> None:
    """``turns`` user/assistant pairs of about ``words`` words each, stored as earlier runs would have."""
    items = []
    for turn in range(turns):
        text = " ".join(f"word{turn}x{i}" for i in range(words))
        items += [("user", [{"type": "text", "text": f"Question {turn}: {text}"}])]
        items += [("assistant", [{"type": "text", "text": f"Answer {turn}: {text}"}])]
    with chat.engine.begin() as conn:
        TenantStore(conn, chat.tenant_id).messages.append_many(uuid.UUID(chat.session_id), items)


def fingerprint(chat: Chat, try_run: str | None = None) -> dict[str, list]:
    """Every row a session touches, the try run's own (run, steps, ledger, usage, audit) left out."""
    session, agent = uuid.UUID(chat.session_id), uuid.UUID(chat.agent_id)
    run = uuid.UUID(try_run) if try_run else None
    s = schema
    queries = {
        "sessions": sa.select(s.sessions).where(s.sessions.c.id == session),
        "agents": sa.select(s.agents).where(s.agents.c.id == agent),
        "messages": sa.select(s.messages).where(s.messages.c.session_id == session),
        "session_files": sa.select(s.session_files).where(s.session_files.c.session_id == session),
        "memory_files": sa.select(s.memory_files).where(s.memory_files.c.agent_id == agent),
        "summaries": sa.select(s.session_summaries).where(s.session_summaries.c.session_id == session),
        "overrides": sa.select(s.context_overrides).where(s.context_overrides.c.tenant_id == chat.tenant_id),
        "skills": sa.select(s.skills).where(s.skills.c.agent_id == agent),
        "runs": sa.select(s.runs).where(s.runs.c.session_id == session, s.runs.c.id != run),
        "run_events": sa.select(s.run_events).where(s.run_events.c.run_id != run),
        "model_calls": sa.select(s.model_calls).where(
            s.model_calls.c.session_id == session, s.model_calls.c.run_id.is_distinct_from(run)
        ),
        "usage": sa.select(s.usage_records).where(
            s.usage_records.c.session_id == session, s.usage_records.c.run_id.is_distinct_from(run)
        ),
        "audit": sa.select(s.audit_log).where(
            s.audit_log.c.tenant_id == chat.tenant_id, s.audit_log.c.action != "context.try"
        ),
    }
    with chat.engine.connect() as conn:
        return {name: sorted(map(tuple, conn.execute(query)), key=repr) for name, query in queries.items()}


def test_a_scratch_turn_is_a_queued_try_run_whose_result_says_what_the_turn_did(
    open_chat: OpenChat, fake: FakeProviderServer
) -> None:
    chat = open_chat("anthropic/claude-test")
    fake.reply(
        tool_call("toolu_1", "write_file", {"path": "/notes.md", "content": "hello\n"}),
        "Done.",
    )

    sent = try_turn(chat, message="Write a note.")

    assert sent.status_code == 202, sent.get_json()
    assert (sent.get_json()["kind"], sent.get_json()["status"]) == ("try", "queued")
    assert sent.headers["Location"] == f"/v1/runs/{sent.get_json()['id']}"
    run = ended(chat, sent)
    assert (run["status"], run["stop_reason"]) == ("completed", "end_turn")
    result = run["result"]
    assert [c["purpose"] for c in result["calls"]] == ["context_try"] * 2
    assert {c["run_id"] for c in result["calls"]} == {run["id"]}
    one = chat.who.get(f"/v1/sessions/{chat.session_id}/calls/{result['calls'][0]['id']}").get_json()
    assert result["calls"][0] == one
    [write] = result["tools"]
    assert (write["call"], write["name"], write["input"]["path"], write["is_error"]) == (
        0,
        "write_file",
        "/notes.md",
        False,
    )
    assert write["result"] == "wrote 6 characters to /notes.md" and write["duration_ms"] >= 0
    assert result["answer"] == {"role": "assistant", "content": [{"type": "text", "text": "Done."}]}
    created = {
        "path": "/notes.md",
        "change": "created",
        "diff": "--- a/notes.md\n+++ b/notes.md\n@@ -0,0 +1 @@\n+hello\n",
    }
    assert result["changes"] == {"files": [created], "memory": [], "todos": None}
    assert result["usage"]["input_tokens"] == sum(c["usage"]["input_tokens"] for c in result["calls"])
    assert result["cost"] is None  # the fake model has no price
    assert (result["excluded"], result["added"]) == ([], [])
    assert chat.messages() == [] and chat.file("/notes.md") is None
    # the turn's own messages are no part of the session to cost: its calls' waiting costs, folded (here,
    # or by a live server's worker on this database) hold none of them
    with chat.engine.begin() as conn:
        fold_waiting(conn)
    wait_until(lambda: not values_of(chat.engine, schema.pending_part_costs.c.call_id), timeout=10)
    parts = values_of(chat.engine, schema.part_costs.c.part)
    assert parts and not [p for p in parts if p.startswith("message:")]
    listed = [r for r in chat.runs() if r["id"] == run["id"]]
    assert listed[0]["kind"] == "try" and listed[0]["result"]["calls"] == [
        {"id": c["id"]} for c in result["calls"]
    ]
    [audit] = chat.who.get("/v1/audit", query_string={"action": "context.try"}).get_json()["items"]
    assert audit["detail"] == {
        "excluded": [],
        "model": "anthropic/claude-test",
        "outcome": "ok",
        "mode": "turn",
        "run_id": run["id"],
    }


def test_a_scratch_turn_leaves_every_session_table_as_it_was(
    open_chat: OpenChat, fake: FakeProviderServer
) -> None:
    chat = open_chat("anthropic/claude-test", tools=TOOLS)
    assert chat.who.patch(f"/v1/agents/{chat.agent_id}", json={"context_window": 6000}).status_code == 200
    seed(chat, {"/draft.md": "one\ntwo\n"}, {PREFS: "tea\n"}, [{"content": "plan", "status": "pending"}])
    seed_history(chat, turns=3, words=400)  # past the window's trigger: the turn's first call compacts
    fake.reply(
        "Summary: three questions were asked and answered.",  # the summarizer
        tool_calls(
            ("toolu_w", "write_file", {"path": "/notes.md", "content": "new\n"}),
            ("toolu_e", "edit_file", {"path": PREFS, "old_string": "tea", "new_string": "coffee"}),
            ("toolu_t", "write_todos", {"todos": [{"content": "plan", "status": "completed"}]}),
            ("toolu_s", "task", {"description": "Read /notes.md and say what it holds."}),
        ),
        tool_call("toolu_r", "read_file", {"path": "/notes.md"}),  # the subagent
        "It holds 'new'.",  # the subagent's answer
        "All done.",
    )
    before = fingerprint(chat)

    run = ended(chat, try_turn(chat, message="Do the work."))

    assert run["status"] == "completed", run
    assert fingerprint(chat, run["id"]) == before
    result = run["result"]
    purposes = [c["purpose"] for c in result["calls"]]
    assert purposes == ["context_try"] * 5  # summarizer, turn, subagent twice, turn
    kinds = [s["kind"] for s in chat.who.get(f"/v1/runs/{run['id']}/events").get_json()["items"]]
    assert "compaction" in kinds and "message_stored" not in kinds
    read = next(t for t in result["tools"] if t["id"] == "toolu_r")
    assert "new" in read["result"] and read["call"] == 2  # the subagent saw the turn's write
    changes = result["changes"]
    assert [(f["path"], f["change"]) for f in changes["files"]] == [("/notes.md", "created")]
    assert changes["memory"] == [
        {
            "path": PREFS,
            "change": "edited",
            "diff": "--- a/memories/prefs.md\n+++ b/memories/prefs.md\n@@ -1 +1 @@\n-tea\n+coffee\n",
        }
    ]
    assert changes["todos"] == {
        "before": [{"content": "plan", "status": "pending"}],
        "after": [{"content": "plan", "status": "completed"}],
    }
    with chat.engine.connect() as conn:
        billed = conn.execute(
            sa.select(schema.usage_records.c.purpose).where(
                schema.usage_records.c.run_id == uuid.UUID(run["id"])
            )
        ).scalars()
        assert list(billed) == ["context_try"] * 5


def test_the_overlay_shows_a_turn_its_own_writes(open_chat: OpenChat, fake: FakeProviderServer) -> None:
    chat = open_chat("anthropic/claude-test")
    seed(chat, {"/old.md": "before\n"})
    fake.reply(
        tool_call("toolu_1", "write_file", {"path": "/old.md", "content": "after\n"}),
        tool_calls(
            ("toolu_2", "read_file", {"path": "/old.md"}),
            ("toolu_3", "ls", {"path": "/"}),
            ("toolu_4", "grep", {"pattern": "after"}),
        ),
        "Done.",
    )

    run = ended(chat, try_turn(chat, message="Rewrite the file."))

    read, listed, grep = (t["result"] for t in run["result"]["tools"][1:])
    assert "after" in read and "before" not in read
    assert "old.md" in listed
    assert grep == "/old.md:1: after"
    assert chat.file("/old.md") == "before\n"


def test_the_overlay_hides_a_concurrent_real_runs_writes(
    open_chat: OpenChat, fake: FakeProviderServer, engine: sa.Engine
) -> None:
    chat = open_chat("anthropic/claude-test")
    seed(chat, {"/shared.md": "original\n"})
    fake.reply(
        tool_call("toolu_1", "ls", {"path": "/"}),  # the scratch turn's first call
        tool_call("toolu_2", "write_file", {"path": "/shared.md", "content": "changed\n"}),  # the real run
        "Written.",  # the real run's answer
        tool_call("toolu_3", "read_file", {"path": "/shared.md"}),  # the scratch turn's second call
        "Read.",
    )
    try_id = uuid.UUID(try_turn(chat, message="Look around.").get_json()["id"])
    between, go_on = threading.Event(), threading.Event()

    def held_between_calls() -> bool:  # the cancel check: held once the turn's first tool finished
        with engine.connect() as conn:
            steps = TenantStore(conn, chat.tenant_id).run_events.after(try_id, 0)
        if any(s.kind == "tool_finished" for s in steps) and not go_on.is_set():
            between.set()
            go_on.wait(WAIT)
        return False

    deps = Deps(engine, chat.who.client.application.config["HANGO"])
    job = QueuedRun(chat.tenant_id, try_id, Caller(uuid.UUID(chat.who.user_id), None))
    done: list[Any] = []
    scratch = threading.Thread(
        target=lambda: done.append(execute_run(deps, job, held_between_calls, shape_turn))
    )
    scratch.start()
    assert between.wait(WAIT)

    real = chat.say("Change the shared file.")  # queued and run to its end while the turn waits

    assert real.status_code == 201, real.get_json()
    assert scratch.is_alive()  # the real run was not blocked by the scratch turn
    assert run_of(chat, str(try_id))["status"] == "running"  # nor did it take the turn for a dead one
    assert chat.file("/shared.md") == "changed\n"
    go_on.set()
    scratch.join(WAIT)
    result = run_of(chat, str(try_id))["result"]
    assert "original" in result["tools"][1]["result"]  # the turn kept its snapshot
    assert result["changes"]["files"] == []
    assert chat.file("/shared.md") == "changed\n"


def test_the_would_be_diffs_equal_what_a_real_run_then_writes(
    open_chat: OpenChat, fake: FakeProviderServer
) -> None:
    chat = open_chat("anthropic/claude-test", tools=TOOLS)
    seed(
        chat,
        {"/a.md": "keep\nold line\n", "/b.md": "b"},
        {PREFS: "tea"},
        [{"content": "x", "status": "pending"}],
    )
    answers = (
        tool_calls(
            ("toolu_1", "edit_file", {"path": "/a.md", "old_string": "old line", "new_string": "new line"}),
            ("toolu_2", "write_file", {"path": "/c.md", "content": "fresh"}),
            ("toolu_3", "write_file", {"path": PREFS, "content": "coffee\nmilk\n"}),
            ("toolu_4", "write_todos", {"todos": [{"content": "x", "status": "in_progress"}]}),
        ),
        "Done.",
    )
    fake.reply(*answers)
    would = ended(chat, try_turn(chat, message="Change things."))["result"]["changes"]
    files_before, memory_before, todos_before = stored_state(chat)

    fake.reply(*answers)
    assert chat.say("Change things.").status_code == 201
    files_after, memory_after, todos_after = stored_state(chat)

    assert would["files"] == diffs(files_before, files_after)
    assert would["memory"] == diffs(memory_before, memory_after)
    assert would["todos"] == {"before": todos_before, "after": todos_after}
    assert [f["change"] for f in would["files"]] == ["edited", "created"]


def stored_state(chat: Chat) -> tuple[dict[str, str], dict[str, str], list]:
    with chat.engine.connect() as conn:
        store = TenantStore(conn, chat.tenant_id)
        files = {r.path: r.content for r in store.session_files.under(uuid.UUID(chat.session_id), "/")}
        memory = {r.path: r.content for r in store.memory_files.under(uuid.UUID(chat.agent_id), "/")}
        return files, memory, store.todos.get(uuid.UUID(chat.session_id))


def diffs(before: dict[str, str], after: dict[str, str]) -> list[dict[str, Any]]:
    changes = (file_change(path, before.get(path), after.get(path)) for path in sorted({*before, *after}))
    return [c for c in changes if c is not None]


def test_a_cancelled_scratch_turn_stops_at_its_next_step(
    open_chat: OpenChat, fake: FakeProviderServer
) -> None:
    chat = open_chat("anthropic/claude-test")
    queued = try_turn(chat, message="hello").get_json()["id"]
    assert chat.who.post(f"/v1/runs/{queued}/cancel").get_json()["status"] == "cancelled"
    fake.hang(3, times=1, path=MESSAGES)
    fake.reply(tool_call("toolu_1", "write_file", {"path": "/x.md", "content": "x"}))
    running = try_turn(chat, message="hello").get_json()["id"]
    worker = threading.Thread(target=drain, args=(chat.who.client.application,))
    worker.start()
    wait_until(lambda: run_of(chat, running)["status"] == "running", timeout=WAIT)

    asked = chat.who.post(f"/v1/runs/{running}/cancel")
    worker.join(WAIT)

    assert asked.status_code == 202
    assert run_of(chat, queued)["result"] is None
    run = run_of(chat, running)
    assert run["status"] == "cancelled"
    kinds = [s["kind"] for s in chat.who.get(f"/v1/runs/{running}/events").get_json()["items"]]
    assert "tool_started" not in kinds and kinds[-1] == "run_finished"
    assert chat.file("/x.md") is None and chat.messages() == []


def test_scratch_turns_count_against_the_in_flight_caps_like_runs(open_chat: OpenChat) -> None:
    chat = open_chat("offline/echo", max_runs_per_member=1)
    assert try_turn(chat, message="one").status_code == 202

    capped = try_turn(chat, message="two")

    assert capped.status_code == 429
    assert capped.get_json()["error"]["code"] == "too_many_runs"
    assert capped.get_json()["error"]["details"]["member_in_flight"] == 1


def test_a_real_run_is_not_refused_busy_while_a_scratch_turn_is_queued(open_chat: OpenChat) -> None:
    chat = open_chat("offline/echo")
    assert try_turn(chat, message="one").status_code == 202

    assert (
        chat.who.post(f"/v1/sessions/{chat.session_id}/messages", json={"content": "hi"}).status_code == 202
    )


def test_another_members_or_tenants_session_is_404_for_a_scratch_turn(
    open_chat: OpenChat, acme, globex
) -> None:
    chat = open_chat("offline/echo")
    path = f"/v1/sessions/{chat.session_id}/context/try"
    for stranger in (acme.member2, globex.owner):
        refused = stranger.post(path, json={"mode": "turn", "message": "hi"})
        assert refused.status_code == 404, refused.get_json()
    assert chat.runs() == []


def test_a_bad_override_is_422_and_queues_nothing(open_chat: OpenChat) -> None:
    chat = open_chat("offline/echo")

    refused = try_turn(chat, message="hi", exclude=["message:999"])
    bad_mode = chat.who.post(f"/v1/sessions/{chat.session_id}/context/try", json={"mode": "both"})

    assert refused.status_code == 422 and refused.get_json()["error"]["code"] == "unknown_part"
    assert bad_mode.status_code == 422
    assert chat.runs() == []


def test_a_used_up_quota_is_402_before_a_scratch_turn_is_queued(open_chat: OpenChat) -> None:
    chat = open_chat("offline/echo")
    assert chat.who.patch("/v1/tenant", json={"token_quota": 0}).status_code == 200

    refused = try_turn(chat, message="hi")

    assert (refused.status_code, refused.get_json()["error"]["code"]) == (402, "quota_exhausted")
    assert chat.runs() == []


def test_a_scratch_turn_past_the_run_deadline_ends_timeout(
    open_chat: OpenChat, fake: FakeProviderServer
) -> None:
    chat = open_chat("anthropic/claude-test", run_timeout=1)
    fake.hang(3, times=1, path=MESSAGES)

    run = ended(chat, try_turn(chat, message="hello"))

    assert (run["status"], run["error"]["status"]) == ("timeout", 504)
    assert run["result"]["calls"] == [] and chat.messages() == []


def test_a_try_run_is_alive_while_its_own_lock_is_held_and_reaped_once_nobody_holds_it(
    open_chat: OpenChat, engine: sa.Engine
) -> None:
    chat = open_chat("offline/echo")
    run_id = uuid.UUID(try_turn(chat, message="hi").get_json()["id"])
    with engine.connect() as worker:  # what the worker's connection holds while the turn works
        lock_run(worker, run_id)
        TenantStore(worker, chat.tenant_id).runs.start(run_id)
        worker.commit()

        assert run_of(chat, str(run_id))["status"] == "running"  # the session's lock is nobody's

        unlock_run(worker, run_id)  # what a killed worker's connection lets go
        worker.commit()
    run = run_of(chat, str(run_id))
    assert (run["status"], run["error"]["code"]) == ("failed", "interrupted")


def try_then_run(chat: Chat, fake: FakeProviderServer) -> tuple[str, str]:
    """A whole-turn try and then the same turn for real, on a compacted session: the try's last call and
    the run's."""
    seed_history(chat, turns=2, words=3)
    with chat.engine.begin() as conn:
        TenantStore(conn, chat.tenant_id).summaries.create(uuid.UUID(chat.session_id), 2, "earlier turns")
    fake.reply(tool_call("toolu_1", "write_file", {"path": "/n.md", "content": "x"}), "Done.")
    tried = ended(chat, try_turn(chat, message="Write a note."))["result"]["calls"][-1]["id"]
    fake.reply(tool_call("toolu_2", "write_file", {"path": "/n.md", "content": "x"}), "Done.")
    assert chat.say("Write a note.").status_code == 201
    calls = chat.who.get(f"/v1/sessions/{chat.session_id}/calls").get_json()["items"]
    return tried, next(c["id"] for c in calls if c["purpose"] == "run")


def diff_of(chat: Chat, earlier: str, later: str) -> dict[str, Any]:
    path = f"/v1/sessions/{chat.session_id}/context/diff"
    return chat.who.get(path, query_string={"from": earlier, "to": later}).get_json()


def test_a_trys_scratch_messages_do_not_share_ids_with_real_ones(
    open_chat: OpenChat, fake: FakeProviderServer
) -> None:
    chat = open_chat("anthropic/claude-test")
    tried, real = try_then_run(chat, fake)

    assert [m["seq"] for m in chat.messages()] == list(range(1, 9))  # no gap the try made
    sent = chat.who.get(f"/v1/sessions/{chat.session_id}/calls/{tried}").get_json()["parts"]
    scratch = [p["id"] for p in sent if p["kind"] == "scratch"]
    assert [p.rpartition(":")[2] for p in scratch] == ["5", "6", "7"]  # the turn, the tool call, its result
    assert len({p.rpartition(":")[0] for p in scratch}) == 1  # one try's id
    diff = diff_of(chat, tried, real)
    assert diff["changed"] == []
    assert diff["removed"] == scratch
    assert diff["added"] == ["message:5", "message:6", "message:7"]


def test_a_diffs_cause_from_a_whole_turn_trys_call_to_the_next_runs_is_the_try_not_compaction(
    open_chat: OpenChat, fake: FakeProviderServer
) -> None:
    chat = open_chat("anthropic/claude-test")
    tried, real = try_then_run(chat, fake)

    first = diff_of(chat, tried, real)["first_difference"]

    assert first["part"].startswith("scratch:") and first["part"].endswith(":5")
    assert first["cause"] == "try_call"
