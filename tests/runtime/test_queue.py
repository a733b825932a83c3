"""Runs on the job queue, in-process: 202 and poll, steps in order, cancel, enqueue order, caps, idempotency.

The app under test queues runs; ``tests.support.queue.drain`` runs procrastinate's
own worker in this process until the queue is empty (nothing runs before it).
"""

from __future__ import annotations

import threading
import uuid
from dataclasses import replace
from typing import Any

import pytest
import sqlalchemy as sa

from hango.agent.deps import Deps
from hango.agent.runner import QueuedRun, execute_run
from hango.agent.state import Caller
from hango.db import schema
from hango.store import TenantStore
from hango.telemetry import names
from hango.worker import reap_dead_runs
from tests.fakes.provider_server import MESSAGES, FakeProviderServer
from tests.runtime.chat import Chat, tool_call, tool_calls
from tests.runtime.conftest import OpenChat
from tests.support.net import wait_until
from tests.support.queue import drain

WAIT = 60.0


def post(chat: Chat, text: str, key: str | None = None, **body: Any) -> Any:
    """``POST .../messages`` of ``text`` (with ``key`` as its ``Idempotency-Key``)."""
    headers = {} if key is None else {"Idempotency-Key": key}
    return chat.who.post(
        f"/v1/sessions/{chat.session_id}/messages", json={"content": text, **body}, headers=headers
    )


def run_of(chat: Chat, run_id: str) -> dict[str, Any]:
    answer = chat.who.get(f"/v1/runs/{run_id}")
    assert answer.status_code == 200, answer.get_json()
    return answer.get_json()


def events(chat: Chat, run_id: str, after: int = 0) -> list[dict[str, Any]]:
    answer = chat.who.get(f"/v1/runs/{run_id}/events", query_string={"after": after})
    assert answer.status_code == 200, answer.get_json()
    return answer.get_json()["items"]


def jobs(engine: sa.Engine) -> list[tuple[str, str]]:
    """``(task, status)`` of every run job, oldest first (the periodic reaper's jobs left out)."""
    query = "select task_name, status from procrastinate_jobs where task_name = 'hango.run' order by id"
    with engine.connect() as conn:
        return [tuple(r) for r in conn.execute(sa.text(query))]


def test_a_message_is_answered_202_with_a_queued_run_that_waits_for_a_worker(open_chat: OpenChat) -> None:
    chat = open_chat("offline/echo")

    sent = post(chat, "hello")

    assert sent.status_code == 202, sent.get_json()
    run = sent.get_json()
    assert sent.headers["Location"] == f"/v1/runs/{run['id']}"
    assert (run["status"], run["state"], run["messages"]) == ("queued", "queued", [])
    assert jobs(chat.engine) == [("hango.run", "todo")]  # committed with the run: nothing is lost
    assert run_of(chat, run["id"])["status"] == "queued"  # no worker: it waits
    assert chat.messages() == []

    drain(chat.who.client.application)

    done = run_of(chat, run["id"])
    assert (done["status"], done["state"]) == ("completed", "succeeded")
    assert [m["role"] for m in done["messages"]] == ["user", "assistant"]
    assert done["messages"] == chat.messages()
    assert jobs(chat.engine) == [("hango.run", "succeeded")]


def test_a_runs_steps_are_listed_in_order_with_nothing_missing(
    open_chat: OpenChat, fake: FakeProviderServer
) -> None:
    chat = open_chat("anthropic/claude-test")
    fake.reply(tool_call("toolu_1", "ls", {"path": "/"}), "All done.")
    run_id = post(chat, "List the files.").get_json()["id"]

    drain(chat.who.client.application)

    steps = events(chat, run_id)
    assert [s["seq"] for s in steps] == list(range(1, len(steps) + 1))
    assert [s["kind"] for s in steps] == [
        "run_started",
        "message_stored",
        "model_call_started",
        "model_call_finished",
        "tool_started",
        "tool_finished",
        "message_stored",
        "message_stored",
        "model_call_started",
        "model_call_finished",
        "message_stored",
        "run_finished",
    ]
    calls = chat.who.get(f"/v1/sessions/{chat.session_id}/calls").get_json()["items"]
    finished = [s["detail"] for s in steps if s["kind"] == "model_call_finished"]
    assert {f["call_id"] for f in finished} == {c["id"] for c in calls}
    assert all(f["usage"]["input_tokens"] > 0 and "expected_read_tokens" in f["cache"] for f in finished)
    tool = next(s["detail"] for s in steps if s["kind"] == "tool_finished")
    assert (tool["name"], tool["error"]) == ("ls", False) and tool["duration_ms"] >= 0
    stored = [s["detail"]["seq"] for s in steps if s["kind"] == "message_stored"]
    assert stored == [m["seq"] for m in chat.messages()]
    assert steps[-1]["detail"] == {"status": "completed", "stop_reason": "end_turn"}
    assert events(chat, run_id, after=len(steps) - 2) == steps[-2:]


