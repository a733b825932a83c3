"""Every kind of run steps implements the one ``Steps`` protocol the turn loop, gateway and tools call."""

from __future__ import annotations

import pytest

from hango.agent.run_steps import NoSteps, Steps, StoredSteps
from hango.agent.scratch import RecordingSteps, TurnRecord
from hango.mcp.connection import Stop

KINDS = {
    "none": NoSteps,
    "stored": lambda: StoredSteps(None, None, None, lambda: False),  # type: ignore[arg-type]
    "recording": lambda: RecordingSteps(NoSteps(), TurnRecord()),
}


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_every_kind_of_steps_implements_the_steps_protocol(kind):
    assert isinstance(KINDS[kind](), Steps)


def test_a_scratch_turns_steps_watch_a_server_call_like_the_runs_they_record_for():
    steps = RecordingSteps(NoSteps(), TurnRecord())
    with steps.server_call() as stop:
        assert isinstance(stop, Stop) and not stop.stopped
