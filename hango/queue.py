"""The job queue (procrastinate on hango's PostgreSQL), as the web sees it: defer and cancel jobs.

The web defers through procrastinate's SQLAlchemy connector on the request's own
connection, so a run's row, its audit row and its job commit in one transaction
(or none of them does). Workers (``hango.worker``) fetch jobs with ``SKIP LOCKED``;
jobs of one session share a procrastinate ``lock``, so they run one at a time, in
the order they were queued. A try run's job (a scratch turn) carries no lock: it keeps
nothing of the session, so it neither waits for the session's runs nor holds them up.
"""

from __future__ import annotations

import datetime as dt
import uuid
from dataclasses import dataclass
from typing import Any

import procrastinate
from opentelemetry import propagate
from procrastinate.contrib.sqlalchemy import SQLAlchemyPsycopg2Connector
from sqlalchemy.engine import Connection, Engine

from hango.agent.compact_now import compaction_plan, nothing_to_compact
from hango.agent.deps import Deps
from hango.agent.state import Caller
from hango.config import Config
from hango.errors import Conflict, QuotaExhausted, RateLimited
from hango.store import TenantStore
from hango.store.locks import lock_tenant_runs
from hango.store.runs import SCRATCH

RUN_TASK = "hango.run"
REAP_TASK = "hango.reap"
FOLD_TASK = "hango.fold_part_costs"


def session_lock(session_id: uuid.UUID) -> str:
    """The procrastinate lock every job of one session shares."""
    return f"session:{session_id}"


def web_queue(engine: Engine) -> procrastinate.App:
    """A procrastinate app that defers and cancels on ``engine`` (it runs no worker)."""
    app = procrastinate.App(connector=SQLAlchemyPsycopg2Connector())
    app.open(engine)
    return app


def trace_carrier() -> dict[str, str]:
    """The current trace context as W3C headers, for a job to continue the request's trace."""
    carrier: dict[str, str] = {}
    propagate.inject(carrier)
    return carrier


def defer_run(
    queue: procrastinate.App, conn: Connection, run: Any, api_key_id: uuid.UUID | None, queue_name: str
) -> int:
    """Queue ``run``'s job on ``queue_name`` in ``conn``'s transaction; returns the job id.

    A try run's job has no lock: it runs beside the session's runs.
    """
    lock = None if run.kind == SCRATCH else session_lock(run.session_id)
    deferrer = queue.configure_task(RUN_TASK, connection=conn, lock=lock, queue=queue_name)
    return deferrer.defer(
        tenant_id=str(run.tenant_id),
        run_id=str(run.id),
        user_id=str(run.user_id),
        api_key_id=str(api_key_id) if api_key_id else None,
        trace=trace_carrier(),
    )


def cancel_job(queue: procrastinate.App, conn: Connection, job_id: int, *, running: bool) -> bool:
    """Cancel a queued job, or ask a running one to abort (it stops at its next step)."""
    return queue.job_manager.cancel_job_by_id(job_id, abort=running, connection=conn)


@dataclass(frozen=True)
class NewRun:
    """A message for a session's agent (or, of kind ``compact``, a compaction; of kind ``try``, a
    scratch turn), as the web received it."""

    session_id: uuid.UUID
    content: Any  # a message's text blocks; a compaction's ``{"instructions": ...}``; a try's body
    caller: Caller
    idempotency_key: str | None = None
    multitask: str = "reject"  # or "enqueue": wait behind the session's queued and running runs
    kind: str = "message"


def enqueue_run(
    queue: procrastinate.App, store: TenantStore, config: Config, new: NewRun
) -> tuple[Any, bool]:
    """Store a ``queued`` run with the user's content and defer its job, in ``store``'s transaction.

    Returns the run and whether it is new: an ``Idempotency-Key`` seen before returns that
    run. 409 ``session_busy`` while the session has a run queued or running (unless
    ``multitask`` is ``enqueue``), 429 ``too_many_runs`` past the in-flight caps, 402 when
    the quota is used up. The tenant's runs are queued one at a time, so the checks hold.
    """
    lock_tenant_runs(store.conn, store.tenant_id)
    if new.idempotency_key is not None:
        previous = store.runs.by_idempotency_key(new.session_id, new.idempotency_key)
        if previous is not None:
            return previous, False
    _admit(store, config, new)
    return _store_and_defer(queue, store, config, new), True


