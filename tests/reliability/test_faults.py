"""Faults on live servers: a hanging provider, a failing one, a PostgreSQL restart, a killed worker."""

from __future__ import annotations

import itertools
import json
import shutil
import tempfile
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import requests
import sqlalchemy as sa

from hango.db import make_engine
from hango.db.embedded import EmbeddedPostgres
from hango.messages import Message, ToolUseBlock
from hango.providers import close_providers, merge_same_role
from tests.fakes.provider_server import MESSAGES, FakeProviderServer
from tests.reliability.anthropic_rules import Ledger, problem
from tests.reliability.conftest import MODEL, Live, MakeTenant, principal, provider_env
from tests.reliability.figures import record
from tests.reliability.histories import store_messages, text
from tests.reliability.http import Http, history, make_agent, make_session
from tests.support.database import migrated_postgres
from tests.support.net import retry_while, wait_until
from tests.support.server import ACCESS_LOG, START_TIMEOUT, gunicorn_server, queue_worker_pool, served
from tests.support.world import snapshot

pytestmark = pytest.mark.server

HANGS = 8
LOAD_SECONDS = 6.0
RECOVERY_TIMEOUT = 60.0


def user_session(who: Http, engine: sa.Engine) -> str:
    session_id = make_session(who, make_agent(who, MODEL))
    store_messages(engine, who.tenant_id, session_id, [text("user", "hello"), text("assistant", "hi")])
    return session_id


@pytest.fixture
def short_try(database_url: str, clean_db: None) -> Iterator[Live]:
    """A server of its own whose try timeout is 1 s, against a provider that can hang; it logs each request.

    One gunicorn worker: every try meets the same pool of 4 slots, so the hangs outnumber them
    whichever worker the kernel would have handed each connection to.
    """
    ledger = Ledger()
    log = Path(tempfile.mkdtemp(prefix="hango-hang-")) / "gunicorn.log"
    with FakeProviderServer(validator=ledger) as provider:
        env = provider_env(provider, try_timeout=1.0)
        # tries only: no queue worker is needed
        with (
            queue_worker_pool(database_url, env, log, count=0) as workers,
            gunicorn_server(
                database_url, env=env, log_path=log, workers=1, queue_workers=0, args=ACCESS_LOG
            ) as url,
        ):
            yield Live(url, provider, ledger, log, workers)
        close_providers()
    shutil.rmtree(log.parent, ignore_errors=True)


def timed_out(answer: requests.Response) -> bool:
    """A 504 ``provider_timeout``: the server kept the try's deadline."""
    return answer.status_code == 504 and answer.json()["error"]["code"] == "provider_timeout"


def test_a_hanging_provider_gives_504_within_10_s_and_the_try_pool_recovers(
    short_try: Live, live_tenant: MakeTenant, engine: sa.Engine
) -> None:
    owner = live_tenant(short_try.url).owner
    session_id = user_session(owner, engine)
    path = f"/v1/sessions/{session_id}/context/try"
    # First a try answered as usual: the worker's first call builds the SDK client and its types
    # (seconds on a loaded CPU) before any hang is timed, and the path is known good before the
    # fault. A 504 here is the 1 s deadline missed while doing so: try again, as after the hangs.
    warm = retry_while(lambda: owner.post(path, json={}), timed_out, timeout=RECOVERY_TIMEOUT)
    assert warm[-1].status_code == 200, warm[-1].text
    short_try.provider.hang(30, times=None, path=MESSAGES)

    waited = []
    for _ in range(HANGS):  # more than one worker's 4 pool slots: abandoned calls must free theirs
        # An abandoned call's SDK timeout is the time left to the try's deadline, so its thread ends
        # then; a try that meets such a slot waits for it instead of answering 503.
        started = time.monotonic()
        answer = owner.post(path, json={})
        waited.append(time.monotonic() - started)
        assert timed_out(answer), answer.text
    # How long the server took, from its own access log (written just after each answer): the test
    # process's own turns on a loaded CPU lengthen what it waited, not what the server spent.
    wait_until(lambda: len(served(short_try.log_text(), "POST", path)) == len(warm) + HANGS, timeout=90)
    seconds = [took for _, took in served(short_try.log_text(), "POST", path)][len(warm) :]
    short_try.provider.reset()
    # The next tries meet slots that are free or freeing. Each has 1 s to get the fake's answer,
    # which on a loaded machine it may miss: a 504 is that deadline kept, so try again (bounded);
    # a slot never given back would answer 503 try_pool_full and end the loop at once.
    tries = retry_while(lambda: owner.post(path, json={}), timed_out, timeout=RECOVERY_TIMEOUT)

    assert max(seconds) < 10, seconds
    assert tries[-1].status_code == 200, tries[-1].text
    record(
        "faults/hang",
        hangs=HANGS,
        try_timeout_s=1,
        slowest_504_s=round(max(seconds), 2),
        slowest_504_client_s=round(max(waited), 2),
        recovered=True,
        tries_to_recover=len(tries),
    )


