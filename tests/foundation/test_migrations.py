"""Migrations: a full round trip on a fresh database, and every check constraint holds."""

from __future__ import annotations

import contextlib
import json
import uuid
from collections.abc import Iterator
from decimal import Decimal

import pytest
import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError

from hango.agent.ledger.record import SNAPSHOT_EVERY, rebuild
from hango.db import make_engine, migrate
from hango.db.schema import metadata

# Procrastinate's own tables: revision 0008 applies its schema, its queries are procrastinate's.
QUEUE_TABLES = {
    "procrastinate_jobs",
    "procrastinate_events",
    "procrastinate_workers",
    "procrastinate_periodic_defers",
}


def _tables(engine: sa.Engine) -> set[str]:
    return set(sa.inspect(engine).get_table_names()) - {"alembic_version"}


def test_upgrade_downgrade_to_base_and_upgrade_again(fresh_url):
    engine = make_engine(fresh_url)
    try:
        migrate.upgrade(engine)
        assert _tables(engine) == {t.name for t in metadata.sorted_tables} | QUEUE_TABLES
        migrate.check_current(engine)
        migrate.downgrade(engine, "base")
        assert _tables(engine) == set()
        with pytest.raises(migrate.SchemaNotCurrent, match="hango db upgrade"):
            migrate.check_current(engine)
        migrate.upgrade(engine)
        assert _tables(engine) == {t.name for t in metadata.sorted_tables} | QUEUE_TABLES
    finally:
        engine.dispose()


QUEUE_RULES = sa.text(
    "select pg_get_functiondef('procrastinate_fetch_job_v2(varchar[], bigint)'::regprocedure),"
    " array(select tgname::text from pg_trigger where tgname like 'hango\\_%' order by 1),"
    " array(select proname::text from pg_proc where proname like 'hango\\_%' and prorettype <> 'trigger'::regtype"
    " order by 1)"
)


def queue_rules_across(fresh_url: str, before: str, after: str) -> tuple[tuple, tuple, tuple]:
    """The claim, hango's queue triggers and functions: at ``before``, at ``after``, and back down at ``before``."""
    engine = make_engine(fresh_url)
    try:
        seen = []
        for step in (migrate.upgrade, migrate.upgrade, migrate.downgrade):
            step(engine, before if len(seen) != 1 else after)
            with engine.connect() as conn:
                seen.append(tuple(conn.execute(QUEUE_RULES).one()))
    finally:
        engine.dispose()
    return seen[0], seen[1], seen[2]


def test_the_fair_claim_migration_downgrades_to_procrastinates_own_claim(fresh_url):
    procrastinates, fair, restored = queue_rules_across(fresh_url, "0015", "0016")
    assert procrastinates[1:] == ([], []) and "tenant_id" not in procrastinates[0]
    assert "tenant_id" in fair[0] and fair[1] == ["hango_lock_freed", "hango_lock_freed_on_delete"]
    assert restored == procrastinates


def test_the_runs_in_progress_migration_downgrades_to_the_claim_with_headroom(fresh_url):
    with_headroom, in_progress, restored = queue_rules_across(fresh_url, "0019", "0020")
    assert "hango_jobs_in_progress" in in_progress[0] and "hango_jobs_in_progress" not in with_headroom[0]
    assert in_progress[2] == ["hango_jobs_in_progress", "hango_slot_wanted"] and with_headroom[2] == []
    assert restored == with_headroom


@contextlib.contextmanager
def base_rows_at(fresh_url: str, revision: str) -> Iterator[tuple[sa.Engine, sa.Connection]]:
    """A fresh database migrated to ``revision`` with the base rows, and a transaction to add more in.

    The engine stays usable (to upgrade further) until the test ends.
    """
    engine = make_engine(fresh_url)
    migrate.upgrade(engine, revision)
    with engine.begin() as conn:
        for statement in BASE_ROWS:
            conn.execute(sa.text(statement))
        yield engine, conn


def test_the_message_estimates_migration_leaves_stored_messages_unestimated_without_a_backfill(fresh_url):
    with base_rows_at(fresh_url, "0002") as (engine, _):
        pass
    migrate.upgrade(engine)
    with engine.connect() as conn:
        row = conn.execute(sa.text("select tokens, estimator_version from messages")).one()
    engine.dispose()
    assert tuple(row) == (None, None)  # NULL: not estimated yet, estimated when read


