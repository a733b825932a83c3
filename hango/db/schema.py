"""Table definitions for queries (SQLAlchemy Core). The schema itself is owned by the migrations."""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import ARRAY, JSON, JSONB, UUID

metadata = sa.MetaData()


def _id() -> sa.Column:
    return sa.Column("id", UUID(as_uuid=True), primary_key=True)


def _tenant() -> sa.Column:
    return sa.Column("tenant_id", UUID(as_uuid=True), nullable=False)


def _created() -> sa.Column:
    return sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False)


tenants = sa.Table(
    "tenants",
    metadata,
    _id(),
    sa.Column("name", sa.Text, nullable=False),
    sa.Column("slug", sa.Text, nullable=False),
    sa.Column("trace_llm_content", sa.Boolean, nullable=False),
    sa.Column("token_quota", sa.BigInteger),
    _created(),
)

users = sa.Table(
    "users",
    metadata,
    _id(),
    sa.Column("email", sa.Text, nullable=False),
    sa.Column("name", sa.Text, nullable=False),
    _created(),
)

memberships = sa.Table(
    "memberships",
    metadata,
    _tenant(),
    sa.Column("user_id", UUID(as_uuid=True), nullable=False),
    sa.Column("role", sa.Text, nullable=False),
    _created(),
)

api_keys = sa.Table(
    "api_keys",
    metadata,
    _id(),
    _tenant(),
    sa.Column("user_id", UUID(as_uuid=True), nullable=False),
    sa.Column("name", sa.Text, nullable=False),
    sa.Column("prefix", sa.Text, nullable=False),
    sa.Column("key_hash", sa.Text, nullable=False),
    sa.Column("rate_limit_per_minute", sa.Integer, nullable=False),
    _created(),
    sa.Column("last_used_at", sa.DateTime(timezone=True)),
    sa.Column("revoked_at", sa.DateTime(timezone=True)),
)

agents = sa.Table(
    "agents",
    metadata,
    _id(),
    _tenant(),
    sa.Column("owner_id", UUID(as_uuid=True), nullable=False),
    sa.Column("name", sa.Text, nullable=False),
    sa.Column("model", sa.Text, nullable=False),
    sa.Column("system_prompt", sa.Text, nullable=False),
    sa.Column("tools", JSONB, nullable=False),
    sa.Column("settings", JSONB, nullable=False),
    sa.Column("context_window", sa.Integer, nullable=False),
    _created(),
    sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
    # what the agent defers (``hango.agent.deferral``): {"tools": [part ids], "auto_percent": int | null}
    sa.Column("defer", JSONB, nullable=False, server_default='{"tools": [], "auto_percent": null}'),
)

sessions = sa.Table(
    "sessions",
    metadata,
    _id(),
    _tenant(),
    sa.Column("agent_id", UUID(as_uuid=True), nullable=False),
    sa.Column("owner_id", UUID(as_uuid=True), nullable=False),
    sa.Column("title", sa.Text, nullable=False),
    sa.Column("todos", JSONB, nullable=False),
    sa.Column("last_seq", sa.Integer, nullable=False),
    _created(),
)

messages = sa.Table(
    "messages",
    metadata,
    _id(),
    _tenant(),
    sa.Column("session_id", UUID(as_uuid=True), nullable=False),
    sa.Column("seq", sa.Integer, nullable=False),
    sa.Column("role", sa.Text, nullable=False),
    sa.Column("content", JSONB, nullable=False),
    sa.Column("content_hash", sa.Text),
    sa.Column("run_id", UUID(as_uuid=True)),
    _created(),
    sa.Column("tokens", sa.Integer),  # the message's token estimate, NULL until estimated
    sa.Column("estimator_version", sa.Integer),  # the estimator that made ``tokens``
)

