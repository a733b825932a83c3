"""The run loop of a queued run: store the user message, then model → assistant message → tools → results, per turn.

A worker runs it (``hango.worker``) for a run the web queued; a run of kind
``compact`` is one compaction instead (``hango.agent.compact_now``), and one of kind
``try`` a scratch turn that keeps nothing (``hango.agent.scratch``). It holds a PostgreSQL
advisory lock on its session while it works (a killed worker releases it with its
connection, so a ``running`` row without a holder is dead; a try run holds a lock of its
own instead, and its session's only while it opens its snapshot) and commits once per
turn, so a crash loses at most the turn in flight and history stays valid. It
reports every step to ``state.steps`` and stops at a step boundary once its
cancel is requested, rolling back the turn in flight like a failure does. Between two
turns it gives its worker slot back when a less-served tenant or member waits
(``hango.agent.yielding``): its row is ``queued`` again, and claimed again it goes on
from its stored history, its deadline counting only its own running time.
"""

from __future__ import annotations

import time
import uuid
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqlalchemy.engine import Connection

from hango import run_events, telemetry
from hango.agent.assembly import prepare_session
from hango.agent.chain import Chain
from hango.agent.compact_now import CompactJob, compact_now
from hango.agent.compactor import StoredCompactor
from hango.agent.deps import Deps
from hango.agent.gateway import Gateway
from hango.agent.loader import append_message, store_estimates
from hango.agent.run_steps import StoredSteps
from hango.agent.scratch import ScratchTurn, Shaper
from hango.agent.state import RUN, Caller, RunHandles, RunState, StoredMessage
from hango.agent.tools.base import ToolContext
from hango.agent.turn_loop import YIELDED, Sink, take_turns
from hango.agent.yielding import open_slots
from hango.errors import Cancelled, GatewayTimeout, HangoError, QuotaExhausted
from hango.messages import Message, message_to_dict
from hango.store import TenantStore
from hango.store.job_slots import hold_job, others_waiting
from hango.store.locks import lock_run, lock_session, unlock_run, unlock_session
from hango.store.runs import SCRATCH_TURN_KIND
from hango.telemetry import names


@dataclass(frozen=True)
class RunResult:
    run: Any
    messages: list[Any]


@dataclass(frozen=True)
class QueuedRun:
    """What a run's job carries: the run and who its model calls are billed to."""

    tenant_id: uuid.UUID
    run_id: uuid.UUID
    caller: Caller


def execute_run(
    deps: Deps, job: QueuedRun, should_stop: Callable[[], object], shape: Shaper | None = None
) -> RunResult | None:
    """Run a queued run to its end; None when it is not ``queued`` any more (cancelled, or done before).

    ``should_stop`` says a cancel is requested, or ``SHUTDOWN`` (``hango.agent.run_steps``); ``shape``
    screens a try run's overrides (the worker hands in the inspector's try plan).
    """
    with deps.engine.connect() as conn:
        store = TenantStore(conn, job.tenant_id)
        run = store.runs.get(job.run_id)
        conn.commit()
        if run is None or run.status != "queued":
            return None
        # One job per session at a time (a dead worker's lock ends with its connection); a try run
        # locks only itself. The lock outlives the commit, so ``started_at`` is when the wait ended.
        lock, unlock, key = (
            (lock_run, unlock_run, run.id)
            if run.kind == SCRATCH_TURN_KIND
            else (lock_session, unlock_session, run.session_id)
        )
        lock(conn, key)
        conn.commit()
        try:
            run = store.runs.start(job.run_id)
            conn.commit()
            if run is None:  # cancelled while this worker waited for the lock
                return None
            first = store.run_events.last_seq(run.id) + 1
            steps = StoredSteps(deps.engine, job.tenant_id, run.id, should_stop, first)
            steps.emit(run_events.RUN_STARTED, **({"resumed": True} if run.ran_seconds > 0 else {}))
            if run.kind == SCRATCH_TURN_KIND:
                scratch = _Scratch(deps, conn, store, run=run, session=None, caller=job.caller, steps=steps)
                return scratch.with_plan(shape).execute()
            session = store.sessions.get(run.session_id)
            kind = _Compaction if run.kind == "compact" else _Run
            return kind(deps, conn, store, run=run, session=session, caller=job.caller, steps=steps).execute()
        finally:
            conn.rollback()
            unlock(conn, key)
            conn.commit()


def run_inline(
    deps: Deps, tenant_id: uuid.UUID, session: Any, content: list[dict[str, Any]], caller: Caller
) -> RunResult:
    """Queue a run and run it here, without a job (seeding demos and benchmarks, never the API)."""
    with deps.engine.begin() as conn:
        run = TenantStore(conn, tenant_id).runs.enqueue(session.id, caller.user_id, content)
    result = execute_run(deps, QueuedRun(tenant_id, run.id, caller), lambda: False)
    assert result is not None  # nobody else knows the run, so nothing cancels it
    return result