def test_schema_definitions_match_the_migrated_columns(engine):
    inspector = sa.inspect(engine)
    for table in metadata.sorted_tables:
        migrated = {c["name"] for c in inspector.get_columns(table.name)}
        assert set(table.c.keys()) == migrated, table.name


T, T2, U, A, S, R = (uuid.UUID(int=i) for i in range(1, 7))

BASE_ROWS = [
    f"insert into tenants (id, name, slug) values ('{T}', 'T', 't'), ('{T2}', 'T2', 't2')",
    f"insert into users (id, email) values ('{U}', 'u@x.io')",
    f"insert into memberships (tenant_id, user_id, role) values ('{T}', '{U}', 'owner')",
    f"insert into agents (id, tenant_id, owner_id, name, model) values ('{A}', '{T}', '{U}', 'a', 'offline/echo')",
    f"insert into sessions (id, tenant_id, agent_id, owner_id) values ('{S}', '{T}', '{A}', '{U}')",
    f"insert into runs (id, tenant_id, session_id, status) values ('{R}', '{T}', '{S}', 'running')",
    f"insert into messages (id, tenant_id, session_id, seq, role, content) "
    f"values (gen_random_uuid(), '{T}', '{S}', 1, 'user', '[]')",
]

BAD_ROWS = {
    "membership role": f"insert into memberships (tenant_id, user_id, role) values ('{T2}', '{U}', 'boss')",
    "tenant slug": "insert into tenants (id, name, slug) values (gen_random_uuid(), 'x', 'Bad Slug')",
    "negative quota": "insert into tenants (id, name, slug, token_quota) values (gen_random_uuid(), 'x', 'q', -1)",
    "user email": "insert into users (id, email) values (gen_random_uuid(), 'no-at-sign')",
    "key rate limit": f"insert into api_keys (id, tenant_id, user_id, prefix, key_hash, rate_limit_per_minute) "
    f"values (gen_random_uuid(), '{T}', '{U}', 'p', 'h', 0)",
    "key of a non-member": f"insert into api_keys (id, tenant_id, user_id, prefix, key_hash) "
    f"values (gen_random_uuid(), '{T2}', '{U}', 'p2', 'h')",
    "agent model": f"insert into agents (id, tenant_id, owner_id, name, model) "
    f"values (gen_random_uuid(), '{T}', '{U}', 'a', 'nomodel')",
    "agent window": f"insert into agents (id, tenant_id, owner_id, name, model, context_window) "
    f"values (gen_random_uuid(), '{T}', '{U}', 'a', 'offline/echo', 0)",
    "agent tools type": f"insert into agents (id, tenant_id, owner_id, name, model, tools) "
    f"values (gen_random_uuid(), '{T}', '{U}', 'a', 'offline/echo', '{{}}')",
    "session on another tenant's agent": f"insert into sessions (id, tenant_id, agent_id, owner_id) "
    f"values (gen_random_uuid(), '{T2}', '{A}', '{U}')",
    "message role": f"insert into messages (id, tenant_id, session_id, seq, role, content) "
    f"values (gen_random_uuid(), '{T}', '{S}', 2, 'system', '[]')",
    "message seq": f"insert into messages (id, tenant_id, session_id, seq, role, content) "
    f"values (gen_random_uuid(), '{T}', '{S}', 0, 'user', '[]')",
    "duplicate seq": f"insert into messages (id, tenant_id, session_id, seq, role, content) "
    f"values (gen_random_uuid(), '{T}', '{S}', 1, 'user', '[]')",
    "message content type": f"insert into messages (id, tenant_id, session_id, seq, role, content) "
    f"values (gen_random_uuid(), '{T}', '{S}', 3, 'user', '{{}}')",
    "message tokens": f"insert into messages (id, tenant_id, session_id, seq, role, content, tokens, "
    f"estimator_version) values (gen_random_uuid(), '{T}', '{S}', 4, 'user', '[]', -1, 1)",
    "message tokens without an estimator version": f"insert into messages (id, tenant_id, session_id, seq, "
    f"role, content, tokens) values (gen_random_uuid(), '{T}', '{S}', 5, 'user', '[]', 7)",
    "run status": f"insert into runs (id, tenant_id, session_id, status) "
    f"values (gen_random_uuid(), '{T}', '{S}', 'weird')",
    "memory path": f"insert into memory_files (tenant_id, agent_id, path, content) "
    f"values ('{T}', '{A}', '/etc/passwd', '')",
    "memory path escape": f"insert into memory_files (tenant_id, agent_id, path, content) "
    f"values ('{T}', '{A}', '/memories/../etc', '')",
    "session file path": f"insert into session_files (tenant_id, session_id, path, content) "
    f"values ('{T}', '{S}', 'relative.txt', '')",
    "skill name": f"insert into skills (id, tenant_id, agent_id, name) values (gen_random_uuid(), '{T}', '{A}', 'Bad Name')",
    "summary seq": f"insert into session_summaries (id, tenant_id, session_id, through_seq, text) "
    f"values (gen_random_uuid(), '{T}', '{S}', 0, 's')",
    "usage purpose": f"insert into usage_records (id, tenant_id, run_id, purpose, provider, model) "
    f"values (gen_random_uuid(), '{T}', '{R}', 'bogus', 'offline', 'echo')",
    "usage tokens": f"insert into usage_records (id, tenant_id, run_id, purpose, provider, model, input_tokens) "
    f"values (gen_random_uuid(), '{T}', '{R}', 'run', 'offline', 'echo', -5)",
    "audit action": f"insert into audit_log (id, tenant_id, action, object_type) "
    f"values (gen_random_uuid(), '{T}', 'unknown.action', 'agent')",
    "rate window of an unknown member": f"insert into rate_limit_windows (tenant_id, user_id, window_start, count) "
    f"values ('{T2}', '{U}', now(), 1)",
    "auth failure count": "insert into auth_failures (subject, window_start, count) values ('client:x', now(), -1)",
    "skill of another tenant's agent": f"insert into skills (id, tenant_id, agent_id, name) "
    f"values (gen_random_uuid(), '{T2}', '{A}', 'ok')",
    "agent defer type": f"insert into agents (id, tenant_id, owner_id, name, model, defer) "
    f"values (gen_random_uuid(), '{T}', '{U}', 'a', 'offline/echo', '[]')",
    "agent defer tools type": f"insert into agents (id, tenant_id, owner_id, name, model, defer) "
    f"values (gen_random_uuid(), '{T}', '{U}', 'a', 'offline/echo', '{{\"tools\": {{}}, \"auto_percent\": null}}')",
    "revealed tool seq": f"insert into revealed_tools (tenant_id, session_id, part, name, seq) "
    f"values ('{T}', '{S}', 'tool:grep', 'grep', 0)",
    "revealed part of no tool": f"insert into revealed_tools (tenant_id, session_id, part, name, seq) "
    f"values ('{T}', '{S}', 'system:agent', 'agent', 1)",
    "revealed tool of another tenant's session": f"insert into revealed_tools (tenant_id, session_id, part, "
    f"name, seq) values ('{T2}', '{S}', 'tool:grep', 'grep', 1)",
}


