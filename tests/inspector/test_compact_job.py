"""Compact-now as a queued run: 202 and poll, one job per session at a time, cancel, failure, caps.

``POST /v1/sessions/{id}/compact`` queues a run of kind ``compact``; ``tests.support.queue.drain``
runs procrastinate's own worker in this process until the queue is empty.
"""

from __future__ import annotations

import threading
import uuid
from typing import Any

import sqlalchemy as sa

from hango.agent.deps import Deps
from hango.agent.runner import QueuedRun, execute_run
from hango.agent.state import Caller
from hango.db.schema import session_summaries
from hango.telemetry import names
from tests.fakes.provider_server import MESSAGES
from tests.inspector.conftest import Lab, assistant, user
from tests.support.clients import error_code
from tests.support.net import wait_until
from tests.support.queue import drain

SUMMARY = "The user asked twenty questions about the API; each was answered."
WAIT = 60.0


def long_chat(turns: int = 20) -> list:
    return [m for i in range(turns) for m in (user(f"question {i} " * 30), assistant(f"answer {i} " * 30))]


def compact(lab: Lab, session: str, **body: Any):
    return lab.who.post(f"/v1/sessions/{session}/compact", json=body)


def run_of(lab: Lab, run_id: str) -> dict[str, Any]:
    answer = lab.who.get(f"/v1/runs/{run_id}")
    assert answer.status_code == 200, answer.get_json()
    return answer.get_json()


def step_kinds(lab: Lab, run_id: str) -> list[str]:
    return [s["kind"] for s in lab.who.get(f"/v1/runs/{run_id}/events").get_json()["items"]]


def summaries(lab: Lab) -> list[Any]:
    with lab.engine.connect() as conn:
        return list(conn.execute(sa.select(session_summaries)))


def test_compact_now_answers_202_with_a_queued_run_and_the_summary_appears_once_a_worker_ran_it(lab: Lab):
    session = lab.session(lab.agent(), long_chat())
    preview = lab.inspect(session, compaction="preview")["compaction"]
    lab.fake.reply(SUMMARY)

    queued = compact(lab, session, instructions="keep the API")

    assert queued.status_code == 202, queued.get_json()
    run = queued.get_json()
    assert queued.headers["Location"] == f"/v1/runs/{run['id']}"
    assert (run["kind"], run["status"], run["state"], run["result"]) == ("compact", "queued", "queued", None)
    assert lab.fake.bodies(MESSAGES) == [] and summaries(lab) == []  # nothing runs before a worker

    drain(lab.who.client.application)

    done = run_of(lab, run["id"])
    assert (done["status"], done["state"], done["messages"]) == ("completed", "succeeded", [])
    assert done["result"] == {
        **preview,
        "through_seq": preview["summarize"][1],
        "model": "anthropic/claude-test",
    }
    [summary] = summaries(lab)
    assert (summary.text, summary.through_seq) == (SUMMARY, preview["summarize"][1])
    assert lab.inspect(session)["messages"][0]["id"] == "summary"
    kinds = step_kinds(lab, run["id"])
    assert kinds[0] == "run_started" and kinds[-2:] == ["compaction", "run_finished"]
    assert "model_call_finished" in kinds


def test_compact_now_queued_behind_a_running_run_waits_for_it(lab: Lab):
    session = lab.session(lab.agent(), long_chat())
    lab.fake.reply("the twenty-first answer", SUMMARY)
    message = lab.who.post(f"/v1/sessions/{session}/messages", json={"content": "question 20"}).get_json()
    release = threading.Event()

    def gate() -> bool:  # the run's step boundaries: it stays ``running`` until the test lets it go
        return not release.wait(WAIT)

    deps = Deps(lab.app_engine, lab.who.client.application.config["HANGO"])
    job = QueuedRun(lab.tenant_id, uuid.UUID(message["id"]), Caller(uuid.UUID(lab.who.user_id), None))
    running = threading.Thread(target=execute_run, args=(deps, job, gate))
    running.start()
    wait_until(lambda: run_of(lab, message["id"])["status"] == "running", timeout=WAIT)

    busy = compact(lab, session)
    queued = compact(lab, session, multitask="enqueue")
    worker = threading.Thread(target=drain, args=(lab.who.client.application,))
    worker.start()
    release.set()
    running.join(WAIT)
    worker.join(WAIT)

    assert busy.status_code == 409 and error_code(busy) == "session_busy"
    assert queued.status_code == 202, queued.get_json()
    ran, compacted = run_of(lab, message["id"]), run_of(lab, queued.get_json()["id"])
    assert (ran["status"], compacted["status"]) == ("completed", "completed")
    assert ran["finished_at"] <= compacted["started_at"]
    assert len(lab.fake.bodies(MESSAGES)) == 2  # the run's call, then the summarizer's
    kept = compacted["result"]["keep_from"]
    parts = {p["id"]: p["tokens"] for p in lab.inspect(session)["messages"]}
    assert compacted["result"]["tokens_kept"] == sum(parts[f"message:{s}"] for s in range(kept, 43))