class _Job(ABC):
    """One queued run on the connection that holds its session's lock: its span, and how it ends."""

    span_name = names.SPAN_RUN

    def __init__(
        self,
        deps: Deps,
        conn: Connection,
        store: TenantStore,
        *,
        run: Any,
        session: Any,
        caller: Caller,
        steps: StoredSteps,
    ) -> None:
        self.deps, self.conn, self.store, self.run = deps, conn, store, run
        self.session, self.caller, self.steps = session, caller, steps

    def execute(self) -> RunResult:
        with telemetry.tracer().start_as_current_span(self.span_name, record_exception=False) as span:
            span.set_attributes(
                {
                    names.SESSION_ID: str(self.run.session_id),
                    names.TENANT_ID: str(self.store.tenant_id),
                    names.RUN_ID: str(self.run.id),
                }
            )
            result = self._execute()
            span.set_attributes({names.RUN_STATUS: result.run.status})
            return result

    @abstractmethod
    def _execute(self) -> RunResult:
        """Do the job's work and close its run."""

    def _close(
        self,
        status: str,
        stop_reason: str | None,
        error: HangoError | None = None,
        result: dict | None = None,
    ) -> Any:
        """Finish the run's row (with its error's step first) and report ``run_finished``."""
        detail = None if error is None else _error_detail(error)
        if detail is not None:
            self.steps.emit(run_events.ERROR, code=error.code, message=error.message)
        run = self.store.runs.finish(self.run.id, status, stop_reason, error=detail, result=result)
        self.conn.commit()
        self.steps.emit(run_events.RUN_FINISHED, status=status, stop_reason=stop_reason)
        return run


class _Compaction(_Job):
    """A compact run: one ``compact_now``, its figures the run's ``result``; nothing to roll back."""

    span_name = names.SPAN_SESSION_COMPACT

    def _execute(self) -> RunResult:
        job = CompactJob((self.run.input or {}).get("instructions"), self.run.id, self.steps)
        try:
            done = compact_now(self.deps, self.store, self.session, self.caller, job)
        except Cancelled:
            return self._end("cancelled")
        except HangoError as exc:
            return self._end(_failed_status(exc), exc)
        except Exception:
            self._end("failed", HangoError())  # a bug closes the run too, or it would stay ``running``
            raise
        return self._end("completed", result=done.as_dict())

    def _end(self, status: str, error: HangoError | None = None, result: dict | None = None) -> RunResult:
        self.conn.rollback()
        return RunResult(self._close(status, None, error, result), [])


class _Turns(_Job):
    """A job that drives turns (a run, a scratch turn): its work ends in a status, or in an error it is closed with."""

    def _execute(self) -> RunResult:
        try:
            status, stop_reason = self._work()
        except Cancelled:
            return self._end("cancelled", None)
        except HangoError as exc:
            return self._end(_failed_status(exc), None, exc)
        except Exception:
            # A bug closes the run too (as internal_error), or it would stay ``running`` for ever.
            self._end("failed", None, HangoError())
            raise
        return self._end(status, stop_reason)

    @abstractmethod
    def _work(self) -> tuple[str, str | None]:
        """The turns; the run's status and stop reason."""

    @abstractmethod
    def _end(self, status: str, stop_reason: str | None, error: HangoError | None = None) -> RunResult:
        """Close the run."""


class _Scratch(_Turns):
    """A try run: one scratch turn (``hango.agent.scratch``), what it did the run's ``result``."""

    span_name = names.SPAN_CONTEXT_TRY

    def with_plan(self, shape: Shaper | None) -> _Scratch:
        """Ready to run, with the try plan that screens the run's overrides."""
        if shape is None:
            raise ValueError("a try run needs the try plan that screens its overrides")
        self.turn = ScratchTurn(
            self.deps, self.conn, self.run, caller=self.caller, steps=self.steps, shape=shape
        )
        return self

    def _work(self) -> tuple[str, str | None]:
        return self.turn.execute()

    def _end(self, status: str, stop_reason: str | None, error: HangoError | None = None) -> RunResult:
        """Close the run with the turn's result, audited as a try (``context.try``, ``mode`` turn)."""
        self.conn.rollback()
        detail = self.turn.audit_detail(status, None if error is None else error.code)
        self.store.audit.record(
            "context.try",
            "session",
            self.run.session_id,
            actor_user_id=self.caller.user_id,
            api_key_id=self.caller.api_key_id,
            detail={**detail, "run_id": str(self.run.id)},
        )
        telemetry.meter().create_counter(names.METRIC_CONTEXT_TRY).add(
            1, {"outcome": detail["outcome"], "mode": "turn"}
        )
        return RunResult(self._close(status, stop_reason, error, self.turn.result(stop_reason)), [])