def changed_tables(before: dict, after: dict) -> dict[str, int]:
    """How many rows each table gained (or lost) between two snapshots."""
    return {name: len(after[name]) - len(before[name]) for name in before if before[name] != after[name]}


@pytest.mark.parametrize("failure", ["500", "garbage"])
def test_a_failing_provider_gives_502_and_writes_only_the_rows_the_spec_requires(
    failure: str, fresh: Live, live_tenant: MakeTenant, engine: sa.Engine
) -> None:
    owner = live_tenant(fresh.url).owner
    session_id = user_session(owner, engine)
    fail = (
        (lambda: fresh.provider.fail(500, path=MESSAGES))
        if failure == "500"
        else (lambda: fresh.provider.garbage(path=MESSAGES))
    )

    before = snapshot(engine, owner.tenant_id)
    fail()
    tried = owner.post(f"/v1/sessions/{session_id}/context/try", json={"message": "and now?"})
    after_try = snapshot(engine, owner.tenant_id)
    fail()
    ran = owner.post_and_wait(f"/v1/sessions/{session_id}/messages", json={"content": "hello again"})
    after_run = snapshot(engine, owner.tenant_id)

    assert (tried.status_code, tried.json()["error"]["code"]) == (502, "provider_error")
    assert (ran.status_code, ran.json()["error"]["code"]) == (502, "provider_error")
    # context.try, outcome recorded; the try's new turn is a scratch part: it takes no seq of the session
    assert changed_tables(before, after_try) == {"audit_log": 1}
    # a failed run, its run.create and its steps (started, the model call, the error, finished); the
    # session's seq counter moved on (seq 3 is spent for good)
    assert changed_tables(after_try, after_run) == {"runs": 1, "audit_log": 1, "sessions": 0, "run_events": 5}
    runs = owner.get(f"/v1/sessions/{session_id}/runs").json()["items"]
    assert [r["status"] for r in runs] == ["failed"]
    assert [m["seq"] for m in history(owner, session_id)] == [1, 2]  # the session is as it was
    assert fresh.ledger.invalid == []


@pytest.fixture
def own_postgres() -> Iterator[tuple[EmbeddedPostgres, str]]:
    """A migrated PostgreSQL of this test's own, to restart under load."""
    with migrated_postgres("hango-restart-") as server_and_url:
        yield server_and_url


def restart(server: EmbeddedPostgres, url: str, down_for: float) -> None:
    """Stop PostgreSQL (fast: open connections are cut), wait, start it again on the same port."""
    port = sa.engine.make_url(url).port
    server._pg_ctl("stop", "-m", "fast", "-w")
    time.sleep(down_for)
    options = f"-p {port} -c listen_addresses=127.0.0.1 -c unix_socket_directories='' -c fsync=off"
    server._pg_ctl("start", "-w", "-t", "60", "-l", str(server.data_dir / "postgres.log"), "-o", options)


def hammer(who: Http, until: float) -> list[tuple[int, str]]:
    """GET and POST in a loop until ``until``: (status, error code or "") of each answer."""
    seen: list[tuple[int, str]] = []
    for n in itertools.count():
        if time.monotonic() > until or n > 5_000:
            break
        try:
            answer = (
                who.post("/v1/agents", json={"name": f"load {n}"}) if n % 3 == 0 else who.get("/v1/agents")
            )
        except requests.ConnectionError:
            seen.append((0, "connection"))
            continue
        body = answer.json()  # every answer is JSON, whatever happened to the database
        seen.append((answer.status_code, body["error"]["code"] if answer.status_code >= 400 else ""))
    return seen