def test_a_cancelled_queued_run_never_starts(open_chat: OpenChat, fake: FakeProviderServer) -> None:
    chat = open_chat("anthropic/claude-test")
    run_id = post(chat, "hello").get_json()["id"]

    cancelled = chat.who.post(f"/v1/runs/{run_id}/cancel")

    assert cancelled.status_code == 202, cancelled.get_json()
    assert (cancelled.get_json()["status"], cancelled.get_json()["state"]) == ("cancelled", "cancelled")
    drain(chat.who.client.application)
    assert run_of(chat, run_id)["status"] == "cancelled"
    assert fake.bodies(MESSAGES) == [] and chat.messages() == []
    assert jobs(chat.engine) == [("hango.run", "cancelled")]
    assert chat.who.post(f"/v1/runs/{run_id}/cancel").status_code == 409  # run_finished
    assert post(chat, "again").status_code == 202  # the session is free again


def test_a_run_cancelled_during_its_model_call_stops_there_and_leaves_the_session_as_it_was(
    open_chat: OpenChat, fake: FakeProviderServer
) -> None:
    chat = open_chat("anthropic/claude-test")
    fake.hang(3, times=1, path=MESSAGES)
    fake.reply(tool_call("toolu_1", "ls", {"path": "/"}))
    run_id = post(chat, "hello").get_json()["id"]
    worker = threading.Thread(target=drain, args=(chat.who.client.application,))
    worker.start()
    wait_until(lambda: run_of(chat, run_id)["status"] == "running", timeout=WAIT)

    asked = chat.who.post(f"/v1/runs/{run_id}/cancel")
    worker.join(timeout=WAIT)

    assert asked.status_code == 202 and asked.get_json()["status"] == "running"
    assert run_of(chat, run_id)["status"] == "cancelled"
    assert chat.messages() == []  # no answer was stored: the user message goes with the run
    kinds = [s["kind"] for s in events(chat, run_id)]
    assert "tool_started" not in kinds and kinds[-1] == "run_finished"


def test_a_diffs_cause_after_a_cancelled_run_is_its_rollback_not_a_new_summary(
    open_chat: OpenChat, fake: FakeProviderServer
) -> None:
    chat = open_chat("anthropic/claude-test")
    with chat.engine.begin() as conn:  # an earlier compaction: both calls carry a summary
        store = TenantStore(conn, chat.tenant_id)
        store.messages.append_many(
            uuid.UUID(chat.session_id), [("user", [{"type": "text", "text": "hi"}])] * 3
        )
        store.summaries.create(uuid.UUID(chat.session_id), 2, "they said hi")
    fake.reply("answered, then dropped")
    run_id = uuid.UUID(post(chat, "hello").get_json()["id"])
    tenant = uuid.UUID(chat.who.tenant_id)

    def call_recorded() -> bool:
        with chat.engine.connect() as conn:
            steps = TenantStore(conn, tenant).run_events.after(run_id, 0)
        return any(s.kind == "model_call_finished" for s in steps)

    # The cancel is requested once the call is answered and recorded (a call in flight is hung up and
    # records nothing): the run stops at the step boundary after it and rolls its turn back.
    deps = Deps(chat.engine, chat.who.client.application.config["HANGO"])
    job = QueuedRun(tenant, run_id, Caller(uuid.UUID(chat.who.user_id), None))
    result = execute_run(deps, job, call_recorded)

    assert result.run.status == "cancelled"
    assert run_of(chat, str(run_id))["status"] == "cancelled"
    [call] = chat.who.get(f"/v1/sessions/{chat.session_id}/calls").get_json()["items"]
    assert call["run_id"] == str(run_id)  # the call was answered, and its turn rolled back
    diff = chat.who.get(f"/v1/sessions/{chat.session_id}/context/diff").get_json()
    assert diff["from"] == call["id"]
    assert diff["removed"] == ["message:4"]
    assert (diff["first_difference"]["part"], diff["first_difference"]["cause"]) == ("message:4", "rollback")


