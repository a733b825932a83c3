"""A quiet tenant waits for one model call, not a whole run: a run gives its slot back at a turn boundary
(``hango.agent.yielding``), and ``HANGO_QUEUE_HEADROOM`` keeps slots for tenants with nothing running.

A real procrastinate worker (``hango.worker``) runs the runs, on the test's PostgreSQL; the busy tenant's
model is the fake Anthropic server, held per request by its validator so every test orders its runs by
what the worker has claimed (no timing); the quiet tenant's model is ``offline/echo`` unless it must hold.
"""

from __future__ import annotations

import contextlib
import dataclasses
import threading
from typing import Any

import sqlalchemy as sa
from flask import Flask

from hango.agent.deps import Deps
from hango.worker import reap_dead_runs, worker_options, worker_queue
from tests.fakes.provider_server import MESSAGES, FakeProviderServer
from tests.runtime.chat import Chat, shape, tool_call
from tests.runtime.conftest import OpenChat
from tests.support.clients import As, Tenant
from tests.support.net import wait_until
from tests.support.queue import ABORT_POLL, worker_thread

WAIT = 60.0
NOTE = {"path": "/notes.md", "content": "one\n"}


def working(app: Flask) -> contextlib.AbstractContextManager[None]:
    """``app``'s queue worker (its concurrency and headroom), in a thread, until the block ends."""
    deps = Deps(app.extensions["hango.engine"], app.config["HANGO"])
    options = worker_options(deps, abort_job_polling_interval=ABORT_POLL)
    return worker_thread(worker_queue(deps, periodic=False), options, "queue-worker")


def first_user_text(body: dict) -> str:
    return " ".join(b["text"] for b in body["messages"][0]["content"] if b["type"] == "text")


class Gates:
    """The fake model's holds: a ``hold`` run's call waits for ``release``; the ``multi`` run's first call
    waits for ``posted``, its later ones for ``resume``."""

    def __init__(self, fake: FakeProviderServer) -> None:
        self.release, self.posted, self.resume = threading.Event(), threading.Event(), threading.Event()
        fake.validator = self.hold

    def hold(self, body: dict) -> None:
        text = first_user_text(body)
        if "hold" in text:
            self.release.wait(WAIT)
        elif "multi" in text:
            (self.posted if len(body["messages"]) == 1 else self.resume).wait(WAIT)

    def open_all(self) -> None:
        for gate in (self.release, self.posted, self.resume):
            gate.set()


def post(who: As, session_id: str, text: str) -> str:
    sent = who.post(f"/v1/sessions/{session_id}/messages", json={"content": text})
    assert sent.status_code == 202, sent.get_json()
    return sent.get_json()["id"]


def session_of(who: As, model: str) -> str:
    agent = who.post("/v1/agents", json={"name": model, "model": model, "tools": []})
    assert agent.status_code == 201, agent.get_json()
    session = who.post("/v1/sessions", json={"agent_id": agent.get_json()["id"]})
    assert session.status_code == 201, session.get_json()
    return session.get_json()["id"]


def status(who: As, run_id: str) -> str:
    return who.get(f"/v1/runs/{run_id}").get_json()["status"]


def ended(who: As, run_id: str, want: str = "completed") -> bool:
    return status(who, run_id) == want


def kinds(who: As, run_id: str) -> list[Any]:
    """The run's steps, each its kind (``run_started`` with its detail, which says ``resumed``)."""
    steps = who.get(f"/v1/runs/{run_id}/events").get_json()["items"]
    return [(s["kind"], s["detail"]) if s["kind"] == "run_started" else s["kind"] for s in steps]


def job_of(engine: sa.Engine, run_id: str) -> tuple[str, int]:
    """The run's job: its status and attempts (each time a worker ran it; a retry gives the slot back)."""
    query = sa.text(
        "select j.status, j.attempts from procrastinate_jobs j join runs r on r.job_id = j.id where r.id = :id"
    )
    with engine.connect() as conn:
        row = conn.execute(query, {"id": run_id}).one()
    return str(row.status), row.attempts


def two_tenants(
    open_chat: OpenChat, globex: Tenant, fake: FakeProviderServer, **config: Any
) -> tuple[Chat, As, Gates]:
    """A busy tenant's chat on a worker of two slots, the quiet tenant on the same app, the model's holds."""
    chat = open_chat("anthropic/claude-test", worker_concurrency=2, **config)
    return chat, dataclasses.replace(globex.owner, client=chat.who.client), Gates(fake)


def one_tool_turn(body: dict) -> Any:
    """The fake model's answer: a ``multi`` run's first call writes a note; every other call is answered."""
    if len(body["messages"]) == 1 and "multi" in first_user_text(body):
        return tool_call("toolu_1", "write_file", NOTE)
    return "Done."


ONE_TURN = ["model_call_started", "model_call_finished"]
TOOL_TURN = [*ONE_TURN, "tool_started", "tool_finished", "message_stored", "message_stored"]


