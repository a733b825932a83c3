"""Workers take jobs fairly between tenants and members, and wake when a session's lock frees.

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-04

Procrastinate's claim (``procrastinate_fetch_job_v2``, the one statement every worker
runs for its next job) takes the oldest job first, so one member who queues many runs
holds every slot while other tenants wait. This revision replaces it, with the same
signature, the same lock and queue rules and ``SKIP LOCKED``, by a claim that takes
the job of the tenant with the fewest jobs running, then of that tenant's member with
the fewest, then the oldest. A job without a tenant (the periodic reaper and fold)
counts as one of a tenant with none running. Claims take a transaction-scoped advisory
lock first, so two workers claiming at once (on any node) see each other's claim and
the counts stay exact. The counts read only ``doing`` jobs: a handful per worker.

Procrastinate wakes a waiting worker when a job is inserted, not when a job ends, so
the next job of a session whose job ended (or was failed by the reaper) waited for a
worker's next poll (5 s). A trigger now sends procrastinate's own ``job_inserted``
notification on the job's queue when a job that held a lock ends (or is deleted)
while a job of the same lock waits.

The downgrade puts back procrastinate's claim from the installed package's schema
(revision 0008 pins its version).
"""

import re

from alembic import op
from procrastinate.schema import SchemaManager

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None

FAIR_CLAIM = """
CREATE OR REPLACE FUNCTION procrastinate_fetch_job_v2(
    target_queue_names character varying[],
    p_worker_id bigint
)
    RETURNS procrastinate_jobs
    LANGUAGE plpgsql
AS $$
DECLARE
    found_jobs procrastinate_jobs;
BEGIN
    -- One claim at a time: the next statement's snapshot sees every claim before it.
    PERFORM pg_advisory_xact_lock(hashtextextended('hango:job-claim', 0));
    WITH running AS MATERIALIZED (
        SELECT args->>'tenant_id' AS tenant_id, args->>'user_id' AS user_id, count(*) AS jobs
            FROM procrastinate_jobs
            WHERE status = 'doing' AND args ? 'tenant_id'
            GROUP BY 1, 2
    ),
    tenant_running AS (
        SELECT tenant_id, sum(jobs) AS jobs FROM running GROUP BY 1
    ),
    candidate AS (
        SELECT jobs.*
            FROM procrastinate_jobs AS jobs
            LEFT JOIN tenant_running AS tenant ON tenant.tenant_id = jobs.args->>'tenant_id'
            LEFT JOIN running AS member
                ON member.tenant_id = jobs.args->>'tenant_id' AND member.user_id = jobs.args->>'user_id'
            WHERE
                -- reject the job if its lock has earlier or higher priority jobs (procrastinate's rule)
                NOT EXISTS (
                    SELECT 1
                        FROM procrastinate_jobs AS other_jobs
                        WHERE
                            jobs.lock IS NOT NULL
                            AND other_jobs.lock = jobs.lock
                            AND (
                                other_jobs.status = 'doing'
                                OR (
                                    other_jobs.status = 'todo'
                                    AND (
                                        other_jobs.priority > jobs.priority
                                        OR (other_jobs.priority = jobs.priority AND other_jobs.id < jobs.id)
                                    )
                                )
                            )
                )
                AND jobs.status = 'todo'
                AND (target_queue_names IS NULL OR jobs.queue_name = ANY( target_queue_names ))
                AND (jobs.scheduled_at IS NULL OR jobs.scheduled_at <= now())
            ORDER BY jobs.priority DESC, coalesce(tenant.jobs, 0), coalesce(member.jobs, 0), jobs.id ASC
            LIMIT 1
            FOR UPDATE OF jobs SKIP LOCKED
    )
    UPDATE procrastinate_jobs
        SET status = 'doing', worker_id = p_worker_id
        FROM candidate
        WHERE procrastinate_jobs.id = candidate.id
        RETURNING procrastinate_jobs.* INTO found_jobs;

    RETURN found_jobs;
END;
$$;
"""

LOCK_FREED = """
CREATE FUNCTION hango_notify_lock_freed() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    payload text := json_build_object('type', 'job_inserted', 'job_id', OLD.id)::text;
BEGIN
    IF EXISTS (SELECT 1 FROM procrastinate_jobs WHERE lock = OLD.lock AND status = 'todo') THEN
        PERFORM pg_notify('procrastinate_queue_v1#' || OLD.queue_name, payload);
        PERFORM pg_notify('procrastinate_any_queue_v1', payload);
    END IF;
    RETURN NULL;
END;
$$;
CREATE TRIGGER hango_lock_freed
    AFTER UPDATE OF status ON procrastinate_jobs
    FOR EACH ROW WHEN (OLD.status = 'doing' AND NEW.status <> 'doing' AND OLD.lock IS NOT NULL)
    EXECUTE PROCEDURE hango_notify_lock_freed();
CREATE TRIGGER hango_lock_freed_on_delete
    AFTER DELETE ON procrastinate_jobs
    FOR EACH ROW WHEN (OLD.status = 'doing' AND OLD.lock IS NOT NULL)
    EXECUTE PROCEDURE hango_notify_lock_freed();
"""


def upgrade() -> None:
    op.execute(FAIR_CLAIM)
    op.execute(LOCK_FREED)


def downgrade() -> None:
    op.execute(
        "DROP TRIGGER hango_lock_freed ON procrastinate_jobs; "
        "DROP TRIGGER hango_lock_freed_on_delete ON procrastinate_jobs; "
        "DROP FUNCTION hango_notify_lock_freed()"
    )
    op.execute(procrastinate_claim().replace("CREATE FUNCTION", "CREATE OR REPLACE FUNCTION", 1))


def procrastinate_claim() -> str:
    """Procrastinate's own ``procrastinate_fetch_job_v2``, as its schema creates it."""
    found = re.search(
        r"CREATE FUNCTION procrastinate_fetch_job_v2\(.*?\n\$\$;", SchemaManager.get_schema(), re.S
    )
    if found is None:
        raise RuntimeError("procrastinate's schema has no procrastinate_fetch_job_v2")
    return found.group(0)
