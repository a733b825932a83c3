"""Runs on a job queue: procrastinate's schema, queued and cancelled runs, and run events.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-01

Procrastinate's own schema comes from the installed package, pinned in
``requirements.txt``: this revision refuses any other version, so a later upgrade
of procrastinate applies that version's migration files in a revision of its own.
A run is now created ``queued`` (with the user's content, in the transaction that
defers its job) and a worker makes it ``running``; ``cancelled`` is new. Each run
records its steps in ``run_events``, numbered from 1.
"""

import procrastinate
from alembic import op
from procrastinate.schema import SchemaManager

from hango.db.audit_actions import change_actions

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

PROCRASTINATE_VERSION = "3.10.0"
OLD_STATUSES = ("running", "completed", "failed", "max_turns", "quota_exhausted", "timeout")
NEW_STATUSES = ("queued", *OLD_STATUSES, "cancelled")
QUEUE_ACTIONS = ("run.cancel",)


def upgrade() -> None:
    if procrastinate.__version__ != PROCRASTINATE_VERSION:
        raise RuntimeError(
            f"revision 0008 applies procrastinate {PROCRASTINATE_VERSION}'s schema; "
            f"{procrastinate.__version__} is installed (see requirements.txt)"
        )
    op.execute(SchemaManager.get_schema())
    _statuses(NEW_STATUSES)
    change_actions(op.get_bind(), add=QUEUE_ACTIONS)
    op.execute(
        """
        alter table runs
          add column kind text not null default 'message' check (kind in ('message', 'compact')),
          add column user_id uuid,
          add column input jsonb,
          add column job_id bigint,
          add column queued_at timestamptz not null default now(),
          add column result jsonb;
        create index runs_in_flight_idx on runs (tenant_id, user_id) where status in ('queued', 'running');
        create table run_events (
          tenant_id uuid not null,
          run_id uuid not null,
          seq integer not null check (seq > 0),
          kind text not null check (kind in (
            'run_started', 'model_call_started', 'model_call_finished', 'tool_started',
            'tool_finished', 'message_stored', 'compaction', 'error', 'run_finished')),
          at timestamptz not null default now(),
          detail jsonb not null default '{}'::jsonb,
          primary key (run_id, seq),
          foreign key (tenant_id, run_id) references runs (tenant_id, id) on delete cascade
        );
        """
    )


def downgrade() -> None:
    op.execute(
        """
        drop table run_events;
        delete from runs where status in ('queued', 'cancelled');
        drop index runs_in_flight_idx;
        alter table runs drop column kind, drop column user_id, drop column input, drop column job_id,
          drop column queued_at, drop column result;
        """
    )
    _statuses(OLD_STATUSES)
    change_actions(op.get_bind(), remove=QUEUE_ACTIONS)
    # Everything procrastinate's schema created carries its prefix.
    op.execute(
        """
        do $$
        declare name text;
        begin
          for name in select c.relname from pg_class c join pg_namespace n on n.oid = c.relnamespace
                       where n.nspname = current_schema() and c.relkind = 'r' and c.relname like 'procrastinate\\_%'
          loop execute format('drop table if exists %I cascade', name); end loop;
          for name in select p.oid::regprocedure::text from pg_proc p join pg_namespace n on n.oid = p.pronamespace
                       where n.nspname = current_schema() and p.proname like 'procrastinate\\_%'
          loop execute format('drop routine if exists %s cascade', name); end loop;
          for name in select t.typname from pg_type t join pg_namespace n on n.oid = t.typnamespace
                       where n.nspname = current_schema() and t.typname like 'procrastinate\\_%' and t.typtype in ('e', 'c')
          loop execute format('drop type if exists %I cascade', name); end loop;
        end $$;
        """
    )


def _statuses(statuses: tuple[str, ...]) -> None:
    listed = ", ".join(f"'{s}'" for s in statuses)
    op.execute(
        "alter table runs drop constraint runs_status_check; "
        f"alter table runs add constraint runs_status_check check (status in ({listed}))"
    )
