"""``hango chat`` against a real gunicorn server: the run's reply is printed, the history grows."""

from __future__ import annotations

import json

import pytest

from hango.cli import main, progress
from hango.cli.client import Client
from tests.support.world import World

pytestmark = pytest.mark.server


def test_chat_prints_the_reply_and_stores_the_turn(live_server, acme, world: World, monkeypatch, capsys):
    monkeypatch.setenv("HANGO_API_URL", live_server)
    monkeypatch.setenv("HANGO_API_KEY", acme.member.key)
    assert main(["chat", "--session", world.session, "what do you see?"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "#4 assistant"
    assert "not a language model" in out[1] and 'Last user text: "what do you see?"' in out[1]
    assert out[-1].endswith(": completed, end_turn)")
    assert main(["messages", "--session", world.session, "--json"]) == 0
    history = json.loads(capsys.readouterr().out)["items"]
    assert [m["seq"] for m in history] == [1, 2, 3, 4]


def test_chat_on_another_members_session_exits_1(live_server, acme, world: World, monkeypatch, capsys):
    monkeypatch.setenv("HANGO_API_URL", live_server)
    monkeypatch.setenv("HANGO_API_KEY", acme.member2.key)
    assert main(["chat", "--session", world.session, "hello"]) == 1
    assert "not_found" in capsys.readouterr().err


def test_chat_prints_the_runs_steps_on_stderr_as_plain_lines_when_piped(
    live_server, acme, world: World, monkeypatch, capsys
):
    monkeypatch.setenv("HANGO_API_URL", live_server)
    monkeypatch.setenv("HANGO_API_KEY", acme.member.key)

    assert main(["chat", "--session", world.session, "and now?"]) == 0

    steps = capsys.readouterr().err.splitlines()
    assert steps[0] == "run started"
    assert "stored #3 user" in steps
    assert any(line.startswith("model call (run) offline/echo") for line in steps)
    assert any(line.startswith("model answered in ") and " in, " in line for line in steps)
    assert steps[-1] == "run completed"


def test_runs_show_events_and_cancel(live_server, acme, world: World, monkeypatch, capsys):
    monkeypatch.setenv("HANGO_API_URL", live_server)
    monkeypatch.setenv("HANGO_API_KEY", acme.member.key)
    assert main(["chat", "--json", "--session", world.session, "hello"]) == 0
    run_id = json.loads(capsys.readouterr().out)["run"]["id"]

    assert main(["runs", "show", run_id]) == 0
    assert "completed" in capsys.readouterr().out
    assert main(["runs", "events", run_id]) == 0
    listed = capsys.readouterr().out.splitlines()
    assert listed[0] == "#1 run started" and listed[-1].startswith("(run completed; next: --after ")
    assert main(["runs", "cancel", run_id]) == 1
    assert "run_finished" in capsys.readouterr().err
    assert main(["runs", "cancel", world.queued_run]) == 0
    assert "cancelled" in capsys.readouterr().out


def test_ctrl_c_while_following_a_run_cancels_it(live_server, acme, world: World, monkeypatch, capsys):
    interrupts = iter([KeyboardInterrupt()])

    def sleep(_seconds: float) -> None:  # the first wait between polls is where Ctrl-C lands
        for interrupt in interrupts:
            raise interrupt

    monkeypatch.setattr(progress.time, "sleep", sleep)
    with Client(live_server, acme.member.key) as api:
        run = progress.follow(api, {"id": world.queued_run})

    assert run["status"] == "cancelled"
    assert "cancelling the run" in capsys.readouterr().err
