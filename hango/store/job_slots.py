"""A running run's job row in the queue: its lock against a cancel, and whether another job wants its slot.

Both read procrastinate's ``procrastinate_jobs`` through hango's own SQL: the lock rule that a cancel
and a run giving its slot back share, and ``hango_slot_wanted`` (revision 0020), written beside the
fair claim from the same counts so the two never disagree (``hango.agent.yielding`` says when a run
asks).
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.engine import Connection

_SLOT_WANTED = sa.text("SELECT hango_slot_wanted(:job_id, CAST(:open_slots AS integer))")
_HOLD = sa.text("SELECT abort_requested FROM procrastinate_jobs WHERE id = :id FOR UPDATE")


def hold_job(conn: Connection, job_id: int) -> bool:
    """Lock a job's row to the end of ``conn``'s transaction; whether a cancel asked it to abort.

    A cancel and a run giving its slot back both take this lock first, so a cancel sees either the run
    ``running`` (and the yield then sees the abort and ends the run ``cancelled``) or ``queued`` (and
    cancels it there).
    """
    return bool(conn.execute(_HOLD, {"id": job_id}).scalar_one_or_none())


def others_waiting(conn: Connection, job_id: int, open_slots: int | None) -> bool:
    """Whether a less-served tenant's or member's job waits for a slot that ``job_id`` (running) holds,
    and its worker (``open_slots`` of its slots open to a tenant with jobs running) could claim it."""
    return bool(conn.execute(_SLOT_WANTED, {"job_id": job_id, "open_slots": open_slots}).scalar_one())