def test_a_cancelled_queued_compaction_never_calls_the_summarizer(lab: Lab):
    session = lab.session(lab.agent(), long_chat())
    run = compact(lab, session).get_json()

    cancelled = lab.who.post(f"/v1/runs/{run['id']}/cancel")
    drain(lab.who.client.application)

    assert cancelled.status_code == 202 and cancelled.get_json()["status"] == "cancelled"
    assert run_of(lab, run["id"])["status"] == "cancelled"
    assert lab.fake.bodies(MESSAGES) == [] and summaries(lab) == []
    assert compact(lab, session).status_code == 202  # the session is free again


def test_a_compaction_cancelled_while_its_summarizer_answers_stores_nothing(lab: Lab):
    """Issue 38 §3: the cancel is requested once the summarizer's call finished; the summary is not stored."""
    session = lab.session(lab.agent(), long_chat())
    lab.fake.reply(SUMMARY)
    run_id = compact(lab, session).get_json()["id"]
    deps = Deps(lab.engine, lab.who.client.application.config["HANGO"])
    job = QueuedRun(uuid.UUID(lab.who.tenant_id), uuid.UUID(run_id), Caller(uuid.UUID(lab.who.user_id), None))

    result = execute_run(deps, job, lambda: "model_call_finished" in step_kinds(lab, run_id))

    assert (result.run.status, result.run.result) == ("cancelled", None)
    assert len(lab.fake.bodies(MESSAGES)) == 1 and summaries(lab) == []
    assert "compaction" not in step_kinds(lab, run_id)
    assert lab.inspect(session)["messages"][0]["id"] != "summary"


def test_a_failing_summarizer_leaves_the_compaction_failed_with_provider_error_and_the_session_unchanged(
    lab: Lab,
):
    session = lab.session(lab.agent(), long_chat())
    before = lab.inspect(session)
    lab.fake.fail(500, times=None, path=MESSAGES)

    failed = lab.who.post_and_wait(f"/v1/sessions/{session}/compact", json={})

    assert failed.status_code == 502 and error_code(failed) == "provider_error"
    [run] = lab.who.get(f"/v1/sessions/{session}/runs").get_json()["items"]
    assert (run["kind"], run["state"], run["error"]["code"]) == ("compact", "failed", "provider_error")
    assert run["result"] is None
    assert "error" in step_kinds(lab, run["id"])
    assert summaries(lab) == []
    assert lab.inspect(session)["messages"] == before["messages"]


def test_the_in_flight_cap_counts_compactions(make_lab):
    lab = make_lab(max_runs_per_member=1)
    session = lab.session(lab.agent(), long_chat())
    other = lab.session(lab.agent(), [user("hello")])

    queued = compact(lab, session)
    capped = lab.who.post(f"/v1/sessions/{other}/messages", json={"content": "hi"})

    assert queued.status_code == 202, queued.get_json()
    assert capped.status_code == 429 and error_code(capped) == "too_many_runs"
    assert capped.get_json()["error"]["details"]["member_in_flight"] == 1
    drain(lab.who.client.application)
    assert lab.who.post(f"/v1/sessions/{other}/messages", json={"content": "hi"}).status_code == 202


def test_a_compaction_runs_in_its_own_span_with_its_run_id(lab: Lab, spans):
    session = lab.session(lab.agent(), long_chat())
    lab.fake.reply(SUMMARY)
    spans()
    run = compact(lab, session).get_json()

    drain(lab.who.client.application)

    [span] = [s for s in spans() if s.name == names.SPAN_SESSION_COMPACT]
    assert span.attributes[names.RUN_ID] == run["id"]
    assert span.attributes[names.RUN_STATUS] == "completed"


def test_compact_now_queued_behind_a_run_is_judged_on_the_history_that_run_leaves(lab: Lab):
    session = lab.session(lab.agent())  # nothing to cut yet: alone, compact-now is 422
    lab.fake.reply("hi", SUMMARY)
    assert lab.who.post(f"/v1/sessions/{session}/messages", json={"content": "hello"}).status_code == 202

    queued = compact(lab, session, multitask="enqueue")
    drain(lab.who.client.application)

    assert queued.status_code == 202, queued.get_json()
    done = run_of(lab, queued.get_json()["id"])
    assert (done["status"], done["result"]["summarize"]) == ("completed", [1, 2])