class _Run(_Turns, Sink):
    """One run of the agent loop: the state, the chain and the bookkeeping of its turns (their ``Sink``:
    each turn stored and committed, the slot given back at a turn boundary)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.chain: Chain  # built by ``prepare_session``, like every other assembly's
        self.new: list[Any] = []
        self.committed = 0  # how many of ``new`` are committed (a rollback drops the others)

    def _work(self) -> tuple[str, str | None]:
        self.clock = time.monotonic()
        # The session lock is ours, so another run of this session still ``running`` has no worker any
        # more: it is failed (and rolled back) before the history is read, or its message would be read.
        self.store.runs.fail_running(self.session.id, but=self.run.id)
        self.conn.commit()
        # Its deadline counts only its own running time: not the waits of a run that gave its slot back.
        deadline = self.clock + self.deps.config.run_timeout - self.run.ran_seconds
        handles = RunHandles(self.run.id, self.steps, deadline, StoredCompactor(self.deps))
        prepared = prepare_session(self.deps, self.store, self.session, self.caller, RUN, handles=handles)
        self.chain, state = prepared.chain, prepared.state
        gateway = Gateway(self.deps, state, self.deps.config.run_timeout)
        self.steps.check_before_call()
        gateway.check_quota()
        self._repair(state, prepared.repair)
        resumed = self.run.ran_seconds > 0  # its user message and answered turns are stored
        if not resumed:
            self._append(state, "user", self.run.input)
        self._commit()
        turns = self.deps.config.max_turns - (self._turns_done() if resumed else 0)
        ctx = ToolContext(self.store, state, self.deps, self.chain)
        ending = take_turns(ctx, gateway, self, turns)
        return ending.status, ending.stop_reason

    def _turns_done(self) -> int:
        """The turns a resumed run took before it gave its slot back: its stored answers."""
        return sum(1 for message in self.store.messages.of_run(self.run.id) if message.role == "assistant")

    def gives_slot_back(self) -> bool:
        """At a turn boundary: whether a less-served tenant or member waits for this run's slot."""
        self.steps.check_before_call()  # a cancel asked now ends the run here, not in the queue
        config = self.deps.config
        slots = open_slots(config.worker_concurrency, config.queue_headroom)
        waiting = self.run.job_id is not None and others_waiting(self.conn, self.run.job_id, slots)
        self.conn.commit()
        return waiting

    def keep(self, state: RunState, message: Message) -> None:
        """Store one message of the turn (committed with the turn)."""
        self._append(state, message.role, message_to_dict(message)["content"])

    def turn_kept(self, state: RunState) -> None:
        """Commit the turn's messages (with the first answer, the loaded messages' estimates too)."""
        store_estimates(self.store, state)  # with the first answer: a failed call changes nothing
        self._commit()

    def _commit(self) -> None:
        self.conn.commit()
        for message in self.new[self.committed :]:
            self.steps.emit(run_events.MESSAGE_STORED, seq=message.seq, role=message.role)
        self.committed = len(self.new)

    def _append(self, state: RunState, role: str, content: list[dict[str, Any]]) -> None:
        self.new.append(append_message(self.store, state, role, content))

    def _repair(self, state: RunState, repair: StoredMessage | None) -> None:
        """Store the answer of the dangling ``tool_use`` a crashed run left."""
        if repair is not None:
            state.history.remove(repair)  # the in-memory answer, stored now under the seq inspect showed
            append_message(self.store, state, "user", message_to_dict(repair.message)["content"])
        self.conn.commit()

    def _end(self, status: str, stop_reason: str | None, error: HangoError | None = None) -> RunResult:
        """Close the run; a failed or cancelled one rolls back its turn in flight first.

        A run that stored no answer yet leaves the session as it was (``unanswered_messages``). A run
        giving its slot back is ``queued`` again, unless a cancel came first: then it ends ``cancelled``.
        """
        if status == YIELDED:
            queued = self._give_back()
            if queued is not None:
                return RunResult(queued, self.new)
            status = "cancelled"
        if status not in ("completed", "max_turns", "quota_exhausted"):
            self._roll_back()
        return RunResult(self._close(status, stop_reason, error), self.new)

    def _give_back(self) -> Any:
        """The run ``queued`` again with its running time so far; None when a cancel asked it to stop."""
        if hold_job(self.conn, self.run.job_id):
            self.conn.rollback()
            return None
        ran = self.run.ran_seconds + time.monotonic() - self.clock
        queued = self.store.runs.give_back(self.run.id, ran)
        self.conn.commit()
        return queued

    def _roll_back(self) -> None:
        self.conn.rollback()
        del self.new[self.committed :]
        dropped = set(self.store.runs.roll_back_unanswered(self.run.id))
        self.new = [message for message in self.new if message.seq not in dropped]


def _error_detail(error: HangoError) -> dict[str, Any]:
    """The run's ``error``: the code, message and details the API would answer, and that answer's status."""
    detail = {"code": error.code, "message": error.message, "status": error.status}
    return detail if error.details is None else {**detail, "details": error.details}


def _failed_status(error: HangoError) -> str:
    if isinstance(error, QuotaExhausted):
        return "quota_exhausted"
    return "timeout" if isinstance(error, GatewayTimeout) else "failed"