def test_a_run_yields_its_slot_at_a_turn_boundary_to_a_quiet_tenant_and_then_completes_in_order(
    open_chat: OpenChat, globex: Tenant, fake: FakeProviderServer
) -> None:
    chat, quiet, gates = two_tenants(open_chat, globex, fake)
    busy = chat.who
    fake.answerer = one_tool_turn
    multi = post(busy, chat.session_id, "multi")
    held = post(busy, session_of(busy, "anthropic/claude-test"), "hold")

    with working(busy.client.application):
        try:
            wait_until(lambda: len(fake.bodies(MESSAGES)) == 2, timeout=WAIT)  # both slots: the busy tenant's
            quick = post(quiet, session_of(quiet, "anthropic/claude-test"), "hold quiet")
            gates.posted.set()  # the multi run answers, stores its turn, and meets the quiet run waiting
            wait_until(lambda: len(fake.bodies(MESSAGES)) == 3, timeout=WAIT)
            # the quiet run's call is the next one, before the multi run's next call: its slot was given back
            assert first_user_text(fake.bodies(MESSAGES)[2]) == "hold quiet"
            assert job_of(chat.engine, multi) == ("todo", 1)
            gates.release.set()
            wait_until(lambda: ended(quiet, quick), timeout=WAIT)
            gates.resume.set()
            wait_until(lambda: ended(busy, multi), timeout=WAIT)
        finally:
            gates.open_all()
        wait_until(lambda: ended(busy, held), timeout=WAIT)

    assert kinds(busy, multi) == [
        ("run_started", {}),
        "message_stored",  # the user's message
        *TOOL_TURN,
        ("run_started", {"resumed": True}),
        *ONE_TURN,
        "message_stored",
        "run_finished",
    ]
    assert shape(chat.messages()) == [
        (1, "user", ["text"]),
        (2, "assistant", ["tool_use"]),
        (3, "user", ["tool_result"]),
        (4, "assistant", ["text"]),
    ]
    assert job_of(chat.engine, multi) == ("succeeded", 2)  # one job, run twice: given back once
    assert job_of(chat.engine, held) == ("succeeded", 1)


def test_every_queued_run_of_a_quiet_tenant_takes_a_slot_at_the_busy_runs_turn_boundaries(
    open_chat: OpenChat, globex: Tenant, fake: FakeProviderServer
) -> None:
    chat = open_chat("anthropic/claude-test", worker_concurrency=3)
    busy, quiet = chat.who, dataclasses.replace(globex.owner, client=chat.who.client)
    answered = [threading.Event() for _ in range(3)]  # each busy run's first call, one after the other
    release, resume = threading.Event(), threading.Event()

    def hold(body: dict) -> None:
        text = first_user_text(body)
        if "hold" in text:
            release.wait(WAIT)
        elif len(body["messages"]) == 1:
            answered[int(text.split()[-1])].wait(WAIT)
        else:
            resume.wait(WAIT)

    fake.validator = hold
    fake.answerer = one_tool_turn
    sessions = [chat.session_id, *(session_of_agent(busy, chat.agent_id) for _ in range(2))]
    multi = [post(busy, session, f"multi {n}") for n, session in enumerate(sessions)]
    calls = lambda: [first_user_text(body) for body in fake.bodies(MESSAGES)]  # noqa: E731

    with working(busy.client.application):
        try:
            wait_until(lambda: len(calls()) == 3, timeout=WAIT)  # every slot: the busy tenant's
            quick = [
                post(quiet, session_of(quiet, "anthropic/claude-test"), f"hold quiet {n}") for n in range(2)
            ]
            answered[0].set()  # busy 3 in progress, quiet 0: the slot moves
            wait_until(lambda: len(calls()) == 4, timeout=WAIT)
            answered[1].set()  # busy still 3 in progress (one given back), quiet 1: the slot moves again
            wait_until(lambda: len(calls()) == 5, timeout=WAIT)
            answered[2].set()  # quiet 2 + 1 is not below busy's 3: this run keeps its slot
            wait_until(lambda: len(calls()) == 6, timeout=WAIT)
            # Counting only running runs, the second busy run kept its slot (quiet 1 + 1 is not below 2)
            # and the quiet tenant's second run waited for its first to end.
            assert sorted(calls()[3:5]) == ["hold quiet 0", "hold quiet 1"]
            assert [job_of(chat.engine, run) for run in multi] == [("todo", 1), ("todo", 1), ("doing", 0)]
        finally:
            for gate in (*answered, release, resume):
                gate.set()
        wait_until(lambda: all(ended(quiet, run) for run in quick), timeout=WAIT)
        wait_until(lambda: all(ended(busy, run) for run in multi), timeout=WAIT)

    # given back twice in all, then no slot moved again
    assert [job_of(chat.engine, run) for run in multi] == [
        ("succeeded", 2),
        ("succeeded", 2),
        ("succeeded", 1),
    ]