def test_a_run_cancelled_between_its_tools_keeps_only_its_finished_turns(
    open_chat: OpenChat, fake: FakeProviderServer, engine: sa.Engine
) -> None:
    chat = open_chat("anthropic/claude-test")
    fake.reply(
        tool_call("toolu_1", "ls", {"path": "/"}),
        tool_calls(("toolu_2", "ls", {"path": "/"}), ("toolu_3", "ls", {"path": "/"})),
    )
    run_id = uuid.UUID(post(chat, "hello").get_json()["id"])
    tenant = uuid.UUID(chat.who.tenant_id)

    def tools_finished() -> int:
        with engine.connect() as conn:
            steps = TenantStore(conn, tenant).run_events.after(run_id, 0)
        return sum(s.kind == "tool_finished" for s in steps)

    # The cancel is requested once the second turn's first tool finished: the next step is its second tool.
    deps = Deps(engine, chat.who.client.application.config["HANGO"])
    job = QueuedRun(tenant, run_id, Caller(uuid.UUID(chat.who.user_id), None))
    result = execute_run(deps, job, lambda: tools_finished() >= 2)

    assert result.run.status == "cancelled"
    assert [m["role"] for m in chat.messages()] == ["user", "assistant", "user"]  # the first turn only
    assert tools_finished() == 2


def test_a_second_message_is_409_unless_it_asks_to_be_enqueued_and_then_runs_in_order(
    open_chat: OpenChat,
) -> None:
    chat = open_chat("offline/echo")
    first = post(chat, "one").get_json()["id"]

    busy = post(chat, "two")
    second = post(chat, "two", multitask="enqueue")
    third = post(chat, "three", multitask="enqueue")

    assert busy.status_code == 409 and busy.get_json()["error"]["code"] == "session_busy"
    assert (second.status_code, third.status_code) == (202, 202)
    assert post(chat, "x", multitask="shove").status_code == 422
    drain(chat.who.client.application)
    users = [m["content"][0]["text"] for m in chat.messages() if m["role"] == "user"]
    assert users == ["one", "two", "three"]
    runs = [run_of(chat, r) for r in (first, second.get_json()["id"], third.get_json()["id"])]
    assert [r["status"] for r in runs] == ["completed"] * 3
    assert runs[0]["finished_at"] <= runs[1]["started_at"] and runs[1]["finished_at"] <= runs[2]["started_at"]


def test_runs_in_flight_are_capped_per_member_and_per_tenant(make_app, acme, engine) -> None:
    app = make_app(max_runs_per_member=2, max_runs_per_tenant=3)
    clients = {role: acme_as(acme, role, app) for role in ("owner", "member", "member2")}
    sessions = {role: [new_session(who) for _ in range(3)] for role, who in clients.items()}

    def send(role: str, index: int) -> Any:
        path = f"/v1/sessions/{sessions[role][index]}/messages"
        return clients[role].post(path, json={"content": "hi"})

    assert [send("member", i).status_code for i in (0, 1)] == [202, 202]
    member_capped = send("member", 2)
    assert send("member2", 0).status_code == 202
    tenant_capped = send("owner", 0)

    assert member_capped.status_code == 429
    assert member_capped.get_json()["error"]["code"] == "too_many_runs"
    assert member_capped.get_json()["error"]["details"] == {
        "member_in_flight": 2,
        "max_runs_per_member": 2,
        "tenant_in_flight": 2,
        "max_runs_per_tenant": 3,
    }
    assert tenant_capped.status_code == 429
    assert tenant_capped.get_json()["error"]["details"]["tenant_in_flight"] == 3
    drain(app)
    assert send("member", 2).status_code == 202  # finished runs are not in flight


def acme_as(acme, role: str, app) -> Any:
    import dataclasses

    return dataclasses.replace(getattr(acme, role), client=app.test_client())


def new_session(who) -> str:
    agent = who.post("/v1/agents", json={"name": "capped", "model": "offline/echo"}).get_json()["id"]
    return who.post("/v1/sessions", json={"agent_id": agent}).get_json()["id"]


def test_an_idempotency_key_queues_one_run_and_answers_it_again(open_chat: OpenChat) -> None:
    chat = open_chat("offline/echo")

    first = post(chat, "hello", key="k-1")
    again = post(chat, "hello", key="k-1")
    drain(chat.who.client.application)
    after = post(chat, "hello", key="k-1")

    assert [r.status_code for r in (first, again, after)] == [202, 202, 202]
    assert first.get_json()["id"] == again.get_json()["id"] == after.get_json()["id"]
    assert jobs(chat.engine) == [("hango.run", "succeeded")]
    assert [m["role"] for m in after.get_json()["messages"]] == ["user", "assistant"]


