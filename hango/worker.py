"""Workers: the procrastinate app that runs queued runs and the periodic jobs (``hango worker``).

A worker process opens its own psycopg 3 pool to hango's PostgreSQL and runs up
to ``HANGO_WORKER_CONCURRENCY`` runs at once, each in a thread of its own (the
run loop is synchronous). A run's job carries the web request's trace context:
the job's span (``process hango.run``) continues the request's trace, and the
run's (or the compaction's) spans go under it. The reaper runs every
``HANGO_REAPER_INTERVAL`` seconds on one worker of each queue (procrastinate defers a
periodic job once for all workers of the queue): it fails the queue's runs of dead
workers and its jobs of workers whose heartbeat stopped, so the next job of their
session can start. On the same tick the fold (``hango.fold_part_costs``) adds the part costs of
recorded calls, waiting in ``pending_part_costs``, to their sessions' totals: any queue's fold may
take any tenant's waiting rows, since the costs were priced when their calls were recorded.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import uuid
from collections.abc import Iterator, Sequence
from typing import Any

import procrastinate
from opentelemetry import context as otel_context
from opentelemetry import propagate
from opentelemetry.trace import SpanKind
from procrastinate.job_context import AbortReason
from procrastinate.jobs import Status
from procrastinate.manager import JobManager
from sqlalchemy.engine import make_url

from hango import run_events, telemetry
from hango.agent.deps import Deps
from hango.agent.run_steps import SHUTDOWN
from hango.agent.runner import QueuedRun, execute_run
from hango.agent.state import Caller
from hango.agent.turn_loop import YIELDED
from hango.agent.yielding import Yielded, open_slots
from hango.inspector.trying import shape_turn
from hango.mcp import calls, servers
from hango.store import TenantStore
from hango.store.part_costs import FOLD_BATCH, fold_waiting
from hango.store.runs import INTERRUPTED, fail_queued_of_jobs, reap_every_tenant
from hango.telemetry import names

log = logging.getLogger(__name__)
STALLED_HEARTBEATS = 3
# On SIGTERM a worker lets its runs go on this long, then asks them to stop before their next model call:
# an answer arriving is stored with its turn, and the run ends ``failed`` (``interrupted``).
SHUTDOWN_GRACE = 10.0
RESTART_PAUSE = 2.0  # seconds between a worker that stopped by itself and the next one
GIVE_BACK = procrastinate.RetryStrategy(retry_exceptions={Yielded})  # at once, as often as a run yields


def libpq_url(database_url: str) -> str:
    """``database_url`` as psycopg 3 takes it (SQLAlchemy's driver suffix removed)."""
    return make_url(database_url).set(drivername="postgresql").render_as_string(hide_password=False)


# The queue's tasks, each defined once: its stored name (the claim's SQL and the job rows read it), how a
# worker runs it, its retry. A procrastinate task belongs to one app and hango makes many (the web's, and a
# worker's at each start), so each worker's app binds its own copy (``bind``) and the web defers through
# the task's name read off it (``hango.jobs.defer_run``). The bodies reach the worker's ``Deps`` through
# the job's context (``DEPS``), which the worker's app sets when it is made.
queue_tasks = procrastinate.Blueprint()
DEPS = "deps"


# A run that gives its slot back (``Yielded``) goes back to the queue as the same job: its retry.
@queue_tasks.task(name="hango.run", pass_context=True, retry=GIVE_BACK)
def run_task(
    context: procrastinate.JobContext,
    *,
    tenant_id: str,
    run_id: str,
    user_id: str,
    api_key_id: str | None,
    trace: dict[str, str],
) -> None:
    """Run the queued run (the web's ``defer_run`` queued it) on the worker's ``Deps``."""
    caller = Caller(uuid.UUID(user_id), uuid.UUID(api_key_id) if api_key_id else None)
    job = QueuedRun(uuid.UUID(tenant_id), uuid.UUID(run_id), caller)
    token = otel_context.attach(propagate.extract(trace))
    try:
        with job_span(context, job):
            result = execute_run(
                context.additional_context[DEPS], job, lambda: stop_asked(context), shape_turn
            )
    finally:
        otel_context.detach(token)
    if result is not None and result.run.status == YIELDED:
        raise Yielded()  # after its span ends: giving the slot back is no error of the job


@queue_tasks.task(name="hango.reap", pass_context=True)
async def reap_task(context: procrastinate.JobContext, timestamp: int) -> None:
    """Fail the queue's jobs of silent workers, then its runs no live worker runs (``reap_dead_runs``)."""
    deps: Deps = context.additional_context[DEPS]
    stalled_after = deps.config.worker_heartbeat * STALLED_HEARTBEATS
    stalled = await fail_stalled_jobs(context.app.job_manager, deps.config.job_queue, stalled_after)
    await asyncio.to_thread(reap_dead_runs, deps, stalled)


@queue_tasks.task(name="hango.fold_part_costs", pass_context=True)
async def fold_task(context: procrastinate.JobContext, timestamp: int) -> None:
    """Fold the waiting part costs into their sessions' totals (``fold_part_costs``)."""
    await asyncio.to_thread(fold_part_costs, context.additional_context[DEPS])


def bind(app: procrastinate.App, task: procrastinate.Task, queue: str) -> procrastinate.Task:
    """``task`` as ``app`` runs it, on ``queue``: its name, body, context and retry as defined."""
    retry = task.retry_strategy or False
    return app.task(name=task.name, queue=queue, pass_context=task.pass_context, retry=retry)(task.func)


def worker_queue(deps: Deps, periodic: bool = True, concurrency: int | None = None) -> procrastinate.App:
    """A procrastinate app whose tasks run on ``deps``: the run task and (unless told not to) the periodic
    reaper and fold.

    Its connections tell the claim (revision 0019) how many of the worker's ``concurrency`` slots are
    open to a tenant with jobs running (``hango.claim_open_slots``).
    """
    slots = open_slots(concurrency or deps.config.worker_concurrency, deps.config.queue_headroom)
    claim = {} if slots is None else {"options": f"-c hango.claim_open_slots={slots}"}
    connector = procrastinate.PsycopgConnector(conninfo=libpq_url(deps.config.database_url), kwargs=claim)
    app = procrastinate.App(connector=connector, worker_defaults={"additional_context": {DEPS: deps}})
    queue = deps.config.job_queue
    bind(app, run_task, queue)
    if periodic:
        # One periodic job per queue and tick (procrastinate defers it once for all workers of the
        # queue): each queue's reaper reaps that queue's runs and jobs, never another's.
        tick = f"* * * * * */{deps.config.reaper_interval}"
        for task in (reap_task, fold_task):
            app.periodic(cron=tick, periodic_id=queue)(bind(app, task, queue))
    return app


def stop_asked(context: procrastinate.JobContext) -> object:
    """What the worker asks of a running job: nothing (None), its cancel (True), or ``SHUTDOWN``: the worker
    stops (SIGTERM, and ``SHUTDOWN_GRACE`` is over), so the run ends once the step in progress is stored."""
    reason = context.abort_reason()
    return SHUTDOWN if reason == AbortReason.SHUTDOWN else reason is not None


@contextlib.contextmanager
def job_span(context: procrastinate.JobContext, job: QueuedRun) -> Iterator[None]:
    """The job's span, a child of the request that queued it: the run's (or compaction's) spans go under it."""
    attributes = {
        names.MESSAGING_SYSTEM: "procrastinate",
        names.MESSAGING_OPERATION_TYPE: "process",
        names.MESSAGING_DESTINATION: context.job.queue,
        names.MESSAGING_MESSAGE_ID: str(context.job.id),
        names.TENANT_ID: str(job.tenant_id),
        names.RUN_ID: str(job.run_id),
    }
    name = names.SPAN_JOB.format(task=context.job.task_name)
    with telemetry.tracer().start_as_current_span(name, kind=SpanKind.CONSUMER, attributes=attributes):
        yield


async def fail_stalled_jobs(manager: JobManager, queue: str, stalled_after: float) -> list[int]:
    """Fail ``queue``'s jobs of workers silent for ``stalled_after`` seconds; returns their ids.

    A failed job frees its session's lock; the database then wakes the waiting workers
    (revision 0016's trigger), so the session's next job starts at once, not at a poll.
    """
    stalled = await manager.get_stalled_jobs(queue=queue, seconds_since_heartbeat=stalled_after)
    for job in stalled:
        await manager.finish_job_by_id_async(job.id, Status.FAILED, delete_job=False)
    return [job.id for job in stalled]


def reap_dead_runs(deps: Deps, stalled_jobs: Sequence[int] = ()) -> list[Any]:
    """Fail the runs of this worker's queue that no live worker runs any more, and those still ``queued``
    whose job the reaper failed (``stalled_jobs``), each with an ``error`` step; returns them."""
    with deps.engine.begin() as conn:
        reaped = reap_every_tenant(conn, deps.config.job_queue) + fail_queued_of_jobs(conn, stalled_jobs)
        for tenant_id, run_id in reaped:
            TenantStore(conn, tenant_id).run_events.add_next(
                run_id, run_events.ERROR, {"code": INTERRUPTED["code"], "message": INTERRUPTED["message"]}
            )
    return reaped


def fold_part_costs(deps: Deps) -> int:
    """Fold every waiting call's part costs into the totals, a batch per transaction; returns how many."""
    folded = 0
    while True:
        with deps.engine.begin() as conn:
            taken = fold_waiting(conn, FOLD_BATCH)
        folded += taken
        if taken < FOLD_BATCH:
            return folded


def worker_options(deps: Deps, **overrides: Any) -> dict[str, Any]:
    """The options every hango worker runs with (``overrides`` for tests)."""
    return {
        "queues": [deps.config.job_queue],
        "concurrency": deps.config.worker_concurrency,
        "update_heartbeat_interval": deps.config.worker_heartbeat,
        "stalled_worker_timeout": deps.config.worker_heartbeat * STALLED_HEARTBEATS,
        "shutdown_graceful_timeout": SHUTDOWN_GRACE,
        **overrides,
    }


def run_worker(deps: Deps, periodic: bool = True, **overrides: Any) -> None:
    """Work until stopped (SIGINT/SIGTERM), or, with ``wait=False``, until the queue is empty."""
    options = worker_options(deps, **overrides)
    calls.pool().watch(servers.still_attached(deps.engine))  # a deleted or detached server's process ends
    try:
        if options.get("wait", True) is False:
            worker_queue(deps, periodic, options["concurrency"]).run_worker(**options)
        else:
            asyncio.run(_supervise(deps, periodic, options))
    finally:
        calls.pool().close_all()  # the MCP servers its runs started end with it
        calls.pool().watch(None)


async def _supervise(deps: Deps, periodic: bool, options: dict[str, Any]) -> None:
    """Run the worker until a signal stops it, starting it again whenever it stops by itself.

    Procrastinate stops a worker whose database connection failed (its ``LISTEN``
    connection dies with a PostgreSQL restart); the process must outlive that, so
    it waits ``RESTART_PAUSE`` and starts a fresh worker (and pool) until the
    database answers again. SIGINT/SIGTERM stop it gracefully: running jobs get
    ``SHUTDOWN_GRACE`` seconds, then are asked to stop before their next model call
    (``stop_asked``): a model answer arriving is stored with its turn, not cancelled.
    """
    stopping = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stopping.set)
    while not stopping.is_set():
        try:
            await _work_until(worker_queue(deps, periodic, options["concurrency"]), options, stopping)
        except Exception:  # the database is away (or the pool could not open): log it, try again
            log.exception("the queue worker stopped")
        if not stopping.is_set():
            log.warning("starting the queue worker again in %s s", RESTART_PAUSE)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stopping.wait(), RESTART_PAUSE)


async def _work_until(app: procrastinate.App, options: dict[str, Any], stopping: asyncio.Event) -> None:
    """One worker's life: until it stops by itself, or ``stopping`` is set (then it stops gracefully)."""
    async with app.open_async():
        work = asyncio.create_task(app.run_worker_async(**{**options, "install_signal_handlers": False}))
        stop = asyncio.create_task(stopping.wait())
        await asyncio.wait({work, stop}, return_when=asyncio.FIRST_COMPLETED)
        if not work.done():
            work.cancel()  # procrastinate stops gracefully on cancel (SHUTDOWN_GRACE for running jobs)
        stop.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await work
