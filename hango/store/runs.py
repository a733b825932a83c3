"""Queries on ``runs`` (the run loop creates them).

Every read of runs (and of a session, ``Sessions.get``) first reaps the runs of a dead
worker: a row still ``running`` whose lock no connection holds becomes ``failed`` with
the error ``interrupted``, in the same statement as the read. A reaped run follows the
rollback rule of every run that ends without an answer (``unanswered_messages``): the
messages it stored go, so the session is as it was and its user message is never merged
into the next run's. A run's lock is its
session's, except for a try run (a scratch turn), which holds a lock of its own and
never stands in a real run's way (``SCRATCH_TURN_KIND``).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from hango.db.schema import messages, runs
from hango.errors import Interrupted
from hango.store.base import Scoped, new_id
from hango.store.locks import run_locked, session_locked
from hango.store.pages import Page, page

INTERRUPTED = {"code": Interrupted.code, "message": Interrupted.default_message}
_REAPED = ("status", "error", "finished_at")
IN_FLIGHT = ("queued", "running")
SCRATCH_TURN_KIND = (
    "try"  # the kind of a scratch turn: it keeps nothing of the session, and no real run waits for it
)


def is_dead() -> sa.ColumnElement[bool]:
    """A ``running`` row's lock is held by nobody: its session's, or a try run's own."""
    return sa.case(
        (runs.c.kind == SCRATCH_TURN_KIND, ~run_locked(runs.c.id)), else_=~session_locked(runs.c.session_id)
    )


def unanswered_messages(run_ids: Sequence[uuid.UUID] | sa.Select) -> sa.Delete:
    """The rollback rule of a run that ends without an answer (failed, cancelled, interrupted).

    A run that stored no assistant message leaves the session as it was: the messages it stored
    (its user message, and an answer it stored for a dead run's dangling ``tool_use``) go. Every
    run ends through this one statement: the run loop's failures and cancels, and every reaper.
    """
    answer = messages.alias("answer")
    answered = sa.exists().where(answer.c.run_id == messages.c.run_id, answer.c.role == "assistant")
    return sa.delete(messages).where(messages.c.run_id.in_(run_ids), ~answered).returning(messages.c.seq)


@dataclass(frozen=True)
class Reaping:
    """What a read carries to reap dead runs: the runs it fails, and the messages their rollback drops."""

    runs: sa.CTE
    messages: sa.CTE

    def carried_by(self, query: sa.Select) -> sa.Select:
        """``query`` reaping as it reads (a data-modifying CTE runs whether the query reads it or not)."""
        return query.add_cte(self.runs, self.messages)


def _interrupted(update: sa.Update, name: str, *returned: sa.ColumnElement) -> Reaping:
    """``update`` failing its runs as interrupted, and the rollback of those that stored no answer."""
    failed = (
        update.values(status="failed", error=INTERRUPTED, finished_at=sa.func.now())
        .returning(runs.c.id, *returned)
        .cte(name)
    )
    return Reaping(failed, unanswered_messages(sa.select(failed.c.id)).cte(f"{name}_rolled_back"))


def reap_dead_runs(tenant_id: Any, *conditions: sa.ColumnElement[bool]) -> Reaping:
    """An UPDATE, as a CTE for a read to carry, that fails the matching runs no live worker runs.

    ``tenant_id`` is the tenant's id or a bound parameter standing for it. The run loop
    takes its lock before it starts a run row and finishes the row before it lets go, so a
    committed ``running`` row without a lock holder is a dead run.
    """
    dead = sa.update(runs).where(
        runs.c.tenant_id == tenant_id, runs.c.status == "running", *conditions, is_dead()
    )
    return _interrupted(dead, "reaped", *(runs.c[name] for name in _REAPED))


