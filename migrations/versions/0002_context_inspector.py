"""The context inspector: stored overrides, try calls in usage, estimates next to reported tokens.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-30
"""

from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

V1_ACTIONS = (
    "tenant.bootstrap",
    "tenant.update",
    "member.create",
    "member.delete",
    "api_key.create",
    "api_key.update",
    "api_key.delete",
    "agent.create",
    "agent.update",
    "agent.delete",
    "memory.put",
    "memory.delete",
    "skill.create",
    "skill.update",
    "skill.delete",
    "session.create",
    "session.delete",
    "run.create",
)
INSPECTOR_ACTIONS = ("context.override", "context.try")


def _actions(actions: tuple[str, ...]) -> str:
    return ", ".join(f"'{a}'" for a in actions)


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
    _audit_actions(V1_ACTIONS + INSPECTOR_ACTIONS)


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
        delete from audit_log where action in ('context.override', 'context.try');
        drop table context_overrides;
        """
    )
    _audit_actions(V1_ACTIONS)


def _audit_actions(actions: tuple[str, ...]) -> None:
    op.execute(
        "alter table audit_log drop constraint audit_log_action_check; "
        f"alter table audit_log add constraint audit_log_action_check check (action in ({_actions(actions)}))"
    )