def test_an_idempotency_key_reused_with_another_message_is_422_naming_the_key(open_chat: OpenChat) -> None:
    """Issue 38 §4: the new text is refused out loud, never dropped for the old run."""
    chat = open_chat("offline/echo")
    first = post(chat, "hello", key="k-2")

    other = post(chat, "something else", key="k-2")

    assert first.status_code == 202
    assert other.status_code == 422, other.get_json()
    error = other.get_json()["error"]
    assert error["code"] == "idempotency_key_reused" and "k-2" in error["message"]
    assert error["details"] == {"idempotency_key": "k-2", "run_id": first.get_json()["id"]}
    assert len(jobs(chat.engine)) == 1  # no second run


def test_the_run_and_its_spans_join_the_trace_of_the_request_that_queued_it(
    open_chat: OpenChat, fake: FakeProviderServer, spans
) -> None:
    chat = open_chat("anthropic/claude-test")
    fake.reply("hi")
    post(chat, "hello")

    drain(chat.who.client.application)

    finished = spans()
    request = next(s for s in finished if s.attributes.get("http.route", "").endswith("/messages"))
    run = next(s for s in finished if s.name == names.SPAN_RUN)
    job = next(s for s in finished if s.name == names.SPAN_JOB.format(task="hango.run"))
    chat_span = next(s for s in finished if s.name.startswith(names.SPAN_CHAT))
    assert run.context.trace_id == request.context.trace_id == chat_span.context.trace_id
    assert run.parent.span_id == job.context.span_id  # the run goes under its job's span
    assert job.parent.span_id == request.context.span_id  # which continues the request's


@pytest.mark.parametrize("path", ["/v1/runs/{run}", "/v1/runs/{run}/events"])
def test_another_members_run_is_404(open_chat: OpenChat, acme, path: str) -> None:
    chat = open_chat("offline/echo")
    run_id = post(chat, "hello").get_json()["id"]
    stranger = acme_as(acme, "member2", chat.who.client.application)

    assert stranger.get(path.format(run=run_id)).status_code == 404
    assert stranger.post(f"/v1/runs/{run_id}/cancel").status_code == 404


def dead_run(chat: Chat, engine: sa.Engine) -> uuid.UUID:
    """What a worker killed mid-run leaves: a queued run's row ``running``, its job on the queue, no lock."""
    run_id = uuid.UUID(post(chat, "hello").get_json()["id"])
    with engine.begin() as conn:
        TenantStore(conn, uuid.UUID(chat.who.tenant_id)).runs.start(run_id)
    return run_id


def stored_run(engine: sa.Engine, run_id: uuid.UUID) -> sa.Row:
    with engine.connect() as conn:
        return conn.execute(sa.select(schema.runs).where(schema.runs.c.id == run_id)).one()


def test_the_periodic_reaper_fails_a_dead_workers_run_with_an_error_step(open_chat: OpenChat, engine) -> None:
    chat = open_chat("offline/echo")
    run_id = dead_run(chat, engine)

    reaped = reap_dead_runs(Deps(engine, chat.who.client.application.config["HANGO"]))

    assert [(r.tenant_id, r.id) for r in reaped] == [(uuid.UUID(chat.who.tenant_id), run_id)]
    run = stored_run(engine, run_id)
    assert (run.status, run.error["code"]) == ("failed", "interrupted")
    [step] = events(chat, str(run_id))
    assert (step["seq"], step["kind"], step["detail"]["code"]) == (1, "error", "interrupted")


def test_the_periodic_reaper_of_another_queue_leaves_the_run_to_its_own(open_chat: OpenChat, engine) -> None:
    chat = open_chat("offline/echo")
    run_id = dead_run(chat, engine)
    config = chat.who.client.application.config["HANGO"]

    reaped = reap_dead_runs(Deps(engine, replace(config, job_queue=f"{config.job_queue}-other")))

    assert reaped == []
    assert stored_run(engine, run_id).status == "running"  # left for its own queue's reaper, or a read


def test_a_run_cancelled_before_its_worker_starts_it_is_left_alone(open_chat: OpenChat, engine) -> None:
    chat = open_chat("offline/echo")
    run_id = uuid.UUID(post(chat, "hello").get_json()["id"])
    assert chat.who.post(f"/v1/runs/{run_id}/cancel").status_code == 202
    deps = Deps(engine, chat.who.client.application.config["HANGO"])

    # What a worker that fetched the job just before the cancel does: it finds the run not queued.
    result = execute_run(
        deps, QueuedRun(uuid.UUID(chat.who.tenant_id), run_id, Caller(None, None)), lambda: False
    )

    assert result is None
    assert run_of(chat, str(run_id))["status"] == "cancelled" and chat.messages() == []