class Runs(Scoped):
    table = runs

    def get(self, run_id: uuid.UUID) -> sa.Row | None:
        """One run of the tenant, or None (a dead run reaped first)."""
        return self.conn.execute(self._reaping(runs.c.id == run_id)).first()

    def page(self, session_id: uuid.UUID, cursor: str | None, limit: int) -> Page:
        """A page of the session's runs, oldest first (its dead runs reaped first)."""
        query = self._reaping(runs.c.session_id == session_id)
        return page(self.conn, query, runs, cursor, limit, order=(runs.c.started_at, runs.c.id))

    def _reaping(self, *conditions: sa.ColumnElement[bool]) -> sa.Select:
        """The runs matching ``conditions`` as they are once their dead runs are reaped, in one statement.

        A statement's CTE does not see its own updates, so reaped columns come from the CTE.
        """
        reaping = reap_dead_runs(self.tenant_id, *conditions)
        reaped = reaping.runs
        columns = [
            sa.func.coalesce(reaped.c[c.name], c).label(c.name) if c.name in _REAPED else c for c in runs.c
        ]
        joined = runs.outerjoin(reaped, reaped.c.id == runs.c.id)
        return reaping.carried_by(sa.select(*columns).select_from(joined).where(self.where(*conditions)))

    def enqueue(
        self,
        session_id: uuid.UUID,
        user_id: uuid.UUID,
        content: list[dict] | None,
        idempotency_key: str | None = None,
        kind: str = "message",
    ) -> sa.Row:
        """A new run in status ``queued``, holding the user's content until a worker stores it."""
        return self.insert_row(
            id=new_id(),
            session_id=session_id,
            status="queued",
            kind=kind,
            user_id=user_id,
            input=content,
            idempotency_key=idempotency_key,
        )

    def attach_job(self, run_id: uuid.UUID, job_id: int) -> sa.Row | None:
        """Note the run's procrastinate job (its id exists once the job is deferred)."""
        return self.update_rows([runs.c.id == run_id], job_id=job_id)

    def start(self, run_id: uuid.UUID) -> sa.Row | None:
        """``queued`` → ``running`` (the caller holds the session lock); None when it is not queued any more.

        A run that gave its slot back (``ran_seconds`` > 0) keeps the time it first started.
        """
        started = sa.case((runs.c.ran_seconds > 0, runs.c.started_at), else_=sa.func.now())
        return self.update_rows(
            [runs.c.id == run_id, runs.c.status == "queued"], status="running", started_at=started
        )

    def give_back(self, run_id: uuid.UUID, ran_seconds: float) -> sa.Row | None:
        """``running`` → ``queued`` between two turns, having worked ``ran_seconds`` in all (``hango.agent.yielding``)."""
        return self.update_rows(
            [runs.c.id == run_id, runs.c.status == "running"], status="queued", ran_seconds=ran_seconds
        )

    def cancel_queued(self, run_id: uuid.UUID) -> sa.Row | None:
        """``queued`` → ``cancelled``; None when a worker took it first (or it ended)."""
        return self.update_rows(
            [runs.c.id == run_id, runs.c.status == "queued"], status="cancelled", finished_at=sa.func.now()
        )

    def active_in_session(self, session_id: uuid.UUID) -> int:
        """How many of the session's real runs are queued or running (its dead runs reaped first).

        A try run does not count: it changes nothing of the session, so nothing waits for it.
        """
        return self._in_flight(runs.c.session_id == session_id, runs.c.kind != SCRATCH_TURN_KIND)

    def in_flight(self, user_id: uuid.UUID) -> tuple[int, int]:
        """Runs queued or running of the member and of the whole tenant (dead runs reaped first)."""
        return self._in_flight(runs.c.user_id == user_id), self._in_flight()

    def _in_flight(self, *conditions: sa.ColumnElement[bool]) -> int:
        listed = self._reaping(*conditions).subquery()
        query = sa.select(sa.func.count()).select_from(listed)
        return self.conn.execute(query.where(listed.c.status.in_(IN_FLIGHT))).scalar_one()

    def finish(
        self,
        run_id: uuid.UUID,
        status: str,
        stop_reason: str | None,
        error: dict | None = None,
        result: dict | None = None,
    ) -> sa.Row | None:
        """Close a run with its final status (a compact run with its figures, a try run with its turn)."""
        return self.update_rows(
            [runs.c.id == run_id],
            status=status,
            stop_reason=stop_reason,
            error=error,
            result=result,
            finished_at=sa.func.now(),
        )

    def fail_running(self, session_id: uuid.UUID, but: uuid.UUID) -> None:
        """Close every other run of the session still ``running`` as ``failed``, ``interrupted`` (rolled back
        like any run that ends without an answer).

        The caller holds the session's lock and runs ``but``, so any other ``running`` row is dead;
        a try run holds a lock of its own and is left alone.
        """
        others = sa.update(runs).where(
            self.where(
                runs.c.session_id == session_id,
                runs.c.status == "running",
                runs.c.id != but,
                runs.c.kind != SCRATCH_TURN_KIND,
            )
        )
        reaping = _interrupted(others, "failed")
        self.conn.execute(reaping.carried_by(sa.select(reaping.runs.c.id)))

    def roll_back_unanswered(self, run_id: uuid.UUID) -> list[int]:
        """Apply the rollback rule to a run ending without an answer; the seqs of the messages it dropped."""
        return list(self.conn.execute(unanswered_messages([run_id])).scalars())

    def by_idempotency_key(self, session_id: uuid.UUID, key: str) -> sa.Row | None:
        return self.conn.execute(
            self.select(runs.c.session_id == session_id, runs.c.idempotency_key == key)
        ).first()


_jobs = sa.table("procrastinate_jobs", sa.column("id"), sa.column("queue_name"))


def reap_every_tenant(conn: Connection, queue: str) -> list[sa.Row]:
    """Fail every dead run, of any tenant, whose job is on ``queue`` (the periodic reaper of that queue's
    workers); returns their ``(tenant_id, id)``.

    Workers of other queues on the same database leave these runs to this queue's reaper (and to the
    reads of each tenant, which reap whatever they read).
    """
    on_queue = runs.c.job_id.in_(sa.select(_jobs.c.id).where(_jobs.c.queue_name == queue))
    return _fail_every_tenant(conn, sa.update(runs).where(runs.c.status == "running", on_queue, is_dead()))


def fail_queued_of_jobs(conn: Connection, job_ids: Sequence[int]) -> list[sa.Row]:
    """Fail the runs still ``queued`` whose jobs the reaper failed; returns their ``(tenant_id, id)``.

    Their worker died after it took the job: before it started the run, or after the run gave its
    slot back (``hango.agent.yielding``) and before the job was back in the queue. No job runs them
    any more, so they would stay ``queued`` (and their session busy) for ever.
    """
    if not job_ids:
        return []
    return _fail_every_tenant(
        conn, sa.update(runs).where(runs.c.status == "queued", runs.c.job_id.in_(job_ids))
    )


def _fail_every_tenant(conn: Connection, update: sa.Update) -> list[sa.Row]:
    reaping = _interrupted(update, "reaped", runs.c.tenant_id)
    return list(
        conn.execute(reaping.carried_by(sa.select(reaping.runs.c.tenant_id, reaping.runs.c.id))).all()
    )