@pytest.fixture
def base_rows(engine: sa.Engine) -> Iterator[sa.Connection]:
    """A connection holding one row per table in an open transaction, rolled back afterwards."""
    with engine.connect() as conn:
        transaction = conn.begin()
        for statement in BASE_ROWS:
            conn.execute(sa.text(statement))
        yield conn
        transaction.rollback()


def test_the_base_rows_are_valid(base_rows):
    assert base_rows.execute(sa.text("select count(*) from messages")).scalar() == 1


@pytest.mark.parametrize("statement", BAD_ROWS.values(), ids=BAD_ROWS.keys())
def test_every_constraint_rejects_a_bad_row(base_rows, statement):
    savepoint = base_rows.begin_nested()
    with pytest.raises(IntegrityError):
        base_rows.execute(sa.text(statement))
    savepoint.rollback()


NFC_NAME, NFD_NAME = "/memories/caf\u00e9.md", "/memories/cafe\u0301.md"
ALONE, ALONE_NFC = "/memories/the\u0301.md", "/memories/th\u00e9.md"
ANGSTROMS = ("/memories/\u212b.md", "/memories/A\u030a.md")  # both are /memories/\u00c5.md in NFC


def test_the_upgrade_to_0004_stores_paths_in_nfc_and_keeps_files_that_collide(fresh_url):
    engine = make_engine(fresh_url)
    paths = {
        "alone": ALONE,
        "nfc": NFC_NAME,
        "beside it": NFD_NAME,
        "first": ANGSTROMS[0],
        "second": ANGSTROMS[1],
    }
    insert = sa.text(
        f"insert into memory_files (tenant_id, agent_id, path, content) values ('{T}', '{A}', :p, :c)"
    )
    try:
        migrate.upgrade(engine, "0002")
        with engine.begin() as conn:
            for statement in BASE_ROWS[:4]:
                conn.execute(sa.text(statement))
            for content, path in paths.items():
                conn.execute(insert, {"p": path, "c": content})

        migrate.upgrade(engine)

        with engine.connect() as conn:
            stored = dict(conn.execute(sa.text("select content, path from memory_files")).all())
        assert len(stored) == len(paths)  # nothing lost
        assert (stored["alone"], stored["nfc"]) == (ALONE_NFC, NFC_NAME)
        assert stored["beside it"] == NFD_NAME  # its NFC form was taken: it keeps its path
        renamed = {stored["first"], stored["second"]} - set(ANGSTROMS)
        assert renamed == {"/memories/\u00c5.md"} and len({stored["first"], stored["second"]}) == 2
    finally:
        engine.dispose()


