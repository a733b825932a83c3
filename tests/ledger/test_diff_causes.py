"""A diff's cause is what happened: random sequences of recorded changes between two calls, each named.

Between a run's call and the next call, a random sequence of changes is made through the
API (or the stores, where a run's tool would make it); the diff's first difference is the
part that comes first in the earlier call among those the changes touched, and its cause is
the change that touched it, however many others were recorded before or after.
"""

from __future__ import annotations

from collections.abc import Callable

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.inspector.conftest import Lab, assistant, excluding, override_set, user
from tests.ledger.helpers import diff

MEMORY = "/memories/AGENTS.md"
TOOLS = ["ls", "grep", "read_file"]


def edit_agent(**fields) -> Callable[[Lab, str, str], None]:
    def change(lab: Lab, agent: str, _: str) -> None:
        assert lab.who.patch(f"/v1/agents/{agent}", json=fields).status_code == 200

    return change


def create_skill(lab: Lab, agent: str, _: str) -> None:
    body = {"name": "watering", "description": "water the plants", "body": "Water them.", "allowed_tools": []}
    assert lab.who.post(f"/v1/agents/{agent}/skills", json=body).status_code == 201


def exclude_filesystem(lab: Lab, agent: str, _: str) -> None:
    assert lab.put_agent(agent, excluding("system:filesystem")).status_code == 200


def edit_memory(lab: Lab, agent: str, _: str) -> None:
    lab.memory(agent, MEMORY, "version 2")  # as a run's write_file on /memories/ does


def compact(lab: Lab, _: str, session: str) -> None:
    lab.summary(session, 2, "they greeted each other")


def replace_question(lab: Lab, _: str, session: str) -> None:
    assert lab.put_session(session, override_set(replace={"message:3": "how do you do?"})).status_code == 200


# Each change, the parts where it may first show (in the order the earlier call sends them), its cause.
CHANGES: dict[str, tuple[Callable[[Lab, str, str], None], tuple[str, ...], str]] = {
    "tools": (edit_agent(tools=["ls", "read_file"]), ("tool:grep",), "tool_list_changed"),
    "prompt": (edit_agent(system_prompt="Be terse."), ("system:agent",), "prompt_edited"),
    "override": (exclude_filesystem, ("system:filesystem",), "override_saved"),
    "skill": (create_skill, ("system:skills",), "skill_edited"),
    "memory": (edit_memory, ("system:memory", f"system:memory:{MEMORY}"), "memory_file_edited"),
    "compaction": (compact, ("message:1",), "new_summary"),
    "replacement": (replace_question, ("message:3",), "replaced_part"),
}
ORDER = list(CHANGES)  # the order of the parts they touch in a call: tools, system blocks, messages


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.sampled_from(ORDER), min_size=1, max_size=len(ORDER), unique=True))
def test_a_diffs_cause_is_what_happened_for_any_sequence_of_recorded_changes(lab: Lab, changes) -> None:
    agent = lab.agent(tools=TOOLS)
    lab.memory(agent, MEMORY, "version 1")
    session = lab.session(agent, [user("hello"), assistant("hi")])
    lab.fake.reply("fine")
    assert lab.say(session, "how are you?").status_code == 201
    for name in changes:
        CHANGES[name][0](lab, agent, session)

    first = diff(lab, session)["first_difference"]

    _, parts, cause = CHANGES[min(changes, key=ORDER.index)]
    assert first["part"] in parts
    assert first["cause"] == cause
