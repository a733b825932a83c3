"""Job plumbing (procrastinate on hango's PostgreSQL), as the web sees it: defer and cancel jobs.

The web defers through procrastinate's SQLAlchemy connector on the request's own
connection, so a run's row, its audit row and its job commit in one transaction
(or none of them does). Workers (``hango.worker``) fetch jobs with ``SKIP LOCKED``;
jobs of one session share a procrastinate ``lock``, so they run one at a time, in
the order they were queued. A try run's job (a scratch turn) carries no lock: it keeps
nothing of the session, so it neither waits for the session's runs nor holds them up.
Who may queue a run at all is ``hango.admission``'s rule.
"""

from __future__ import annotations

import uuid
from typing import Any

import procrastinate
from opentelemetry import propagate
from procrastinate.contrib.sqlalchemy import SQLAlchemyPsycopg2Connector
from sqlalchemy.engine import Connection, Engine

from hango.store.runs import SCRATCH_TURN_KIND
from hango.worker import run_task


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

    A try run's job has no lock: it runs beside the session's runs. The job names the worker's run task
    (``hango.worker.run_task``), read off the task: the web's app knows no task, and runs none.
    """
    lock = None if run.kind == SCRATCH_TURN_KIND else session_lock(run.session_id)
    deferrer = queue.configure_task(run_task.name, connection=conn, lock=lock, queue=queue_name)
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