def session_of_agent(who: As, agent_id: str) -> str:
    session = who.post("/v1/sessions", json={"agent_id": agent_id})
    assert session.status_code == 201, session.get_json()
    return session.get_json()["id"]


def test_a_run_with_nobody_waiting_does_not_yield(open_chat: OpenChat, fake: FakeProviderServer) -> None:
    chat = open_chat("anthropic/claude-test", worker_concurrency=2)
    fake.reply(
        tool_call("toolu_1", "write_file", NOTE),
        tool_call("toolu_2", "read_file", {"path": "/notes.md"}),
        "Done.",
    )
    run = post(chat.who, chat.session_id, "several turns")

    with working(chat.who.client.application):
        wait_until(lambda: ended(chat.who, run), timeout=WAIT)

    assert kinds(chat.who, run) == [
        ("run_started", {}),
        "message_stored",
        *TOOL_TURN,
        *TOOL_TURN,
        *ONE_TURN,
        "message_stored",
        "run_finished",
    ]
    assert job_of(chat.engine, run) == ("succeeded", 1)  # run once


def test_a_cancel_of_a_yielded_run_ends_it_cancelled_with_its_answered_turns_kept(
    open_chat: OpenChat, globex: Tenant, fake: FakeProviderServer
) -> None:
    chat, quiet, gates = two_tenants(open_chat, globex, fake)
    busy = chat.who
    fake.reply(tool_call("toolu_1", "write_file", NOTE))
    multi = post(busy, chat.session_id, "multi")
    held = post(busy, session_of(busy, "anthropic/claude-test"), "hold")

    with working(busy.client.application):
        try:
            wait_until(lambda: len(fake.bodies(MESSAGES)) == 2, timeout=WAIT)
            quick = post(quiet, session_of(quiet, "anthropic/claude-test"), "hold quiet")
            gates.posted.set()
            # the multi run gave its slot to the quiet run (held in its call) and waits in the queue
            wait_until(lambda: job_of(chat.engine, multi) == ("todo", 1), timeout=WAIT)
            assert status(busy, multi) == "queued"
            cancelled = busy.post(f"/v1/runs/{multi}/cancel")
            assert cancelled.status_code == 202, cancelled.get_json()
            assert cancelled.get_json()["status"] == "cancelled"
        finally:
            gates.open_all()
        wait_until(lambda: ended(busy, held) and ended(quiet, quick), timeout=WAIT)

    assert status(busy, multi) == "cancelled"
    assert kinds(busy, multi) == [("run_started", {}), "message_stored", *TOOL_TURN, "run_finished"]
    assert busy.get(f"/v1/runs/{multi}/events").get_json()["items"][-1]["detail"]["status"] == "cancelled"
    # its answered turn stays; it never called the model again
    assert shape(chat.messages()) == [
        (1, "user", ["text"]),
        (2, "assistant", ["tool_use"]),
        (3, "user", ["tool_result"]),
    ]
    assert [first_user_text(b) for b in fake.bodies(MESSAGES)].count("multi") == 1
    assert job_of(chat.engine, multi)[0] == "cancelled"


def test_headroom_of_one_lets_a_quiet_tenant_start_while_a_busy_tenant_has_queued_work(
    open_chat: OpenChat, globex: Tenant, fake: FakeProviderServer
) -> None:
    chat, quiet, gates = two_tenants(open_chat, globex, fake, queue_headroom=1)
    busy = chat.who
    flood = [post(busy, session_of(busy, "anthropic/claude-test"), f"hold {n}") for n in range(3)]

    with working(busy.client.application):
        try:
            wait_until(lambda: len(fake.bodies(MESSAGES)) == 1, timeout=WAIT)
            quick = post(quiet, session_of(quiet, "offline/echo"), "quick")
            wait_until(lambda: ended(quiet, quick), timeout=WAIT)  # its slot was kept: no busy run ended
            assert len(fake.bodies(MESSAGES)) == 1  # the busy tenant's other runs still wait
            assert [status(busy, run) for run in flood] == ["running", "queued", "queued"]
        finally:
            gates.open_all()
        wait_until(lambda: all(ended(busy, run) for run in flood), timeout=WAIT)


def test_a_queued_run_whose_job_the_reaper_failed_ends_interrupted_and_frees_its_session(
    open_chat: OpenChat,
) -> None:
    chat = open_chat("anthropic/claude-test")
    run = post(chat.who, chat.session_id, "hello")  # its worker died holding the job (no worker runs here)
    with chat.engine.connect() as conn:
        job = conn.execute(sa.text("select job_id from runs where id = :id"), {"id": run}).scalar_one()
    deps = Deps(chat.engine, chat.who.client.application.config["HANGO"])

    reaped = reap_dead_runs(deps, [job])

    assert [str(run_id) for _, run_id in reaped] == [run]
    ended_run = chat.who.get(f"/v1/runs/{run}").get_json()
    assert (ended_run["status"], ended_run["error"]["code"]) == ("failed", "interrupted")
    assert post(chat.who, chat.session_id, "again")  # the session is not busy any more
