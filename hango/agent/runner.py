"""The run loop: store the user message, then model → assistant message → tools → results, per turn.

A run holds a PostgreSQL advisory lock on its session (a second run gets 409; a
killed worker releases it with its connection) and commits once per turn, so a
crash loses at most the turn in flight and history stays valid.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from sqlalchemy.engine import Connection, Engine

from hango import telemetry
from hango.agent.assembly import prepare_session
from hango.agent.chain import Chain
from hango.agent.compactor import StoredCompactor
from hango.agent.deps import Deps
from hango.agent.gateway import Gateway
from hango.agent.loader import append_message, store_estimates
from hango.agent.state import Caller, RunState, StoredMessage
from hango.agent.tools.base import ToolContext
from hango.agent.turns import model_phase, tool_phase, tool_uses
from hango.errors import Conflict, GatewayTimeout, HangoError, QuotaExhausted
from hango.messages import Response, message_to_dict
from hango.store import TenantStore
from hango.store.locks import try_lock_session, unlock_session
from hango.telemetry import names


@dataclass(frozen=True)
class RunResult:
    run: Any
    messages: list[Any]


@dataclass(frozen=True)
class RunRequest:
    session: Any
    content: list[dict[str, Any]]
    caller: Caller
    idempotency_key: str | None = None


def start_run(deps: Deps, tenant_id: uuid.UUID, request: RunRequest) -> RunResult:
    """Run the agent on a new user message; an ``Idempotency-Key`` seen before returns that run."""
    with holding_session(deps.engine, request.session.id) as conn:
        store = TenantStore(conn, tenant_id)
        previous = _previous_run(store, request)
        if previous is not None:
            return previous
        return _Run(deps, conn, store, request).execute()


@contextmanager
def holding_session(engine: Engine, session_id: uuid.UUID) -> Iterator[Connection]:
    """A connection holding the session's run lock for the block; 409 ``session_busy`` when it is taken."""
    with engine.connect() as conn:
        _lock_session(conn, session_id)
        try:
            yield conn
        finally:
            conn.rollback()
            unlock_session(conn, session_id)
            conn.commit()


def _lock_session(conn: Connection, session_id: uuid.UUID) -> None:
    locked = try_lock_session(conn, session_id)
    conn.commit()
    if not locked:
        raise Conflict("another run is in progress on this session", code="session_busy")


def _previous_run(store: TenantStore, request: RunRequest) -> RunResult | None:
    if request.idempotency_key is None:
        return None
    run = store.runs.by_idempotency_key(request.session.id, request.idempotency_key)
    if run is None:
        return None
    return RunResult(run, store.messages.of_run(run.id))


class _Run:
    """One run on one connection: the state, the chain and the bookkeeping of its turns."""

    def __init__(self, deps: Deps, conn: Connection, store: TenantStore, request: RunRequest) -> None:
        self.deps, self.conn, self.store, self.request = deps, conn, store, request
        self.chain: Chain  # built by ``prepare_session``, like every other assembly's
        self.new: list[Any] = []
        self.committed = 0  # how many of ``new`` are committed (a rollback drops the others)

    def execute(self) -> RunResult:
        with telemetry.tracer().start_as_current_span(names.SPAN_RUN, record_exception=False) as span:
            span.set_attributes(
                {names.SESSION_ID: str(self.request.session.id), names.TENANT_ID: str(self.store.tenant_id)}
            )
            result = self._execute()
            span.set_attributes({names.RUN_ID: str(result.run.id), names.RUN_STATUS: result.run.status})
            return result

    def _execute(self) -> RunResult:
        prepared = prepare_session(self.deps, self.store, self.request.session, self.request.caller)
        self.chain, state = prepared.chain, prepared.state
        state.deadline = time.monotonic() + self.deps.config.run_timeout
        state.compactor = StoredCompactor(self.deps, state)
        gateway = Gateway(self.deps, state, self.deps.config.run_timeout)
        gateway.check_quota()
        self._repair(state, prepared.repair)
        run = self._begin(state)
        try:
            status, stop_reason = self._loop(state, gateway)
        except Exception as exc:
            # A bug closes the run too (as internal_error), or it would stay ``running`` for ever.
            self._fail(run.id, state, exc if isinstance(exc, HangoError) else HangoError())
            raise
        run = self.store.runs.finish(run.id, status, stop_reason)
        self.conn.commit()
        return RunResult(run, self.new)

    def _begin(self, state: RunState) -> Any:
        run = self.store.runs.create(self.request.session.id, self.request.idempotency_key)
        state.run_id = run.id
        self._append(state, "user", self.request.content)
        self.store.audit.record(
            "run.create",
            "session",
            self.request.session.id,
            actor_user_id=self.request.caller.user_id,
            api_key_id=self.request.caller.api_key_id,
            detail={"run_id": str(run.id)},
        )
        self._commit()
        return run

    def _loop(self, state: RunState, gateway: Gateway) -> tuple[str, str | None]:
        for _ in range(self.deps.config.max_turns):
            state.check_deadline()
            try:
                response = model_phase(self.chain, state, gateway)
            except QuotaExhausted:
                return "quota_exhausted", None
            if not self._store_turn(state, response):
                return "completed", response.stop_reason
        return "max_turns", "max_turns"

    def _store_turn(self, state: RunState, response: Response) -> bool:
        """Store the answer and, when it calls tools, their results; True when the loop goes on."""
        self._append(state, "assistant", message_to_dict(response.message)["content"])
        uses = tool_uses(response.message)
        if uses:
            ctx = ToolContext(self.store, state, self.deps, self.chain)
            results = tool_phase(self.chain, state, ctx, uses)
            self._append(state, "user", message_to_dict(results)["content"])
        store_estimates(self.store, state)  # with the first answer: a failed call changes nothing
        self._commit()
        return bool(uses)

    def _commit(self) -> None:
        self.conn.commit()
        self.committed = len(self.new)

    def _append(self, state: RunState, role: str, content: list[dict[str, Any]]) -> None:
        self.new.append(append_message(self.store, state, role, content))

    def _repair(self, state: RunState, repair: StoredMessage | None) -> None:
        """Close what a crashed run left: its ``running`` row, and store the dangling ``tool_use``'s answer."""
        # The session lock is ours, so a run of this session still ``running`` has no worker any more.
        self.store.runs.fail_running(state.session_id)
        if repair is not None:
            state.history.remove(repair)  # the in-memory answer, stored now under the seq inspect showed
            append_message(self.store, state, "user", message_to_dict(repair.message)["content"])
        self.conn.commit()

    def _fail(self, run_id: uuid.UUID, state: RunState, error: HangoError) -> None:
        """Record the failure; a run that stored no answer yet leaves the session as it was."""
        self.conn.rollback()
        del self.new[self.committed :]
        if len(self.new) == 1:
            self.store.messages.delete(state.session_id, self.new[0].seq)
            self.new.clear()
        status = "timeout" if isinstance(error, GatewayTimeout) else "failed"
        self.store.runs.finish(run_id, status, None, error={"code": error.code, "message": error.message})
        self.conn.commit()
