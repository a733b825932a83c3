"""A try's one ``context.try`` row: with its call's record when answered in time, else written alone."""

from __future__ import annotations

import threading
import uuid
from types import SimpleNamespace

import pytest
import sqlalchemy as sa

from hango.db.schema import audit_log, usage_records
from hango.inspector.try_audit import TryAudit
from hango.store import TenantStore
from tests.inspector.conftest import Lab, user


def outcomes(lab: Lab, session: str) -> list[str]:
    """The outcomes of the session's ``context.try`` rows, oldest first."""
    query = (
        sa.select(audit_log.c.detail["outcome"].as_string())
        .where(audit_log.c.action == "context.try", audit_log.c.object_id == session)
        .order_by(audit_log.c.created_at)
    )
    with lab.engine.connect() as conn:
        return list(conn.execute(query).scalars())


@pytest.fixture
def tried(lab: Lab) -> tuple[Lab, str, TryAudit]:
    """A session, and the audit of a try on it as the view builds one."""
    session = lab.session(lab.agent(), [user("a")])
    who = SimpleNamespace(user_id=uuid.UUID(lab.tenant.owner.user_id), api_key_id=None)
    return lab, session, TryAudit(uuid.UUID(session), who, ["tool:grep"], "anthropic/claude-test")


def write_alone(lab: Lab, audit: TryAudit, outcome: str) -> bool:
    with lab.engine.begin() as conn:
        return audit.alone(outcome, TenantStore(conn, uuid.UUID(lab.tenant.id)))


def record_with(lab: Lab, audit: TryAudit, then=lambda: None) -> None:
    """The call's record transaction as the gateway runs it: ``alongside`` around it, committed inside."""
    with audit.with_call() as also, lab.engine.begin() as conn:
        if also is not None:
            also(TenantStore(conn, uuid.UUID(lab.tenant.id)))
        then()


def test_a_tries_audit_row_is_committed_in_the_transaction_that_records_its_call(lab: Lab):
    session = lab.session(lab.agent(), [user("a")])

    assert lab.try_(session).status_code == 200

    with lab.engine.connect() as conn:
        audited = conn.execute(
            sa.select(sa.text("audit_log.xmin::text")).where(audit_log.c.object_id == session)
        ).scalar_one()
        billed = conn.execute(
            sa.select(sa.text("usage_records.xmin::text")).where(usage_records.c.session_id == session)
        ).scalar_one()
    assert audited == billed  # one transaction wrote both
    assert outcomes(lab, session) == ["ok"]


def test_a_call_recorded_after_its_request_stopped_waiting_writes_no_second_row(tried):
    lab, session, audit = tried

    assert write_alone(lab, audit, "provider_timeout") is True  # the request, at its deadline
    record_with(lab, audit)  # the abandoned call, answered late

    assert outcomes(lab, session) == ["provider_timeout"]


def test_a_request_that_stops_waiting_during_the_records_commit_waits_for_it_and_writes_nothing(tried):
    lab, session, audit = tried
    inside, release = threading.Event(), threading.Event()
    recording = threading.Thread(
        target=record_with, args=(lab, audit, lambda: (inside.set(), release.wait(60)))
    )
    recording.start()
    assert inside.wait(60)
    written: list[bool] = []
    waiting = threading.Thread(target=lambda: written.append(write_alone(lab, audit, "provider_timeout")))
    waiting.start()

    waiting.join(0.5)
    assert waiting.is_alive()  # it waits while the record's transaction is open
    release.set()
    recording.join(60)
    waiting.join(60)

    assert written == [False]
    assert outcomes(lab, session) == ["ok"]  # the call was answered and billed


def test_a_record_that_fails_leaves_the_row_to_the_request(tried):
    lab, session, audit = tried

    def fail() -> None:
        raise RuntimeError("the record's transaction failed")

    with pytest.raises(RuntimeError):
        record_with(lab, audit, fail)

    assert outcomes(lab, session) == []  # rolled back with the record
    assert write_alone(lab, audit, "internal_error") is True
    assert outcomes(lab, session) == ["internal_error"]
