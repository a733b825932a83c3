"""A tenant is served by its runs in progress; the claim and the slot give-back share one rule.

Revision ID: 0020
Revises: 0019
Create Date: 2026-12-07

Revisions 0016 and 0019 counted a tenant's (and member's) ``doing`` jobs, and the run giving its
slot back (``hango.agent.yielding``) counted them again in a query of its own. A run that gave its
slot back then stopped counting, so a quiet tenant with three short runs behind a busy tenant's
four multi-turn runs got only two slots (two and two), and its third run waited for one of its
first two to end.

A tenant's jobs in progress (``hango_jobs_in_progress``) are now its ``doing`` jobs and the jobs
that gave their slot back and wait to go on (``todo`` after a try: ``attempts`` > 0). Giving a
slot back changes nobody's count, so the counts measure what a tenant has started, not which of
its runs happens to hold a slot. The claim takes the job of the tenant with the fewest in progress,
then of its member with the fewest, then a run that gave its slot back before one never started,
then the oldest. A running run gives its slot back (``hango_slot_wanted``) when a job the freed
slot may take waits for a tenant (or, in its tenant, a member) that would still have fewer in
progress than the run's with one more (its count + 1 < the run's: the claim's order, with a
margin). Both read the same counts and the same lock rule, built here from one text each.
Since a give-back moves no count and a slot moves only to a tenant that stays below the one
giving it, two tenants never trade a slot back and forth.
"""

import importlib.util
from pathlib import Path

from alembic import op

revision = "0020"
down_revision = "0019"
branch_labels = None
depends_on = None

IN_PROGRESS = """
CREATE OR REPLACE FUNCTION hango_jobs_in_progress()
    RETURNS TABLE (tenant_id text, user_id text, jobs bigint)
    LANGUAGE sql STABLE
AS $$
    -- running, or gave its slot back and waits to go on (the only retry a run's job has)
    SELECT args->>'tenant_id', args->>'user_id', count(*)
        FROM procrastinate_jobs
        WHERE args ? 'tenant_id' AND (status = 'doing' OR (status = 'todo' AND attempts > 0))
        GROUP BY 1, 2
$$;
"""

# procrastinate's lock rule: no job of the lock runs, none of it waits before (or above) this one
LOCK_FREE = """NOT EXISTS (
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
                AND (jobs.scheduled_at IS NULL OR jobs.scheduled_at <= now())"""

SERVED = """served AS MATERIALIZED (SELECT * FROM hango_jobs_in_progress()),
    tenant_served AS (SELECT tenant_id, sum(jobs) AS jobs FROM served GROUP BY 1)"""

CLAIM = f"""
CREATE OR REPLACE FUNCTION procrastinate_fetch_job_v2(
    target_queue_names character varying[],
    p_worker_id bigint
)
    RETURNS procrastinate_jobs
    LANGUAGE plpgsql
AS $$
DECLARE
    found_jobs procrastinate_jobs;
    open_slots integer := nullif(current_setting('hango.claim_open_slots', true), '')::integer;
    held integer := 0;
BEGIN
    -- One claim at a time: the next statement's snapshot sees every claim before it.
    PERFORM pg_advisory_xact_lock(hashtextextended('hango:job-claim', 0));
    IF open_slots IS NOT NULL THEN
        SELECT count(*) INTO held FROM procrastinate_jobs WHERE status = 'doing' AND worker_id = p_worker_id;
    END IF;
    WITH {SERVED},
    candidate AS (
        SELECT jobs.*
            FROM procrastinate_jobs AS jobs
            LEFT JOIN tenant_served AS tenant ON tenant.tenant_id = jobs.args->>'tenant_id'
            LEFT JOIN served AS member
                ON member.tenant_id = jobs.args->>'tenant_id' AND member.user_id = jobs.args->>'user_id'
            WHERE
                {LOCK_FREE}
                AND (target_queue_names IS NULL OR jobs.queue_name = ANY( target_queue_names ))
                -- with headroom, the worker's other slots take only tenants with nothing in progress
                AND (open_slots IS NULL OR held < open_slots OR coalesce(tenant.jobs, 0) = 0)
            ORDER BY jobs.priority DESC, coalesce(tenant.jobs, 0), coalesce(member.jobs, 0),
                jobs.attempts DESC, jobs.id ASC
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

SLOT_WANTED = f"""
CREATE OR REPLACE FUNCTION hango_slot_wanted(p_job_id bigint, open_slots integer)
    RETURNS boolean
    LANGUAGE sql STABLE
AS $$
    WITH {SERVED},
    mine AS (
        SELECT job.args->>'tenant_id' AS tenant_id, job.args->>'user_id' AS user_id, job.queue_name,
               (SELECT count(*) FROM procrastinate_jobs AS held
                    WHERE held.status = 'doing' AND held.worker_id = job.worker_id) AS held,
               (SELECT jobs FROM tenant_served WHERE tenant_id = job.args->>'tenant_id') AS tenant_jobs,
               (SELECT jobs FROM served
                    WHERE tenant_id = job.args->>'tenant_id' AND user_id = job.args->>'user_id') AS member_jobs
            FROM procrastinate_jobs AS job
            WHERE job.id = p_job_id AND job.status = 'doing'
    )
    SELECT EXISTS (
        SELECT 1
            FROM procrastinate_jobs AS jobs
            CROSS JOIN mine
            LEFT JOIN tenant_served AS tenant ON tenant.tenant_id = jobs.args->>'tenant_id'
            LEFT JOIN served AS member
                ON member.tenant_id = jobs.args->>'tenant_id' AND member.user_id = jobs.args->>'user_id'
            WHERE
                {LOCK_FREE}
                AND jobs.queue_name = mine.queue_name
                AND jobs.args ? 'tenant_id'
                -- with headroom, the worker must be able to claim it once the slot frees
                AND (open_slots IS NULL OR mine.held - 1 < open_slots OR coalesce(tenant.jobs, 0) = 0)
                -- once claimed, its tenant (or member) still has fewer in progress than this run's
                AND CASE
                    WHEN jobs.args->>'tenant_id' <> mine.tenant_id THEN
                        coalesce(tenant.jobs, 0) + 1 < mine.tenant_jobs
                    ELSE
                        coalesce(member.jobs, 0) + 1 < mine.member_jobs
                END
    )
$$;
"""


def claim_with_headroom() -> str:
    """Revision 0019's claim, the one its downgrade puts back."""
    spec = importlib.util.spec_from_file_location(
        "run_yield", Path(__file__).with_name("0019_run_yield_and_headroom.py")
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.claim_with_headroom()


def upgrade() -> None:
    op.execute(IN_PROGRESS)
    op.execute(CLAIM)
    op.execute(SLOT_WANTED)


def downgrade() -> None:
    op.execute(claim_with_headroom())
    op.execute("DROP FUNCTION hango_slot_wanted(bigint, integer); DROP FUNCTION hango_jobs_in_progress()")
