"""The v1 data model: tenants, members, keys, agents, sessions, history, usage, audit.

Revision ID: 0001
Revises:
Create Date: 2026-11-30
"""

from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

AUDIT_ACTIONS = (
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

UPGRADE = """
create table tenants (
  id uuid primary key,
  name text not null check (length(name) between 1 and 200),
  slug text not null unique check (slug ~ '^[a-z0-9][a-z0-9-]{0,62}$'),
  trace_llm_content boolean not null default false,
  token_quota bigint check (token_quota >= 0),
  created_at timestamptz not null default now()
);

create table users (
  id uuid primary key,
  email text not null unique check (position('@' in email) > 1),
  name text not null default '',
  created_at timestamptz not null default now()
);

create table memberships (
  tenant_id uuid not null references tenants(id) on delete cascade,
  user_id uuid not null references users(id) on delete cascade,
  role text not null check (role in ('owner', 'admin', 'member')),
  created_at timestamptz not null default now(),
  primary key (tenant_id, user_id)
);
create index memberships_user_idx on memberships (user_id);

create table api_keys (
  id uuid primary key,
  tenant_id uuid not null,
  user_id uuid not null,
  name text not null default '',
  prefix text not null unique,
  key_hash text not null,
  rate_limit_per_minute integer not null default 600 check (rate_limit_per_minute > 0),
  created_at timestamptz not null default now(),
  last_used_at timestamptz,
  revoked_at timestamptz,
  foreign key (tenant_id, user_id) references memberships (tenant_id, user_id) on delete cascade
);
create index api_keys_tenant_idx on api_keys (tenant_id, created_at, id);
create index api_keys_user_idx on api_keys (tenant_id, user_id);

create table agents (
  id uuid primary key,
  tenant_id uuid not null references tenants(id) on delete cascade,
  owner_id uuid not null references users(id),
  name text not null check (length(name) between 1 and 200),
  model text not null check (model ~ '^[a-z0-9_-]+/.+$'),
  system_prompt text not null default '',
  tools jsonb not null default '[]' check (jsonb_typeof(tools) = 'array'),
  settings jsonb not null default '{}' check (jsonb_typeof(settings) = 'object'),
  context_window integer not null default 200000 check (context_window > 0),
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  unique (tenant_id, id)
);
create index agents_tenant_idx on agents (tenant_id, created_at, id);
create index agents_owner_idx on agents (tenant_id, owner_id);

create table sessions (
  id uuid primary key,
  tenant_id uuid not null,
  agent_id uuid not null,
  owner_id uuid not null references users(id),
  title text not null default '',
  todos jsonb not null default '[]' check (jsonb_typeof(todos) = 'array'),
  created_at timestamptz not null default now(),
  unique (tenant_id, id),
  foreign key (tenant_id, agent_id) references agents (tenant_id, id) on delete cascade
);
create index sessions_tenant_idx on sessions (tenant_id, created_at, id);
create index sessions_owner_idx on sessions (tenant_id, owner_id, created_at);
create index sessions_agent_idx on sessions (tenant_id, agent_id);

create table runs (
  id uuid primary key,
  tenant_id uuid not null,
  session_id uuid not null,
  status text not null
    check (status in ('running', 'completed', 'failed', 'max_turns', 'quota_exhausted', 'timeout')),
  stop_reason text,
  error jsonb,
  idempotency_key text check (length(idempotency_key) between 1 and 200),
  started_at timestamptz not null default now(),
  finished_at timestamptz,
  unique (tenant_id, id),
  foreign key (tenant_id, session_id) references sessions (tenant_id, id) on delete cascade
);
create index runs_session_idx on runs (tenant_id, session_id, started_at, id);
create unique index runs_idempotency_idx on runs (session_id, idempotency_key)
  where idempotency_key is not null;

create table messages (
  id uuid primary key,
  tenant_id uuid not null,
  session_id uuid not null,
  seq integer not null check (seq >= 1),
  role text not null check (role in ('user', 'assistant')),
  content jsonb not null check (jsonb_typeof(content) = 'array'),
  run_id uuid references runs(id) on delete set null,
  created_at timestamptz not null default now(),
  unique (session_id, seq),
  foreign key (tenant_id, session_id) references sessions (tenant_id, id) on delete cascade
);
create index messages_tenant_session_idx on messages (tenant_id, session_id, seq);
create index messages_run_idx on messages (run_id) where run_id is not null;

create table session_summaries (
  id uuid primary key,
  tenant_id uuid not null,
  session_id uuid not null,
  through_seq integer not null check (through_seq >= 1),
  text text not null,
  created_at timestamptz not null default now(),
  foreign key (tenant_id, session_id) references sessions (tenant_id, id) on delete cascade
);
create index session_summaries_session_idx on session_summaries (tenant_id, session_id, through_seq);

create table session_files (
  tenant_id uuid not null,
  session_id uuid not null,
  path text not null check (path ~ '^/' and position('/../' in path || '/') = 0),
  content text not null,
  updated_at timestamptz not null default now(),
  primary key (session_id, path),
  foreign key (tenant_id, session_id) references sessions (tenant_id, id) on delete cascade
);
create index session_files_tenant_idx on session_files (tenant_id, session_id);

create table memory_files (
  tenant_id uuid not null,
  agent_id uuid not null,
  path text not null check (path ~ '^/memories/[^/]' and position('/../' in path || '/') = 0),
  content text not null,
  updated_at timestamptz not null default now(),
  primary key (agent_id, path),
  foreign key (tenant_id, agent_id) references agents (tenant_id, id) on delete cascade
);
create index memory_files_tenant_idx on memory_files (tenant_id, agent_id);

create table skills (
  id uuid primary key,
  tenant_id uuid not null,
  agent_id uuid not null,
  name text not null check (name ~ '^[a-z0-9][a-z0-9_-]{0,63}$'),
  description text not null default '',
  body text not null default '',
  allowed_tools text[] not null default '{}',
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  unique (agent_id, name),
  foreign key (tenant_id, agent_id) references agents (tenant_id, id) on delete cascade
);
create index skills_tenant_idx on skills (tenant_id, agent_id);

-- usage is a ledger: its object ids are historical references, so deleting a
-- session or an agent never refunds the tenant's quota.
create table usage_records (
  id uuid primary key,
  tenant_id uuid not null references tenants(id) on delete cascade,
  api_key_id uuid,
  user_id uuid,
  agent_id uuid,
  session_id uuid,
  run_id uuid not null,
  purpose text not null check (purpose in ('run', 'summarize', 'subagent')),
  provider text not null,
  model text not null,
  input_tokens integer not null default 0 check (input_tokens >= 0),
  output_tokens integer not null default 0 check (output_tokens >= 0),
  cache_read_tokens integer not null default 0 check (cache_read_tokens >= 0),
  cache_write_tokens integer not null default 0 check (cache_write_tokens >= 0),
  created_at timestamptz not null default now()
);
create index usage_records_tenant_idx on usage_records (tenant_id, created_at);

create table audit_log (
  id uuid primary key,
  tenant_id uuid not null references tenants(id) on delete cascade,
  actor_user_id uuid,
  api_key_id uuid,
  action text not null check (action in ({actions})),
  object_type text not null,
  object_id text,
  detail jsonb not null default '{{}}' check (jsonb_typeof(detail) = 'object'),
  created_at timestamptz not null default now()
);
create index audit_log_tenant_idx on audit_log (tenant_id, created_at, id);
create index audit_log_action_idx on audit_log (tenant_id, action, created_at);

create table rate_limit_windows (
  api_key_id uuid not null references api_keys(id) on delete cascade,
  window_start timestamptz not null,
  count integer not null check (count >= 0),
  primary key (api_key_id, window_start)
);
"""

TABLES = (
    "rate_limit_windows",
    "audit_log",
    "usage_records",
    "skills",
    "memory_files",
    "session_files",
    "session_summaries",
    "messages",
    "runs",
    "sessions",
    "agents",
    "api_keys",
    "memberships",
    "users",
    "tenants",
)


def upgrade() -> None:
    actions = ", ".join(f"'{a}'" for a in AUDIT_ACTIONS)
    op.execute(UPGRADE.replace("{actions}", actions).replace("{{}}", "{}"))


def downgrade() -> None:
    for table in TABLES:
        op.execute(f"drop table {table}")
