"""A run gives its slot back between turns; a worker may keep slots for tenants with nothing running.

Revision ID: 0019
Revises: 0018
Create Date: 2026-12-07

``runs.ran_seconds`` is how long a run has worked, summed over the times a worker held it: a run
that gives its slot back at a turn boundary (``hango.agent.yielding``) waits in the queue again,
and its deadline (``HANGO_RUN_TIMEOUT``) counts only its own running time, not that wait.

The fair claim (revision 0016) gains headroom: a worker connection that sets
``hango.claim_open_slots`` (``hango.worker``: its concurrency less ``HANGO_QUEUE_HEADROOM``)
claims a job of a tenant with jobs running only while it runs fewer jobs than that; its other
slots take only jobs of tenants with nothing running (and the periodic jobs, which have no
tenant). A connection without the setting (the web, every tool) claims as before.

Between two equally served candidates the claim now takes a run that gave its slot back (its job
was retried: ``attempts`` > 0) before a run that never started, so a member's started run goes on
before its next one; the yield's rule (``hango.agent.yielding``) never gives a slot to a tenant
that would then be served as much as the run that gave it, so the two never trade it back and forth.
"""

import importlib.util
from pathlib import Path

import sqlalchemy as sa
from alembic import op

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None


def fair_claim() -> str:
    """Revision 0016's claim, the one this revision extends and its downgrade puts back."""
    spec = importlib.util.spec_from_file_location(
        "fair_claim", Path(__file__).with_name("0016_fair_job_claim.py")
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.FAIR_CLAIM


def claim_with_headroom() -> str:
    """The fair claim, its tenant-with-jobs-running candidates limited to the worker's open slots."""
    claim = fair_claim()
    declared = "    found_jobs procrastinate_jobs;\nBEGIN\n"
    counted = (
        "    found_jobs procrastinate_jobs;\n"
        "    open_slots integer := nullif(current_setting('hango.claim_open_slots', true), '')::integer;\n"
        "    held integer := 0;\n"
        "BEGIN\n"
        "    IF open_slots IS NOT NULL THEN\n"
        "        SELECT count(*) INTO held FROM procrastinate_jobs WHERE status = 'doing' AND worker_id = p_worker_id;\n"
        "    END IF;\n"
    )
    todo = "                AND jobs.status = 'todo'\n"
    limited = (
        todo
        + "                AND (open_slots IS NULL OR held < open_slots OR coalesce(tenant.jobs, 0) = 0)\n"
    )
    order = "coalesce(member.jobs, 0), jobs.id ASC"
    resumed_first = "coalesce(member.jobs, 0), jobs.attempts DESC, jobs.id ASC"
    if declared not in claim or todo not in claim or order not in claim:
        raise RuntimeError("revision 0016's claim changed: extend it by hand")
    return claim.replace(declared, counted, 1).replace(todo, limited, 1).replace(order, resumed_first, 1)


def upgrade() -> None:
    op.add_column("runs", sa.Column("ran_seconds", sa.Float, nullable=False, server_default="0"))
    op.execute(claim_with_headroom())


def downgrade() -> None:
    op.execute(fair_claim())
    op.drop_column("runs", "ran_seconds")
