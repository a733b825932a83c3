"""A run's handles (its id, steps, deadline, compactor) are given when its state is made, never set later."""

from __future__ import annotations

import dataclasses
import uuid

import pytest

from hango.agent.compactor import StoredCompactor
from hango.agent.run_steps import NoSteps, StoredSteps
from hango.agent.state import NO_HANDLES, AgentConfig, Caller, RunHandles, RunState

AGENT = AgentConfig(uuid.uuid4(), uuid.uuid4(), "a", "offline/echo", "", (), {}, 1000)


def made(handles: RunHandles = NO_HANDLES) -> RunState:
    return RunState(uuid.uuid4(), uuid.uuid4(), AGENT, Caller(None, None), handles=handles)


def test_run_handles_are_given_when_the_state_is_made():
    steps = StoredSteps(None, None, None, lambda: False)  # type: ignore[arg-type]
    compactor = StoredCompactor(None)  # type: ignore[arg-type]
    run_id = uuid.uuid4()
    state = made(RunHandles(run_id, steps, 12.5, compactor))
    assert (state.run_id, state.steps, state.deadline, state.compactor) == (run_id, steps, 12.5, compactor)


@pytest.mark.parametrize("handle", ["run_id", "steps", "deadline", "compactor"])
def test_a_run_handle_cannot_be_set_on_a_state_after_it_is_made(handle):
    state = made()
    with pytest.raises(AttributeError):
        setattr(state, handle, None)
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(state.handles, handle, None)


def test_a_state_made_without_handles_records_nothing_and_has_no_deadline():
    state = made()
    assert isinstance(state.steps, NoSteps)
    assert (state.run_id, state.deadline, state.compactor) == (None, None, None)
    assert state.time_left(7.0) == 7.0