def test_the_snapshot_migration_stores_every_32nd_row_of_a_long_chain_whole_and_rebuilds_the_same(fresh_url):
    with base_rows_at(fresh_url, "0007") as (engine, conn):
        _insert_delta_chain(conn, 70)
    with engine.connect() as conn:
        before = rebuild(conn.execute(LEDGER_ROWS).all())
    migrate.upgrade(engine)
    with engine.connect() as conn:
        after = conn.execute(LEDGER_ROWS).all()
    engine.dispose()
    whole = [index for index, row in enumerate(after) if row.prefix_parts == 0]
    assert whole == [0, SNAPSHOT_EVERY, 2 * SNAPSHOT_EVERY]
    assert rebuild(after) == before


def test_the_part_costs_migration_sums_each_parts_cost_over_the_calls_recorded_before_it(
    fresh_url, monkeypatch
):
    negotiated = {"input_mtok": 2, "cache_read_mtok": 0.2, "cache_write_mtok": 2.5, "output_mtok": 8}
    monkeypatch.setenv("HANGO_PRICES", json.dumps({SONNET: negotiated}))  # the server's prices, as it runs
    with base_rows_at(fresh_url, "0009") as (engine, conn):
        _insert_delta_chain(conn, 40, model=SONNET)
    migrate.upgrade(engine)
    with engine.connect() as conn:
        totals = {row.part: row for row in conn.execute(sa.text("select * from part_costs"))}
    engine.dispose()
    input_rate = Decimal(2) / 1_000_000
    assert set(totals) == {f"message:{k}" for k in range(1, 41)}
    for k in (1, 7, 40):
        rode = 41 - k  # calls k to 40
        assert (totals[f"message:{k}"].calls, totals[f"message:{k}"].priced_calls) == (rode, rode)
        assert totals[f"message:{k}"].usd == rode * 3 * input_rate  # uncached: nothing was read or written


SONNET = "anthropic/claude-sonnet-4-6"
LEDGER_ROWS = sa.text(
    "select id, base_id, prefix_parts, tail, breakpoints from model_calls order by started_at, id"
)


def _insert_delta_chain(conn: sa.Connection, length: int, model: str = "offline/echo") -> None:
    """``length`` ledger rows of session S, each a delta of the one before adding one part (as before 0009).

    Part ``message:k`` (3 tokens) rides in calls k to ``length``; each call reports 1 token in and out.
    """
    provider, bare = model.split("/")
    previous = None
    for index in range(length):
        call, usage = uuid.UUID(int=1000 + index), uuid.UUID(int=5000 + index)
        conn.execute(
            sa.text(
                "insert into usage_records (id, tenant_id, purpose, provider, model, input_tokens, "
                "output_tokens, cache_read_tokens, cache_write_tokens) "
                f"values ('{usage}', '{T}', 'run', '{provider}', '{bare}', 1, 1, 0, 0)"
            )
        )
        tail = f'[["message:{index + 1}", "{index:032d}", 3]]'
        conn.execute(
            sa.text(
                "insert into model_calls (id, tenant_id, session_id, usage_id, purpose, model, started_at, "
                "duration_ms, base_id, prefix_parts, tail, breakpoints, parts_count, expected_cache_read) "
                f"values ('{call}', '{T}', '{S}', '{usage}', 'run', '{model}', "
                f"timestamptz '2026-01-01' + interval '{index} seconds', 1, :base, {index}, "
                f"cast(:tail as jsonb), '{{}}', {index + 1}, 0)"
            ),
            {"base": previous, "tail": tail},
        )
        previous = call