def enqueue_compaction(
    queue: procrastinate.App, store: TenantStore, deps: Deps, session: Any, new: NewRun
) -> Any:
    """Queue a compact run (``new.kind`` ``compact``) like a message's run, on the session's lock.

    The same 409, 429 and 402 as ``enqueue_run``; then 422 ``nothing_to_compact`` when the
    session's next request has no place to cut (no summarizer is called to find out).
    Queued behind runs in flight, the history will have grown: its worker decides then.
    """
    lock_tenant_runs(store.conn, store.tenant_id)
    _admit(store, deps.config, new)
    behind = new.multitask == "enqueue" and store.runs.active_in_session(new.session_id)
    if not behind and compaction_plan(deps, store, session, new.caller) is None:
        raise nothing_to_compact()
    return _store_and_defer(queue, store, deps.config, new)


def enqueue_try(queue: procrastinate.App, store: TenantStore, config: Config, new: NewRun) -> Any:
    """Queue a try run (``new.kind`` ``try``, the try body its ``content``): a scratch turn.

    The same 429 and 402 as a run; never 409: it changes nothing of the session, so it may
    run while the session's runs do.
    """
    lock_tenant_runs(store.conn, store.tenant_id)
    _check_caps(store, config, new.caller.user_id)
    _check_quota(store)
    return _store_and_defer(queue, store, config, new)


def _admit(store: TenantStore, config: Config, new: NewRun) -> None:
    """409 ``session_busy`` (unless ``multitask`` is ``enqueue``), 429 past the caps, 402 over quota."""
    if new.multitask != "enqueue" and store.runs.active_in_session(new.session_id):
        raise Conflict("another run is in progress on this session", code="session_busy")
    _check_caps(store, config, new.caller.user_id)
    _check_quota(store)


def _check_quota(store: TenantStore) -> None:
    left = store.usage.quota_left(dt.datetime.now(dt.UTC))
    if left is not None and left <= 0:
        raise QuotaExhausted()


def _store_and_defer(queue: procrastinate.App, store: TenantStore, config: Config, new: NewRun) -> Any:
    run = store.runs.enqueue(new.session_id, new.caller.user_id, new.content, new.idempotency_key, new.kind)
    job_id = defer_run(queue, store.conn, run, new.caller.api_key_id, config.job_queue)
    return store.runs.attach_job(run.id, job_id)


def _check_caps(store: TenantStore, config: Config, user_id: uuid.UUID) -> None:
    member, tenant = store.runs.in_flight(user_id)
    figures = {
        "member_in_flight": member,
        "max_runs_per_member": config.max_runs_per_member,
        "tenant_in_flight": tenant,
        "max_runs_per_tenant": config.max_runs_per_tenant,
    }
    if config.max_runs_per_member and member >= config.max_runs_per_member:
        message = f"this member has {member} runs queued or running (HANGO_MAX_RUNS_PER_MEMBER={config.max_runs_per_member})"
    elif config.max_runs_per_tenant and tenant >= config.max_runs_per_tenant:
        message = f"this tenant has {tenant} runs queued or running (HANGO_MAX_RUNS_PER_TENANT={config.max_runs_per_tenant})"
    else:
        return
    raise RateLimited(message, code="too_many_runs", details=figures, headers={"Retry-After": "5"})


def cancel_run(queue: procrastinate.App, store: TenantStore, run: Any) -> Any:
    """Cancel a queued run (it never starts) or ask a running one to stop at its next step.

    409 ``run_finished`` for a run that already ended.
    """
    cancelled = store.runs.cancel_queued(run.id)
    if cancelled is not None:
        if cancelled.job_id is not None:
            cancel_job(queue, store.conn, cancelled.job_id, running=False)
        store.run_events.add_next(run.id, "run_finished", {"status": "cancelled", "stop_reason": None})
        return cancelled
    current = store.runs.get(run.id)
    if current.status != "running":
        raise Conflict(f"the run already ended ({current.status})", code="run_finished")
    if current.job_id is not None:
        cancel_job(queue, store.conn, current.job_id, running=True)
    return current
