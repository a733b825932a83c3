"""Ledger reads stay bounded: a call's parts, a diff and the next call's verdict read the calls involved, not the session.

A call is rebuilt from its chain of ledger rows, back to the nearest whole row,
which the gateway writes every ``SNAPSHOT_EVERY`` calls: the same statements and
at most that many rows whether the session holds 10 calls or 200.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable

import pytest
import sqlalchemy as sa
from werkzeug.test import TestResponse

from hango.agent.ledger import record
from hango.agent.ledger.recent import Known, RecentCalls
from hango.agent.ledger.record import SNAPSHOT_EVERY, Lineage, rebuild
from hango.db.schema import model_calls
from hango.store import TenantStore
from hango.store.part_costs import fold_waiting
from scripts.bench.history import record_calls
from tests.perf.test_statement_counts import rows, seed_sessions
from tests.support.clients import As, Tenant
from tests.support.sql import count_rows

SIZES = (10, 200)


@pytest.fixture
def ledgers(engine: sa.Engine, acme: Tenant) -> dict[int, tuple[str, list[uuid.UUID]]]:
    """Two 10-message sessions of one agent, with one real run call and then 9 or 199 ledger entries more,
    their part costs folded into the totals (as the workers' periodic fold leaves them)."""
    _, made = seed_sessions(engine, acme, dict.fromkeys(SIZES, (10, 5)))
    ledgers = {}
    for calls, session in made.items():
        ran = acme.owner.post_and_wait(f"/v1/sessions/{session}/messages", json={"content": "hi"})
        assert ran.status_code == 201, ran.text
        with engine.begin() as conn:
            store = TenantStore(conn, uuid.UUID(acme.id))
            ledgers[calls] = (session, record_calls(store, uuid.UUID(session), calls - 1))
    with engine.begin() as conn:
        fold_waiting(conn, batch=1_000)
    return ledgers


def ledger_rows_read(counted: list[tuple[str, int]]) -> int:
    return sum(n for statement, n in counted if "FROM model_calls" in statement and "INSERT" not in statement)


def same_rows_for_both(
    acme: Tenant, ledgers: dict, send: Callable[[As, str, list[uuid.UUID]], TestResponse]
) -> list[tuple[str, int]]:
    """The statements and rows of ``send`` on the 200-call session, its statements asserted those of the 10-call one.

    The rows a chain reads differ (its length is the call's distance from a whole row), within the bound.
    """
    short, long = (rows(acme.owner, lambda who, s=s, c=c: send(who, s, c)) for s, c in ledgers.values())
    assert [statement for statement, _ in short] == [statement for statement, _ in long]
    return long


def test_a_calls_parts_read_the_same_statements_and_at_most_one_chain_for_10_and_200_calls(acme, ledgers):
    counted = same_rows_for_both(acme, ledgers, lambda who, s, c: who.get(f"/v1/sessions/{s}/calls/{c[-1]}"))

    assert ledger_rows_read(counted) <= SNAPSHOT_EVERY + 2  # its chain (with its base) and its listed row


def test_a_calls_parts_totals_so_far_are_one_statement_reading_a_row_per_part_for_10_and_200_calls(
    acme, ledgers
):
    counted = same_rows_for_both(acme, ledgers, lambda who, s, c: who.get(f"/v1/sessions/{s}/calls/{c[-1]}"))
    parts = len(
        acme.owner.get(f"/v1/sessions/{ledgers[200][0]}/calls/{ledgers[200][1][-1]}").get_json()["parts"]
    )

    totals = [n for statement, n in counted if "FROM part_costs" in statement]
    assert totals == [parts]  # the 200 calls each part rode in were summed by the fold, not on this read


def test_a_diff_of_two_calls_reads_their_chains_only_for_10_and_200_calls(acme, ledgers):
    counted = same_rows_for_both(
        acme, ledgers, lambda who, s, c: who.get(f"/v1/sessions/{s}/context/diff?from={c[-2]}&to={c[-1]}")
    )

    assert ledger_rows_read(counted) <= 2 * SNAPSHOT_EVERY


def test_a_diff_of_the_last_call_and_the_next_reads_one_chain_for_10_and_200_calls(acme, ledgers):
    counted = same_rows_for_both(acme, ledgers, lambda who, s, c: who.get(f"/v1/sessions/{s}/context/diff"))

    assert ledger_rows_read(counted) <= SNAPSHOT_EVERY + 1


def test_the_next_calls_cache_verdict_reads_one_chain_for_10_and_200_calls(acme, ledgers):
    counted = same_rows_for_both(acme, ledgers, lambda who, s, c: who.get(f"/v1/sessions/{s}/context"))

    assert ledger_rows_read(counted) <= SNAPSHOT_EVERY


def test_every_call_of_a_long_ledger_rebuilds_from_its_own_chain_as_from_the_whole_ledger(
    engine, acme, ledgers
):
    session, calls = ledgers[200]
    with engine.connect() as conn:
        store = TenantStore(conn, uuid.UUID(acme.id))
        whole = rebuild(
            conn.execute(
                sa.select(model_calls)
                .where(model_calls.c.session_id == uuid.UUID(session))
                .order_by("started_at")
            )
        )
        for call in calls:
            chain = store.model_calls.chain(uuid.UUID(session), call)
            assert 1 <= len(chain) <= SNAPSHOT_EVERY
            assert chain[0].prefix_parts == 0  # it starts at a whole row
            assert rebuild(chain)[call] == whole[call]


def lineage_rows(engine: sa.Engine, acme: Tenant, session: uuid.UUID) -> tuple[Lineage, int]:
    """A new lineage of the session's runs, loaded as a gateway loads it, and the ledger rows it read."""
    lineage = Lineage()
    with engine.connect() as conn, count_rows(engine) as counted:
        lineage.load(TenantStore(conn, uuid.UUID(acme.id)).model_calls, session, "run")
    return lineage, ledger_rows_read(counted)


def test_a_lineage_continued_from_a_call_this_process_keeps_reads_only_the_rows_after_it(
    engine, acme, ledgers, monkeypatch
):
    session, made = ledgers[200]
    monkeypatch.setattr(record, "RECENT", RecentCalls())  # a process that keeps none of them yet
    cold, cold_rows = lineage_rows(engine, acme, uuid.UUID(session))
    kept = record.RECENT.of(uuid.UUID(session))
    assert list(kept) == [made[-1]] and cold_rows == cold.depth + 1 > 1  # back to the whole row

    warm, warm_rows = lineage_rows(engine, acme, uuid.UUID(session))

    assert warm_rows == 1  # the latest call, known: its row alone (for its report and its time)
    assert (warm.base_id, warm.previous, warm.depth) == (cold.base_id, cold.previous, cold.depth)


def test_a_chain_stops_at_the_newest_call_the_process_keeps_and_rebuilds_the_rest_from_it(
    engine, acme, ledgers, monkeypatch
):
    session, made = ledgers[200]
    monkeypatch.setattr(record, "RECENT", RecentCalls())
    cold, _ = lineage_rows(engine, acme, uuid.UUID(session))
    assert cold.depth >= 3  # the three calls after the known one are deltas of the same whole row
    recent = RecentCalls()
    with engine.connect() as conn:  # the process knows the call three before the latest, as a lineage left it
        rows = TenantStore(conn, uuid.UUID(acme.id)).model_calls.chain(uuid.UUID(session), made[-4])
    recent.put(uuid.UUID(session), made[-4], Known(rebuild(rows)[made[-4]], cold.depth - 3))
    monkeypatch.setattr(record, "RECENT", recent)

    warm, warm_rows = lineage_rows(engine, acme, uuid.UUID(session))

    assert warm_rows == 4  # the known call's row and the three after it
    assert (warm.base_id, warm.previous, warm.depth) == (cold.base_id, cold.previous, cold.depth)
