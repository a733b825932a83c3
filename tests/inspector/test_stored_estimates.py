"""Each message's token estimate is stored with it, stamped with the estimator's version, and used from there.

Neither inspect nor a run estimates the stored history again: a current stored
estimate is what the inspect part shows; one of another version (or none, as
for messages stored before estimates were) is estimated again in memory, and a
run stores it. Inspect writes nothing.
"""

from __future__ import annotations

import uuid

import sqlalchemy as sa

from hango.agent.estimator import ESTIMATOR_VERSION, estimate_message
from hango.db.schema import messages
from hango.messages import message_from_dict
from tests.inspector.conftest import OFFLINE, Lab, assistant, by_id, user

HISTORY = [user("Where are the notes?"), assistant("In /notes.md, next to the code."), user("Thanks!")]


def estimates(lab: Lab, session_id: str) -> dict[int, tuple[int | None, int | None]]:
    """Each stored message's (tokens, estimator_version), by seq."""
    query = sa.select(messages.c.seq, messages.c.tokens, messages.c.estimator_version).where(
        messages.c.session_id == uuid.UUID(session_id)
    )
    with lab.engine.connect() as conn:
        return {row.seq: (row.tokens, row.estimator_version) for row in conn.execute(query)}


def stamp(lab: Lab, session_id: str, seq: int, tokens: int, version: int) -> None:
    with lab.engine.begin() as conn:
        conn.execute(
            sa.update(messages)
            .where(messages.c.session_id == uuid.UUID(session_id), messages.c.seq == seq)
            .values(tokens=tokens, estimator_version=version)
        )


def true_estimate(lab: Lab, session_id: str, seq: int) -> int:
    item = next(m for m in lab.messages(session_id) if m["seq"] == seq)
    return estimate_message(message_from_dict(item))


def test_a_run_stores_each_new_message_with_its_estimate_and_the_estimator_version(lab: Lab):
    session = lab.session(lab.agent(model=OFFLINE))

    assert lab.say(session, "Hello there, what do you see?").status_code == 201

    stored = estimates(lab, session)
    assert sorted(stored) == [1, 2]  # the question and the answer
    for seq, (tokens, version) in stored.items():
        assert (tokens, version) == (true_estimate(lab, session, seq), ESTIMATOR_VERSION)


def test_inspect_shows_a_current_stored_estimate_without_estimating_the_message_again(lab: Lab):
    session = lab.session(lab.agent(model=OFFLINE), HISTORY)
    stamp(lab, session, 2, 4321, ESTIMATOR_VERSION)  # not what the estimator says: only the stored value

    parts = by_id(lab.inspect(session))

    assert parts["message:2"]["tokens"] == 4321
    assert parts["message:1"]["tokens"] == true_estimate(lab, session, 1)  # stored without one: estimated


def test_an_estimate_of_another_estimator_version_is_estimated_again(lab: Lab):
    session = lab.session(lab.agent(model=OFFLINE), HISTORY)
    stamp(lab, session, 2, 4321, ESTIMATOR_VERSION - 1)

    parts = by_id(lab.inspect(session))

    assert parts["message:2"]["tokens"] == true_estimate(lab, session, 2)


def test_inspect_writes_no_estimates(lab: Lab):
    session = lab.session(lab.agent(model=OFFLINE), HISTORY)
    stamp(lab, session, 2, 4321, ESTIMATOR_VERSION - 1)

    lab.inspect(session)

    assert estimates(lab, session) == {1: (None, None), 2: (4321, ESTIMATOR_VERSION - 1), 3: (None, None)}


def test_a_run_stores_the_current_estimate_of_every_loaded_message_that_lacked_one(lab: Lab):
    session = lab.session(lab.agent(model=OFFLINE), HISTORY)
    stamp(lab, session, 2, 4321, ESTIMATOR_VERSION - 1)

    assert lab.say(session, "And the tests?").status_code == 201

    stored = estimates(lab, session)
    assert sorted(stored) == [1, 2, 3, 4, 5]
    for seq, (tokens, version) in stored.items():
        assert (tokens, version) == (true_estimate(lab, session, seq), ESTIMATOR_VERSION)


def test_a_run_leaves_the_estimates_of_the_messages_its_summary_covers_alone(lab: Lab):
    session = lab.session(lab.agent(model=OFFLINE), HISTORY)
    lab.summary(session, 2, "the user asked where the notes are")

    assert lab.say(session, "And the tests?").status_code == 201

    stored = estimates(lab, session)
    assert stored[1] == stored[2] == (None, None)  # never read: the summary stands in for them
    assert stored[3] == (true_estimate(lab, session, 3), ESTIMATOR_VERSION)
