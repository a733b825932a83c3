"""The context inspector: stored overrides, try calls in usage, estimates next to reported tokens.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-30
"""

from alembic import op

from hango.db.audit_actions import change_actions

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

INSPECTOR_ACTIONS = ("context.override", "context.try")


def upgrade() -> None:
    op.execute(
        """
        create table context_overrides (
          id uuid primary key,
          tenant_id uuid not null references tenants(id) on delete cascade,
          agent_id uuid references agents(id) on delete cascade,
          session_id uuid references sessions(id) on delete cascade,
          part text not null check (length(part) between 1 and 520),
          action text not null check (action in ('exclude', 'replace')),
          replacement text,
          paired_from text,
          created_by uuid not null references users(id),
          created_at timestamptz not null default now(),
          check (num_nonnulls(agent_id, session_id) = 1),
          check ((action = 'replace') = (replacement is not null)),
          check (paired_from is null or action = 'exclude'),
          check (agent_id is null or part like 'system:%' or part like 'tool:%'),
          check (session_id is null or part like 'message:%' or part = 'summary')
        );
        create unique index context_overrides_agent_part_idx
          on context_overrides (tenant_id, agent_id, part) where agent_id is not null;
        create unique index context_overrides_session_part_idx
          on context_overrides (tenant_id, session_id, part) where session_id is not null;

        alter table usage_records alter column run_id drop not null;
        alter table usage_records add column estimated_input_tokens integer check (estimated_input_tokens >= 0);
        alter table usage_records drop constraint usage_records_purpose_check;
        alter table usage_records add constraint usage_records_purpose_check
          check (purpose in ('run', 'summarize', 'subagent', 'context_try'));
        create index usage_records_session_idx on usage_records (tenant_id, session_id, created_at);
        """
    )
    change_actions(op.get_bind(), add=INSPECTOR_ACTIONS)


def downgrade() -> None:
    op.execute(
        """
        delete from usage_records where purpose = 'context_try' or run_id is null;
        drop index usage_records_session_idx;
        alter table usage_records drop constraint usage_records_purpose_check;
        alter table usage_records add constraint usage_records_purpose_check
          check (purpose in ('run', 'summarize', 'subagent'));
        alter table usage_records drop column estimated_input_tokens;
        alter table usage_records alter column run_id set not null;
        drop table context_overrides;
        """
    )
    change_actions(op.get_bind(), remove=INSPECTOR_ACTIONS)
