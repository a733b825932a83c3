"""Every kind of run steps implements the one ``Steps`` protocol the turn loop, gateway and tools call."""

from __future__ import annotations

import threading
import uuid

import pytest

from hango.agent.run_steps import NoSteps, Steps, StoredSteps
from hango.agent.scratch import RecordingSteps, TurnRecord

KINDS = {
    "none": NoSteps,
    "stored": lambda: StoredSteps(None, None, None, lambda: False),  # type: ignore[arg-type]
    "recording": lambda: RecordingSteps(NoSteps(), TurnRecord()),
}


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_every_kind_of_steps_implements_the_steps_protocol(kind):
    assert isinstance(KINDS[kind](), Steps)


def test_a_scratch_turns_steps_watch_a_server_call_like_the_runs_they_record_for():
    """A wait on another process inside a try's turn is ended by the run's cancel, as in the run itself."""
    ended = threading.Event()
    run = StoredSteps(None, None, uuid.uuid4(), lambda: True)  # type: ignore[arg-type]
    steps = RecordingSteps(run, TurnRecord())

    with steps.watching(ended.set, ended.is_set):
        assert ended.wait(30)
