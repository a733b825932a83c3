"""A live server's queue worker folds the part costs its calls left waiting, and no total moves for it."""

from __future__ import annotations

import uuid

import pytest
import sqlalchemy as sa

from hango.agent.parts import is_scratch
from hango.db.schema import part_costs, pending_part_costs
from tests.reliability.conftest import Live, MakeTenant
from tests.reliability.test_faults import user_session
from tests.support.net import wait_until

pytestmark = pytest.mark.server


def rows_of(engine: sa.Engine, table: sa.Table, session_id: str) -> int:
    with engine.connect() as conn:
        query = (
            sa.select(sa.func.count()).select_from(table).where(table.c.session_id == uuid.UUID(session_id))
        )
        return conn.execute(query).scalar_one()


def test_the_workers_fold_a_tries_waiting_part_costs_and_its_totals_read_the_same(
    fresh: Live, live_tenant: MakeTenant, engine: sa.Engine
) -> None:
    owner = live_tenant(fresh.url).owner
    session_id = user_session(owner, engine)
    tried = owner.post(f"/v1/sessions/{session_id}/context/try", json={"message": "and now?"})
    assert tried.status_code == 200, tried.text
    (call,) = owner.get(f"/v1/sessions/{session_id}/calls").json()["items"]
    shown = owner.get(f"/v1/sessions/{session_id}/calls/{call['id']}").json()["parts"]

    # the try's new turn is a scratch part: only the try holds it, so it adds to no session part's total
    scratch = [part["id"] for part in shown if is_scratch(part["id"])]
    assert len(scratch) == 1, scratch
    stored = [part for part in shown if not is_scratch(part["id"])]

    wait_until(lambda: rows_of(engine, pending_part_costs, session_id) == 0, timeout=60)

    assert rows_of(engine, part_costs, session_id) == len(stored)  # a row per session part it sent
    with engine.connect() as conn:
        folded = conn.execute(
            sa.select(part_costs.c.part).where(part_costs.c.session_id == uuid.UUID(session_id))
        ).scalars()
        assert set(folded) == {part["id"] for part in stored}
    assert owner.get(f"/v1/sessions/{session_id}/calls/{call['id']}").json()["parts"] == shown