def test_a_postgresql_restart_under_load_fails_cleanly_and_hango_recovers_without_a_restart(
    own_postgres, tmp_path: Path
) -> None:
    server, url = own_postgres
    engine = make_engine(url)
    who = principal(engine, "", ("Restart", "owner@restart.test", "owner"), 100_000)
    log = tmp_path / "gunicorn.log"
    with gunicorn_server(url, log_path=log) as base:
        who = Http(base, who.key, who.tenant_id, who.user_id, who.key_id)
        until = time.monotonic() + LOAD_SECONDS
        with ThreadPoolExecutor(4) as pool:
            load = [pool.submit(hammer, who, until) for _ in range(3)]
            time.sleep(1.5)
            restart(server, url, down_for=1.0)
            answers = [a for f in load for a in f.result(timeout=60)]
        wait_until(lambda: who.get("/v1/agents").status_code == 200, timeout=60)
        after = [who.get("/v1/agents").status_code for _ in range(10)]
        # The queue worker lived through it too: a run queued after the restart is run.
        session = make_session(who, make_agent(who, "offline/echo"))
        ran = who.post_and_wait(f"/v1/sessions/{session}/messages", json={"content": "after the restart"})
    who.close()
    engine.dispose()

    failures = [a for a in answers if a[0] != 200 and a[0] != 201]
    assert failures, "the restart was seen by some request"
    assert {status for status, _ in failures} <= {500, 503}, failures
    assert {code for _, code in failures} <= {"database_unavailable", "internal_error"}, failures
    assert after == [200] * 10
    assert ran.status_code == 201, ran.json()
    record(
        "faults/postgres_restart",
        requests=len(answers),
        failed_cleanly=len(failures),
        statuses=sorted({s for s, _ in answers}),
        recovered_without_restart=True,
    )


def stored_wire(messages: list[dict]) -> list[dict]:
    """The stored history as the adapter sends it: consecutive same-role messages merged."""
    from hango.messages import message_from_dict, message_to_dict

    merged = merge_same_role(
        message_from_dict({"role": m["role"], "content": m["content"]}) for m in messages
    )
    return [message_to_dict(m) for m in merged]


def test_a_worker_killed_mid_run_leaves_no_half_written_turn(
    fresh: Live, live_tenant: MakeTenant, engine: sa.Engine
) -> None:
    owner = live_tenant(fresh.url).owner
    session_id = user_session(owner, engine)
    fresh.provider.reply(Message("assistant", (ToolUseBlock("toolu_k1", "ls", {"path": "/"}),)))
    release = threading.Event()

    def judge_then_hold(body: dict) -> str | None:
        """The second call of the run (it carries the tool's result) hangs until released."""
        verdict = fresh.ledger(body)
        if "toolu_k1" in json.dumps(body) and not release.is_set():
            release.wait(30)
        return verdict

    fresh.provider.validator = judge_then_hold
    outcome: dict[str, object] = {}

    def run() -> None:
        try:
            outcome["status"] = owner.post(
                f"/v1/sessions/{session_id}/messages", json={"content": "go"}
            ).status_code
        except requests.ConnectionError as exc:
            outcome["status"] = type(exc).__name__

    runner = threading.Thread(target=run)
    runner.start()
    try:
        wait_until(lambda: len(fresh.provider.bodies(MESSAGES)) == 2, timeout=60)
        workers = fresh.workers.kill()  # kill -9 of the queue worker running it
    finally:
        release.set()
        fresh.provider.validator = fresh.ledger
    runner.join(timeout=30)
    fresh.workers.start()  # a new worker takes the next job once the reaper failed the dead one's
    wait_until(lambda: owner.get("/readyz", timeout=5).status_code == 200, timeout=START_TIMEOUT)

    fresh.provider.reply("back again")
    again = owner.post_and_wait(f"/v1/sessions/{session_id}/messages", json={"content": "still there?"})

    assert outcome["status"] != 201
    assert again.status_code == 201, again.text  # the session's advisory lock died with the worker
    stored = history(owner, session_id)
    assert problem({"messages": stored_wire(stored)}) is None, json.dumps(stored)
    assert [m["role"] for m in stored] == [
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
        "user",
        "assistant",
    ]
    assert fresh.ledger.invalid == []
    runs = [r["status"] for r in owner.get(f"/v1/sessions/{session_id}/runs").json()["items"]]
    assert "running" not in runs and runs[-1] == "completed", runs  # the killed run is not left running
    record("faults/worker_killed", workers_killed=len(workers), next_run="201", history_valid=True)
