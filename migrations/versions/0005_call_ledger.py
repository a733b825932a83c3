"""The call ledger: what every model call sent, as part hashes, without content.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-01

One row per model call, written in the statement that writes its usage row.
A call stores only what changed since its base (the previous call of its
lineage in the session): the number of leading parts it shares with the base,
and the parts after them. Rows go with their session.
"""

from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        """
        create table model_calls (
          id uuid primary key,
          tenant_id uuid not null,
          session_id uuid not null,
          usage_id uuid not null references usage_records(id) on delete cascade,
          run_id uuid,
          purpose text not null check (purpose in ('run', 'summarize', 'subagent', 'context_try')),
          model text not null,
          started_at timestamptz not null,
          duration_ms integer not null check (duration_ms >= 0),
          base_id uuid references model_calls(id) on delete cascade,
          prefix_parts integer not null check (prefix_parts >= 0),
          tail jsonb not null check (jsonb_typeof(tail) = 'array'),
          breakpoints smallint[] not null,
          parts_count integer not null check (parts_count >= prefix_parts),
          expected_cache_read integer not null check (expected_cache_read >= 0),
          miss_reason text check (
            miss_reason in ('prefix_changed', 'expired', 'below_minimum', 'first_call', 'unexplained')
          ),
          miss_part text,
          miss_cause text,
          check (base_id is not null or prefix_parts = 0),
          foreign key (tenant_id, session_id) references sessions (tenant_id, id) on delete cascade
        );
        create index model_calls_session_idx on model_calls (tenant_id, session_id, started_at, id);
        create index model_calls_base_idx on model_calls (base_id) where base_id is not null;

        -- The ledger's hash of a message as stored, written with the message by the run that stores
        -- it, so a run never re-hashes its history (null for older rows: hashed when sent).
        alter table messages add column content_hash text check (length(content_hash) = 32);
        """
    )


def downgrade() -> None:
    op.execute("drop table model_calls; alter table messages drop column content_hash")
