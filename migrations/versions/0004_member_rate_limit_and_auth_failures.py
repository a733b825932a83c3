"""One rate-limit budget per member, failed authentications counted per client and key prefix, NFC paths.

Revision ID: 0004
Revises: 0002
Create Date: 2026-12-01

Both tables hold per-minute bookkeeping only, so the upgrade and the downgrade
drop the current windows instead of converting them: at worst a member gets one
fresh minute.

Memory and session-file paths are now looked up in NFC: stored paths are
normalised, except a path whose NFC form the same agent or session already
holds (two files that were told apart only by their encoding). Such a file
stays under its old path, listed, so nothing is lost; the downgrade leaves paths
as they are (NFC is a valid form for the old code too).
"""

from alembic import op

revision = "0004"
down_revision = "0002"
branch_labels = None
depends_on = None

KEY_WINDOWS = """
create table rate_limit_windows (
  api_key_id uuid not null references api_keys(id) on delete cascade,
  window_start timestamptz not null,
  count integer not null check (count >= 0),
  primary key (api_key_id, window_start)
);
"""


def upgrade() -> None:
    op.execute(
        """
        drop table rate_limit_windows;
        create table rate_limit_windows (
          tenant_id uuid not null,
          user_id uuid not null,
          window_start timestamptz not null,
          count integer not null check (count >= 0),
          primary key (tenant_id, user_id, window_start),
          foreign key (tenant_id, user_id) references memberships (tenant_id, user_id) on delete cascade
        );
        create table auth_failures (
          subject text not null check (length(subject) between 1 and 100),
          window_start timestamptz not null,
          count integer not null check (count >= 0),
          primary key (subject, window_start)
        );
        create index auth_failures_window_idx on auth_failures (window_start);
        """
    )
    for table, owner in (("memory_files", "agent_id"), ("session_files", "session_id")):
        # One row per owner and NFC form (the newest) is renamed, and only when that form is free.
        op.execute(
            f"""
            update {table} as f set path = normalize(f.path, NFC)
            from (
              select distinct on ({owner}, normalize(path, NFC)) ctid as row from {table}
              where path <> normalize(path, NFC)
              order by {owner}, normalize(path, NFC), updated_at desc
            ) as first
            where f.ctid = first.row and not exists (
              select 1 from {table} as o where o.{owner} = f.{owner} and o.path = normalize(f.path, NFC)
            )
            """
        )


def downgrade() -> None:
    op.execute("drop table auth_failures; drop table rate_limit_windows;" + KEY_WINDOWS)
