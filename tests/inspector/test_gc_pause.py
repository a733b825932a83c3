"""The cyclic collector is paused while an inspect or a try builds its request, and runs again afterwards."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator

import pytest

from hango import gc_pause
from tests.inspector.conftest import OFFLINE, Lab, assistant, user


@pytest.fixture
def collecting() -> Iterator[None]:
    """The collector enabled at the start, and as it was at the end (whatever the test did)."""
    was = gc.isenabled()
    gc.enable()
    yield
    if was:
        gc.enable()
    else:
        gc.disable()


def test_the_collector_is_paused_inside_and_runs_again_after(collecting: None) -> None:
    with gc_pause.paused():
        assert not gc.isenabled()
    assert gc.isenabled()


def test_nested_pauses_keep_it_paused_until_the_last_one_ends(collecting: None) -> None:
    with gc_pause.paused():
        with gc_pause.paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()


def test_a_pause_in_another_thread_ending_first_does_not_resume_it(collecting: None) -> None:
    inside, release = threading.Event(), threading.Event()

    def other() -> None:
        with gc_pause.paused():
            inside.set()
            release.wait(60)

    thread = threading.Thread(target=other)
    with gc_pause.paused():
        thread.start()
        assert inside.wait(60)
        release.set()
        thread.join(60)
        assert not gc.isenabled()  # the other thread's pause ended, this one holds
    assert gc.isenabled()


def test_a_collector_disabled_before_stays_disabled(collecting: None) -> None:
    gc.disable()
    with gc_pause.paused():
        pass
    assert not gc.isenabled()


def test_an_inspect_leaves_the_collector_running(lab: Lab, collecting: None) -> None:
    session = lab.session(lab.agent(model=OFFLINE), [user("hello"), assistant("hi")])

    assert [p["id"] for p in lab.inspect(session)["messages"]] == ["message:1", "message:2"]
    assert gc.isenabled()


def test_a_try_is_sent_with_the_collector_paused_and_leaves_it_running(
    lab: Lab, collecting: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = lab.session(lab.agent(), [user("hello")])
    during: list[bool] = []
    count = lab.fake.counter  # runs in the fake provider's thread of this process, as the call arrives
    monkeypatch.setattr(lab.fake, "counter", lambda body: (during.append(gc.isenabled()), count(body))[1])

    assert lab.try_(session).status_code == 200

    assert during == [False]  # the try's state (the whole history) is not walked while it is built and sent
    assert gc.isenabled()
