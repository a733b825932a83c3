"""``GET /v1/sessions/{id}/context/diff``: the first differing part and its cause, one test per cause."""

from __future__ import annotations

import uuid

import sqlalchemy as sa

from hango.db.schema import agents
from tests.inspector.conftest import assistant, excluding, override_set, user
from tests.ledger.helpers import diff, oldest_first

MEMORY = "/memories/AGENTS.md"


def session_after_a_run(lab, **agent_fields) -> tuple[str, str]:
    """An agent with a memory file, and a session of it with one finished run (one call)."""
    agent = lab.agent(**agent_fields)
    lab.memory(agent, MEMORY, "version 1")
    session = lab.session(agent, [user("hello"), assistant("hi")])
    lab.fake.reply("fine")
    assert lab.say(session, "how are you?").status_code == 201
    return agent, session


def first(body: dict) -> tuple[str, str]:
    return body["first_difference"]["part"], body["first_difference"]["cause"]


def test_the_diff_names_a_saved_override_as_the_cause(lab) -> None:
    agent, session = session_after_a_run(lab)
    assert lab.put_agent(agent, excluding("system:filesystem")).status_code == 200

    body = diff(lab, session)

    assert first(body) == ("system:filesystem", "override_saved")
    assert body["removed"] == ["system:filesystem"]


def test_the_diff_names_an_edited_memory_file_as_the_cause(lab) -> None:
    agent, session = session_after_a_run(lab)
    lab.memory(agent, MEMORY, "version 2")

    body = diff(lab, session, to="next")

    assert first(body) == (f"system:memory:{MEMORY}", "memory_file_edited")
    assert body["changed"] == [f"system:memory:{MEMORY}"]


def test_the_diff_names_a_changed_tool_list_as_the_cause(lab) -> None:
    agent, session = session_after_a_run(lab, tools=["ls", "grep", "read_file"])
    assert lab.who.patch(f"/v1/agents/{agent}", json={"tools": ["ls", "read_file"]}).status_code == 200

    body = diff(lab, session)

    assert first(body) == ("tool:grep", "tool_list_changed")
    assert body["removed"] == ["tool:grep"]


def test_the_diff_names_a_new_summary_as_the_cause(lab) -> None:
    _, session = session_after_a_run(lab)
    lab.summary(session, 2, "they greeted each other")

    body = diff(lab, session)

    assert first(body) == ("message:1", "new_summary")
    assert (body["added"], body["removed"]) == (["summary", "message:4"], ["message:1", "message:2"])


def test_the_diff_names_a_replaced_part_as_the_cause(lab) -> None:
    _, session = session_after_a_run(lab)
    assert lab.put_session(session, override_set(replace={"message:1": "good day"})).status_code == 200

    body = diff(lab, session)

    assert first(body) == ("message:1", "replaced_part")
    assert body["changed"] == ["message:1"]


def test_the_diff_names_new_messages_as_the_cause(lab) -> None:
    _, session = session_after_a_run(lab)
    lab.fake.reply("still fine")
    assert lab.say(session, "and now?").status_code == 201
    earlier, later = (c["id"] for c in oldest_first(lab, session))

    body = diff(lab, session, **{"from": earlier, "to": later})

    assert first(body) == ("message:4", "new_messages")
    assert body["added"] == ["message:4", "message:5"]
    assert body["removed"] == body["changed"] == []
    assert body["common_prefix"]["parts"] > 0 and body["common_prefix"]["tokens"] > 0
    assert (body["from"], body["to"]) == (earlier, later)


def test_the_next_call_unchanged_since_the_last_shares_its_whole_prefix(lab) -> None:
    _, session = session_after_a_run(lab)

    body = diff(lab, session)

    # The next call (as inspect assembles it) is the last one plus its answer.
    assert first(body) == ("message:4", "new_messages")
    assert body["removed"] == body["changed"] == []
    assert body["to"] == "next"


def test_a_diff_needs_calls_that_exist_and_well_formed_ends(lab) -> None:
    empty = lab.session(lab.agent())
    assert lab.who.get(f"/v1/sessions/{empty}/context/diff").status_code == 404
    _, session = session_after_a_run(lab)
    path = f"/v1/sessions/{session}/context/diff"
    assert lab.who.get(path, query_string={"from": str(uuid.uuid4())}).status_code == 404
    assert lab.who.get(path, query_string={"to": str(uuid.uuid4())}).status_code == 404
    bad = lab.who.get(path, query_string={"from": "yesterday"})
    assert bad.status_code == 422
    assert lab.who.get(path, query_string={"to": "last"}).status_code == 422


def test_a_diffs_cause_is_what_happened_a_try_that_left_out_a_memory_file_edited_none(lab) -> None:
    _, session = session_after_a_run(lab)
    lab.fake.reply("without the memory file")
    assert lab.try_(session, {"exclude": [f"system:memory:{MEMORY}"]}).status_code == 200
    run_call, try_call = (c["id"] for c in oldest_first(lab, session))

    body = diff(lab, session, **{"from": run_call, "to": try_call})

    assert body["first_difference"]["part"] in (f"system:memory:{MEMORY}", "system:memory")
    assert body["first_difference"]["cause"] == "try_call"  # no memory file was edited
    assert "edited" not in body["first_difference"]["words"]


def test_a_diffs_cause_is_unknown_when_nothing_recorded_explains_it(lab) -> None:
    agent, session = session_after_a_run(lab)
    with lab.engine.begin() as conn:  # the prompt changed under hango, with no audited edit
        conn.execute(sa.update(agents).where(agents.c.id == agent).values(system_prompt="Be terse."))

    body = diff(lab, session)

    assert first(body) == ("system:agent", "unknown")
    assert body["first_difference"]["words"] == "nothing recorded explains it at system:agent"
