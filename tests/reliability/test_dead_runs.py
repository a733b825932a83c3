"""A run whose queue worker was killed (SIGKILL, ``kill -9``) mid-run, then read through the API.

The worker is killed while it waits on a provider that hangs, so its run row is
``running`` and its connection (with the session's advisory lock) dies with it.
"""

from __future__ import annotations

import threading
import uuid

import pytest
import sqlalchemy as sa

from hango.db.schema import runs
from hango.worker import SHUTDOWN_GRACE
from tests.fakes.provider_server import MESSAGES
from tests.reliability.conftest import Live, MakeTenant
from tests.reliability.figures import record
from tests.reliability.http import Http
from tests.reliability.test_faults import user_session
from tests.runtime.chat import tool_call
from tests.support.net import wait_until

pytestmark = pytest.mark.server


def stored_run(engine: sa.Engine, session_id: str) -> sa.Row:
    with engine.connect() as conn:
        return conn.execute(sa.select(runs).where(runs.c.session_id == uuid.UUID(session_id))).one()


LOCK_HELD = sa.text(
    "select exists (select from pg_locks where locktype = 'advisory' and objsubid = 1 and granted"
    " and database = (select oid from pg_database where datname = current_database())"
    " and classid = ((hashtextextended(:session, 0) >> 32) & 4294967295)::oid"
    " and objid = (hashtextextended(:session, 0) & 4294967295)::oid)"
)


def lock_held(engine: sa.Engine, session_id: str) -> bool:
    """Whether some connection holds the session's advisory lock (asked of PostgreSQL directly)."""
    with engine.connect() as conn:
        return conn.execute(LOCK_HELD, {"session": session_id}).scalar_one()


def kill_mid_run(live: Live, who: Http, engine: sa.Engine, session_id: str) -> None:
    """Queue a run on a hanging provider, SIGKILL the queue worker running it, wait for its lock to go.

    A new worker starts afterwards, so the suite's later runs have one.
    """
    live.provider.hang(30, times=1, path=MESSAGES)
    sent = who.post(f"/v1/sessions/{session_id}/messages", json={"content": "go"})
    assert sent.status_code == 202, sent.text
    wait_until(lambda: len(live.provider.bodies(MESSAGES)) == 1, timeout=60)
    live.workers.kill()
    # The worker's PostgreSQL connection ends a moment after the process: wait for that, not luck.
    wait_until(lambda: not lock_held(engine, session_id), timeout=60)
    assert stored_run(engine, session_id).status == "running"  # what is left to reap
    live.workers.start()


READS = {
    "run": lambda who, session_id, run_id: who.get(f"/v1/runs/{run_id}"),
    "session": lambda who, session_id, run_id: who.get(f"/v1/sessions/{session_id}"),
    "runs": lambda who, session_id, run_id: who.get(f"/v1/sessions/{session_id}/runs"),
}


@pytest.mark.parametrize("read", READS)
def test_a_run_whose_worker_was_killed_is_failed_the_next_time_it_or_its_session_is_read(
    fresh: Live, live_tenant: MakeTenant, engine: sa.Engine, read: str
) -> None:
    owner = live_tenant(fresh.url).owner
    session_id = user_session(owner, engine)
    kill_mid_run(fresh, owner, engine, session_id)
    run_id = stored_run(engine, session_id).id

    answer = READS[read](owner, session_id, run_id)

    assert answer.status_code == 200, answer.text
    reaped = stored_run(engine, session_id)
    assert reaped.status == "failed"
    assert reaped.error["code"] == "interrupted"
    assert reaped.finished_at is not None
    if read != "session":  # the answer itself shows the run as it now is
        shown = answer.json() if read == "run" else answer.json()["items"][0]
        assert (shown["status"], shown["error"]["code"]) == ("failed", "interrupted")
    record(f"dead_runs/{read}", status_after_read=reaped.status)


