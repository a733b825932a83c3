"""Admission: whether a run, a compaction or a try may be queued (busy session, caps, quota,
idempotency), then its row stored and its job deferred (``hango.jobs``) in one transaction."""

from __future__ import annotations

import datetime as dt
import uuid
from dataclasses import dataclass
from typing import Any

import procrastinate

from hango import run_events
from hango.agent.compact_now import compaction_plan, nothing_to_compact
from hango.agent.deps import Deps
from hango.agent.state import Caller
from hango.config import Config
from hango.errors import Conflict, QuotaExhausted, RateLimited, Unprocessable
from hango.inspector import trying
from hango.jobs import cancel_job, defer_run
from hango.store import TenantStore
from hango.store.job_slots import hold_job
from hango.store.locks import lock_tenant_runs


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

    Returns the run and whether it is new: an ``Idempotency-Key`` seen before with the same
    content returns that run, and with other content is 422 ``idempotency_key_reused`` (the
    new text would be dropped silently otherwise). 409 ``session_busy`` while the session has
    a run queued or running (unless ``multitask`` is ``enqueue``), 429 ``too_many_runs`` past
    the in-flight caps, 402 when the quota is used up. The tenant's runs are queued one at a
    time, so the checks hold.
    """
    lock_tenant_runs(store.conn, store.tenant_id)
    if new.idempotency_key is not None:
        previous = store.runs.by_idempotency_key(new.session_id, new.idempotency_key)
        if previous is not None and previous.input != new.content:
            raise Unprocessable(
                f"Idempotency-Key {new.idempotency_key!r} was used for another message on this session",
                code="idempotency_key_reused",
                details={"idempotency_key": new.idempotency_key, "run_id": str(previous.id)},
            )
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


def enqueue_try(queue: procrastinate.App, store: TenantStore, deps: Deps, session: Any, new: NewRun) -> Any:
    """Queue a try run (``new.kind`` ``try``, the try body its ``content``): a scratch turn.

    Its body is screened first on the session's next call, as a one-call try's is (its 422s);
    then the same 429 and 402 as a run; never 409: it changes nothing of the session, so it
    may run while the session's runs do.
    """
    trying.screen_turn(deps, store, session, new.caller, trying.TryBody(**new.content))
    lock_tenant_runs(store.conn, store.tenant_id)
    _check_caps(store, deps.config, new.caller.user_id)
    _check_quota(store)
    return _store_and_defer(queue, store, deps.config, new)


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
    if run.job_id is not None:
        hold_job(
            store.conn, run.job_id
        )  # a run giving its slot back is ``queued`` (cancelled here) or not yet
    cancelled = store.runs.cancel_queued(run.id)
    if cancelled is not None:
        if cancelled.job_id is not None:
            cancel_job(queue, store.conn, cancelled.job_id, running=False)
        store.run_events.add_next(
            run.id, run_events.RUN_FINISHED, {"status": "cancelled", "stop_reason": None}
        )
        return cancelled
    current = store.runs.get(run.id)
    if current.status != "running":
        raise Conflict(f"the run already ended ({current.status})", code="run_finished")
    if current.job_id is not None:
        cancel_job(queue, store.conn, current.job_id, running=True)
    return current
