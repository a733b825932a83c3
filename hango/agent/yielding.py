"""When a run gives its worker slot back: at a turn boundary, to a less-served tenant or member waiting.

The fair claim (revisions 0016 and 0019) gives a freed slot to the tenant with the fewest jobs
running, then to its member with the fewest; but a run keeps its slot to its end, so without
this a quiet tenant would wait for a whole run. After a model answer and its tools are stored,
and before its next model call, a run asks the queue (``others_waiting``) whether a job its
worker could claim waits for a tenant that would still run fewer jobs than the run's tenant once
the slot moves (its count + 1 < the run's tenant's), or, in the run's tenant, for a member that
would still run fewer than the run's member; with ``HANGO_QUEUE_HEADROOM``, only a job the freed
slot may take (one of a tenant with nothing running, or the worker below its open slots). Then the run gives its slot back (``Yielded``):
its row is ``queued`` again, its running time so far in ``ran_seconds``, and its job goes back
to the queue as it was (procrastinate's retry: the same job, so the same session lock and its
place before the session's later runs). Claimed again, the run goes on from its stored history:
its next ``run_started`` step says ``resumed``, its turns and its deadline (``HANGO_RUN_TIMEOUT``)
count only its own running time, and a cancel while it waits ends it ``cancelled`` with its
answered turns kept, like a cancel between two turns of a running run.

"+ 1" keeps two runs from trading a slot back and forth: the slot goes only where it leaves its
new holder still served less than the run that gave it.
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.engine import Connection


class Yielded(Exception):
    """The run gave its slot back and waits in the queue again (the worker retries its job)."""


LESS_SERVED_WAITING = sa.text(
    """
    WITH running AS (
        SELECT args->>'tenant_id' AS tenant_id, args->>'user_id' AS user_id, count(*) AS jobs
            FROM procrastinate_jobs
            WHERE status = 'doing' AND args ? 'tenant_id'
            GROUP BY 1, 2
    ),
    mine AS (
        SELECT args->>'tenant_id' AS tenant_id, args->>'user_id' AS user_id, queue_name,
               (SELECT count(*) FROM procrastinate_jobs AS held
                    WHERE held.status = 'doing' AND held.worker_id = job.worker_id) AS held,
               (SELECT sum(jobs) FROM running WHERE running.tenant_id = job.args->>'tenant_id') AS tenant_jobs,
               (SELECT sum(jobs) FROM running
                    WHERE running.tenant_id = job.args->>'tenant_id'
                      AND running.user_id = job.args->>'user_id') AS member_jobs
            FROM procrastinate_jobs AS job
            WHERE id = :job_id AND status = 'doing'
    )
    SELECT EXISTS (
        SELECT 1
            FROM procrastinate_jobs AS waiting, mine
            WHERE waiting.status = 'todo'
                AND waiting.queue_name = mine.queue_name
                AND waiting.args ? 'tenant_id'
                AND (waiting.scheduled_at IS NULL OR waiting.scheduled_at <= now())
                -- claimable: no job of its lock runs, none queued before it (the claim's rule)
                AND NOT EXISTS (
                    SELECT 1 FROM procrastinate_jobs AS other
                        WHERE waiting.lock IS NOT NULL AND other.lock = waiting.lock
                          AND (other.status = 'doing' OR (other.status = 'todo' AND other.id < waiting.id))
                )
                -- with headroom, this worker must be able to claim it once the slot frees
                AND (
                    CAST(:open_slots AS integer) IS NULL
                    OR mine.held - 1 < :open_slots
                    OR NOT EXISTS (SELECT 1 FROM running WHERE running.tenant_id = waiting.args->>'tenant_id')
                )
                AND CASE
                    WHEN waiting.args->>'tenant_id' <> mine.tenant_id THEN
                        coalesce((SELECT sum(jobs) FROM running
                                     WHERE running.tenant_id = waiting.args->>'tenant_id'), 0) + 1
                            < mine.tenant_jobs
                    ELSE
                        coalesce((SELECT sum(jobs) FROM running
                                     WHERE running.tenant_id = mine.tenant_id
                                       AND running.user_id = waiting.args->>'user_id'), 0) + 1
                            < mine.member_jobs
                END
    )
    """
)


def others_waiting(conn: Connection, job_id: int, open_slots: int | None) -> bool:
    """Whether a less-served tenant's or member's job waits for a slot that ``job_id`` (running) holds,
    and its worker (``open_slots`` of its slots open to a tenant with jobs running) could claim it."""
    found = conn.execute(LESS_SERVED_WAITING, {"job_id": job_id, "open_slots": open_slots})
    return bool(found.scalar_one())


def open_slots(concurrency: int, headroom: int) -> int | None:
    """How many of a worker's ``concurrency`` slots take a job of a tenant with jobs running (None: all).

    ``HANGO_QUEUE_HEADROOM`` keeps the others for tenants with nothing running; at least one stays open,
    so a single tenant's runs still go on.
    """
    return max(1, concurrency - headroom) if headroom > 0 else None
