"""Part ids mean one thing forever: a message seq is never reused in a session."""

from __future__ import annotations

import uuid

from hango.store.context_overrides import StoredOverride, Target
from tests.fakes.provider_server import MESSAGES
from tests.inspector.conftest import Lab, assistant, user


def _store_exclusion(lab: Lab, session: str, part: str) -> None:
    """An exclusion stored while its part existed (or before: a row the API no longer accepts)."""
    owner = uuid.UUID(lab.tenant.owner.user_id)
    target = Target("session", uuid.UUID(session))
    lab.store(
        lambda s: s.context_overrides.replace(target, [StoredOverride(part, "exclude", None, None)], owner)
    )


def test_a_failed_runs_removed_message_leaves_its_seq_unused_and_its_override_hides_nothing(lab: Lab):
    session = lab.session(lab.agent(), [user("one"), assistant("two")])
    lab.fake.fail(500, times=1, path=MESSAGES)
    assert lab.say(session, "three fails").status_code >= 500
    assert [m["seq"] for m in lab.messages(session)] == [1, 2]  # the failed run removed message 3
    _store_exclusion(lab, session, "message:3")  # e.g. saved while the failed run was in flight

    assert lab.say(session, "four").status_code == 201

    seqs = [m["seq"] for m in lab.messages(session)]
    assert seqs == [1, 2, 4, 5]
    last_call = lab.fake.bodies(MESSAGES)[-1]
    assert last_call["messages"][-1]["content"][0]["text"] == "four"


def test_a_stale_exclusion_of_a_future_seq_never_hides_the_users_next_turn(lab: Lab):
    session = lab.session(lab.agent(), [user("one"), assistant("two"), user("three")])
    lab.store(lambda s: s.messages.delete(uuid.UUID(session), 3))
    _store_exclusion(lab, session, "message:3")

    assert lab.say(session, "four").status_code == 201

    assert [m["seq"] for m in lab.messages(session)][-2:] == [4, 5]
    sent = lab.fake.bodies(MESSAGES)[0]
    assert sent["messages"][-1]["content"][0]["text"] == "four"
    assert by_stale(lab.inspect(session)) == ["message:3"]


def by_stale(body: dict) -> list[str]:
    return [p["id"] for p in body["messages"] if p["stale"]]


def test_the_seq_counter_only_grows_even_when_the_last_message_is_removed(lab: Lab):
    session = lab.session(lab.agent(), [user("one"), assistant("two")])
    lab.store(lambda s: s.messages.delete(uuid.UUID(session), 2))
    lab.append(session, [assistant("again")])
    assert [m["seq"] for m in lab.messages(session)] == [1, 3]