runs = sa.Table(
    "runs",
    metadata,
    _id(),
    _tenant(),
    sa.Column("session_id", UUID(as_uuid=True), nullable=False),
    sa.Column("status", sa.Text, nullable=False),
    sa.Column("stop_reason", sa.Text),
    sa.Column("error", JSONB),
    sa.Column("idempotency_key", sa.Text),
    sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("finished_at", sa.DateTime(timezone=True)),
    sa.Column("kind", sa.Text, nullable=False),  # message | compact | try
    sa.Column("user_id", UUID(as_uuid=True)),  # the member who queued it
    sa.Column("input", JSONB),  # the user's content until the worker stores it as a message
    sa.Column("job_id", sa.BigInteger),  # its procrastinate job
    sa.Column("queued_at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("result", JSONB),  # a compact run's figures, a try run's turn
    # how long it has worked, over every time a worker held it (its deadline counts only this)
    sa.Column("ran_seconds", sa.Float, nullable=False, server_default="0"),
)

run_events = sa.Table(
    "run_events",
    metadata,
    _tenant(),
    sa.Column("run_id", UUID(as_uuid=True), primary_key=True),
    sa.Column("seq", sa.Integer, primary_key=True),
    sa.Column("kind", sa.Text, nullable=False),
    sa.Column("at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False),
    sa.Column("detail", JSONB, nullable=False),
)

session_summaries = sa.Table(
    "session_summaries",
    metadata,
    _id(),
    _tenant(),
    sa.Column("session_id", UUID(as_uuid=True), nullable=False),
    sa.Column("through_seq", sa.Integer, nullable=False),
    sa.Column("text", sa.Text, nullable=False),
    _created(),
)

session_files = sa.Table(
    "session_files",
    metadata,
    _tenant(),
    sa.Column("session_id", UUID(as_uuid=True), nullable=False),
    sa.Column("path", sa.Text, nullable=False),
    sa.Column("content", sa.Text, nullable=False),
    sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
)

memory_files = sa.Table(
    "memory_files",
    metadata,
    _tenant(),
    sa.Column("agent_id", UUID(as_uuid=True), nullable=False),
    sa.Column("path", sa.Text, nullable=False),
    sa.Column("content", sa.Text, nullable=False),
    sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
)

skills = sa.Table(
    "skills",
    metadata,
    _id(),
    _tenant(),
    sa.Column("agent_id", UUID(as_uuid=True), nullable=False),
    sa.Column("name", sa.Text, nullable=False),
    sa.Column("description", sa.Text, nullable=False),
    sa.Column("body", sa.Text, nullable=False),
    sa.Column("allowed_tools", ARRAY(sa.Text), nullable=False),
    _created(),
    sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
)

usage_records = sa.Table(
    "usage_records",
    metadata,
    _id(),
    _tenant(),
    sa.Column("api_key_id", UUID(as_uuid=True)),
    sa.Column("user_id", UUID(as_uuid=True)),
    sa.Column("agent_id", UUID(as_uuid=True)),
    sa.Column("session_id", UUID(as_uuid=True)),
    sa.Column("run_id", UUID(as_uuid=True)),
    sa.Column("purpose", sa.Text, nullable=False),
    sa.Column("provider", sa.Text, nullable=False),
    sa.Column("model", sa.Text, nullable=False),
    sa.Column("input_tokens", sa.Integer, nullable=False),
    sa.Column("output_tokens", sa.Integer, nullable=False),
    sa.Column("cache_read_tokens", sa.Integer, nullable=False),
    sa.Column("cache_write_tokens", sa.Integer, nullable=False),
    sa.Column("estimated_input_tokens", sa.Integer),
    _created(),
)

model_calls = sa.Table(
    "model_calls",
    metadata,
    _id(),
    _tenant(),
    sa.Column("session_id", UUID(as_uuid=True), nullable=False),
    sa.Column("usage_id", UUID(as_uuid=True), nullable=False),
    sa.Column("run_id", UUID(as_uuid=True)),
    sa.Column("purpose", sa.Text, nullable=False),
    sa.Column("model", sa.Text, nullable=False),
    sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("duration_ms", sa.Integer, nullable=False),
    sa.Column("base_id", UUID(as_uuid=True)),
    sa.Column("prefix_parts", sa.Integer, nullable=False),
    sa.Column("tail", JSONB, nullable=False),
    sa.Column("breakpoints", ARRAY(sa.Integer), nullable=False),
    sa.Column("parts_count", sa.Integer, nullable=False),
    sa.Column("expected_cache_read", sa.Integer, nullable=False),
    sa.Column("miss_reason", sa.Text),
    sa.Column("miss_part", sa.Text),
    sa.Column("miss_cause", sa.Text),
)

# A part's cost summed over every call of its session it rode in, folded in from ``pending_part_costs``.
part_costs = sa.Table(
    "part_costs",
    metadata,
    sa.Column("tenant_id", UUID(as_uuid=True), primary_key=True),
    sa.Column("session_id", UUID(as_uuid=True), primary_key=True),
    sa.Column("part", sa.Text, primary_key=True),
    sa.Column("calls", sa.Integer, nullable=False),
    sa.Column("priced_calls", sa.Integer, nullable=False),
    sa.Column("usd", sa.Numeric, nullable=False),
)

# One recorded call's part costs, ``{part: usd or null}``, waiting for the periodic fold into ``part_costs``.
pending_part_costs = sa.Table(
    "pending_part_costs",
    metadata,
    sa.Column("call_id", UUID(as_uuid=True), primary_key=True),
    sa.Column("tenant_id", UUID(as_uuid=True), nullable=False),
    sa.Column("session_id", UUID(as_uuid=True), nullable=False),
    sa.Column("costs", JSON, nullable=False),
)

audit_log = sa.Table(
    "audit_log",
    metadata,
    _id(),
    _tenant(),
    sa.Column("actor_user_id", UUID(as_uuid=True)),
    sa.Column("api_key_id", UUID(as_uuid=True)),
    sa.Column("action", sa.Text, nullable=False),
    sa.Column("object_type", sa.Text, nullable=False),
    sa.Column("object_id", sa.Text),
    sa.Column("detail", JSONB, nullable=False),
    _created(),
)

rate_limit_windows = sa.Table(
    "rate_limit_windows",
    metadata,
    _tenant(),
    sa.Column("user_id", UUID(as_uuid=True), nullable=False),
    sa.Column("window_start", sa.DateTime(timezone=True), nullable=False),
    sa.Column("count", sa.Integer, nullable=False),
)

auth_failures = sa.Table(
    "auth_failures",
    metadata,
    sa.Column("subject", sa.Text, nullable=False),
    sa.Column("window_start", sa.DateTime(timezone=True), nullable=False),
    sa.Column("count", sa.Integer, nullable=False),
)

context_overrides = sa.Table(
    "context_overrides",
    metadata,
    _id(),
    _tenant(),
    sa.Column("agent_id", UUID(as_uuid=True)),
    sa.Column("session_id", UUID(as_uuid=True)),
    sa.Column("part", sa.Text, nullable=False),
    sa.Column("action", sa.Text, nullable=False),
    sa.Column("replacement", sa.Text),
    sa.Column("paired_from", sa.Text),
    sa.Column("created_by", UUID(as_uuid=True), nullable=False),
    _created(),
)

mcp_servers = sa.Table(
    "mcp_servers",
    metadata,
    _id(),
    _tenant(),
    sa.Column("name", sa.Text, nullable=False),
    sa.Column("catalog", sa.Text),
    sa.Column("url", sa.Text),
    sa.Column("header_names", JSONB, nullable=False),
    sa.Column("headers_sealed", sa.LargeBinary),
    sa.Column("tools", JSONB),
    sa.Column("tools_hash", sa.Text),
    sa.Column("tools_read_at", sa.DateTime(timezone=True)),
    sa.Column("created_by", UUID(as_uuid=True), nullable=False),
    _created(),
)

agent_mcp_servers = sa.Table(
    "agent_mcp_servers",
    metadata,
    _tenant(),
    sa.Column("agent_id", UUID(as_uuid=True), nullable=False),
    sa.Column("server_id", UUID(as_uuid=True), nullable=False),
    sa.Column("tools", JSONB),
    _created(),
)

# The deferred tools the model of a session found with ``tool_search``: each revealed (sent) from the
# assistant message ``seq`` whose call found it, for the rest of the session.
revealed_tools = sa.Table(
    "revealed_tools",
    metadata,
    _tenant(),
    sa.Column("session_id", UUID(as_uuid=True), primary_key=True),
    sa.Column("part", sa.Text, primary_key=True),
    sa.Column("name", sa.Text, nullable=False),
    sa.Column("seq", sa.Integer, nullable=False),
    # the reveal's own moment, not its transaction's start: the ledger places it between two calls
    sa.Column(
        "created_at", sa.DateTime(timezone=True), server_default=sa.func.clock_timestamp(), nullable=False
    ),
)

TENANT_TABLES: tuple[str, ...] = tuple(t.name for t in metadata.sorted_tables if "tenant_id" in t.c)