def test_the_runs_list_never_shows_a_dead_run_as_running_and_a_live_one_stays_running(
    fresh: Live, live_tenant: MakeTenant, engine: sa.Engine
) -> None:
    owner = live_tenant(fresh.url).owner
    dead_session = user_session(owner, engine)
    kill_mid_run(fresh, owner, engine, dead_session)
    live_session = user_session(owner, engine)
    fresh.provider.reset()
    fresh.provider.hang(5, times=1, path=MESSAGES)
    running = threading.Thread(
        target=lambda: owner.post_and_wait(f"/v1/sessions/{live_session}/messages", json={"content": "slow"})
    )
    running.start()
    try:
        wait_until(lambda: len(fresh.provider.bodies(MESSAGES)) == 1, timeout=60)
        dead = owner.get(f"/v1/sessions/{dead_session}/runs").json()["items"]
        alive = owner.get(f"/v1/sessions/{live_session}/runs").json()["items"]
    finally:
        running.join(timeout=30)  # the live run answers once its 5 s hang ends

    assert [r["status"] for r in dead] == ["failed"]
    assert [r["status"] for r in alive] == ["running"]  # its worker holds the lock: not reaped


def test_a_killed_runs_user_message_does_not_come_back_in_the_next_run(
    fresh: Live, live_tenant: MakeTenant, engine: sa.Engine
) -> None:
    """Issue 38 §2: the reaper rolls an interrupted run back like a failed one; the run says so."""
    owner = live_tenant(fresh.url).owner
    session_id = user_session(owner, engine)
    kill_mid_run(fresh, owner, engine, session_id)  # its user message "go" was stored before the call
    dead_id = stored_run(engine, session_id).id
    # The periodic reaper fails it (read from the database directly: an API read would reap it itself).
    wait_until(lambda: stored_run(engine, session_id).status == "failed", timeout=60)
    fresh.provider.reset()
    fresh.provider.reply("done")

    finished = owner.post_and_wait(f"/v1/sessions/{session_id}/messages", json={"content": "after kill"})

    assert finished.status_code == 201, finished.body
    [body] = fresh.provider.bodies(MESSAGES)
    texts = [block["text"] for m in body["messages"] for block in m["content"]]
    assert texts == ["hello", "hi", "after kill"]  # the dead run's "go" is not merged into it
    dead = owner.get(f"/v1/runs/{dead_id}").json()
    assert (dead["status"], dead["error"]["code"], dead["message_kept"]) == ("failed", "interrupted", False)
    assert finished.body["run"]["message_kept"] is True


ANSWERS = {
    "text": ("paid for", "completed", None, ["assistant"]),
    "tool call": (tool_call("toolu_1", "ls", {"path": "/"}), "failed", "interrupted", ["assistant", "user"]),
}


@pytest.mark.parametrize("answer", ANSWERS)
def test_a_worker_stopped_by_sigterm_stores_the_answer_arriving_instead_of_cancelling_the_run(
    fresh: Live, live_tenant: MakeTenant, engine: sa.Engine, answer: str
) -> None:
    """Issue 38 §4: the answer arrives after the worker's grace is over; it is stored, never dropped.

    A text answer ends the run ``completed``; one calling a tool has its tools run and stored, and the
    run ends ``failed`` (``interrupted``) before its next model call.
    """
    reply, status, error, roles = ANSWERS[answer]
    owner = live_tenant(fresh.url).owner
    session_id = user_session(owner, engine)
    fresh.provider.hang(SHUTDOWN_GRACE + 10, times=1, path=MESSAGES)  # answers past the grace
    fresh.provider.reply(reply)
    sent = owner.post(f"/v1/sessions/{session_id}/messages", json={"content": "go"})
    assert sent.status_code == 202, sent.text
    wait_until(lambda: len(fresh.provider.bodies(MESSAGES)) == 1, timeout=60)

    codes = fresh.workers.terminate(timeout=120)
    fresh.workers.start()

    assert codes == [0]
    run = owner.get(sent.headers["Location"]).json()
    assert (run["status"], (run["error"] or {}).get("code")) == (status, error)
    assert [m["role"] for m in run["messages"]] == ["user", *roles] and run["message_kept"] is True
    assert len(fresh.provider.bodies(MESSAGES)) == 1  # no call after the shutdown
