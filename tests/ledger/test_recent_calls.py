"""The calls a process keeps for its lineages: bounded per session and in parts, least recently used out."""

from __future__ import annotations

import uuid

from hango.agent.ledger.recent import Known, RecentCalls
from hango.agent.ledger.record import SentCall, SentPart


def call(parts: int) -> Known:
    return Known(SentCall(tuple(SentPart(f"message:{i}", "0" * 32, 1) for i in range(parts)), ()), 0)


def test_a_session_keeps_its_newest_calls_only():
    recent, session = RecentCalls(kept_parts=100, per_session=2), uuid.uuid4()
    first, second, third = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()

    for call_id in (first, second, third):
        recent.put(session, call_id, call(10))

    assert list(recent.of(session)) == [second, third]
    assert recent.of(uuid.uuid4()) == {}


def test_past_the_parts_bound_the_least_recently_used_session_goes_first():
    recent = RecentCalls(kept_parts=25, per_session=4)
    old, used, new = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    recent.put(old, uuid.uuid4(), call(10))
    recent.put(used, uuid.uuid4(), call(10))
    recent.of(old)  # read: now the most recently used

    recent.put(new, uuid.uuid4(), call(10))

    assert recent.of(used) == {}
    assert len(recent.of(old)) == 1 and len(recent.of(new)) == 1


def test_a_call_larger_than_the_bound_is_not_kept_and_a_copy_is_the_callers():
    recent, session = RecentCalls(kept_parts=5), uuid.uuid4()
    recent.put(session, uuid.uuid4(), call(6))
    assert recent.of(session) == {}

    recent.put(session, kept := uuid.uuid4(), call(5))
    copy = recent.of(session)
    recent.put(session, uuid.uuid4(), call(5))  # the bound drops the first

    assert list(copy) == [kept] and kept not in recent.of(session)
