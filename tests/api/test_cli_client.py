"""The client commands (``hango agents|sessions|messages``) against a real gunicorn server."""

from __future__ import annotations

import json
import uuid

import pytest

from hango.cli import main
from tests.support.net import free_port
from tests.support.world import World

pytestmark = pytest.mark.server


@pytest.fixture
def as_member(live_server: str, acme, monkeypatch):
    """Point the client commands at the live server with the member's key."""
    monkeypatch.setenv("HANGO_API_URL", live_server)
    monkeypatch.setenv("HANGO_API_KEY", acme.member.key)


def hango(capsys, *argv: str) -> tuple[int, str, str]:
    """Run ``hango argv`` in-process: exit code, stdout, stderr."""
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_agents_create_list_and_show(as_member, capsys):
    code, out, err = hango(capsys, "agents", "create", "--name", "cli agent", "--tool", "grep", "--json")
    assert (code, err) == (0, "")
    agent = json.loads(out)
    assert (agent["name"], agent["tools"]) == ("cli agent", ["grep"])

    code, out, _ = hango(capsys, "agents", "list")
    header, row = out.splitlines()
    assert header.split() == ["ID", "NAME", "MODEL", "TOOLS", "CREATED"]
    assert row.startswith(agent["id"]) and "cli agent" in row and "offline/echo" in row
    assert header.index("NAME") == row.index("cli agent")

    code, out, _ = hango(capsys, "agents", "show", agent["id"])
    assert code == 0
    assert "name            cli agent" in out.splitlines()
    assert json.loads(hango(capsys, "agents", "list", "--json")[1])["items"][0]["id"] == agent["id"]


def test_sessions_and_messages(as_member, world: World, capsys):
    code, out, _ = hango(
        capsys, "sessions", "create", "--agent", world.agent, "--title", "from the cli", "--json"
    )
    assert code == 0
    session = json.loads(out)

    code, out, _ = hango(capsys, "sessions", "list", "--agent", world.agent)
    ids = [line.split()[0] for line in out.splitlines()[1:]]
    assert sorted(ids) == sorted([world.session, session["id"]])
    assert "from the cli" in hango(capsys, "sessions", "show", session["id"])[1]

    code, out, _ = hango(capsys, "messages", "--session", world.session)
    assert (code, out.splitlines()) == (0, ["#1 user", "  hello", "#2 assistant", "  hi"])
    code, out, _ = hango(capsys, "messages", "--session", world.session, "--limit", "1", "--json")
    assert json.loads(out)["next_cursor"] == "1"
    assert hango(capsys, "messages", "--session", world.session, "--limit", "1")[1].endswith(
        "(more: --after-seq 1)\n"
    )


def test_a_404_exits_1_with_the_servers_message(as_member, capsys):
    code, out, err = hango(capsys, "agents", "show", str(uuid.uuid4()))
    assert (code, out) == (1, "")
    assert err.startswith("hango: not found (404 not_found)")
    assert "Traceback" not in err


def test_a_refused_request_reports_the_error_code(as_member, world: World, capsys):
    code, _, err = hango(capsys, "messages", "--session", world.session, "--limit", "0")
    assert code == 1
    assert "(422 invalid)" in err
    code, _, err = hango(capsys, "sessions", "create", "--agent", str(uuid.uuid4()))
    assert (code, "(422 unknown_agent)" in err) == (1, True)


def test_a_bad_key_exits_1(live_server, acme, monkeypatch, capsys):
    monkeypatch.setenv("HANGO_API_URL", live_server)
    monkeypatch.setenv("HANGO_API_KEY", "hgo_000000000000_nope")
    code, _, err = hango(capsys, "agents", "list")
    assert code == 1
    assert "(401 invalid_api_key)" in err


def test_an_unreachable_server_exits_3(monkeypatch, capsys):
    monkeypatch.setenv("HANGO_API_URL", f"http://127.0.0.1:{free_port()}")
    monkeypatch.setenv("HANGO_API_KEY", "hgo_000000000000_nope")
    code, out, err = hango(capsys, "sessions", "list")
    assert (code, out) == (3, "")
    assert "cannot reach the hango server" in err


def test_usage_errors_exit_2(monkeypatch, capsys):
    monkeypatch.delenv("HANGO_API_KEY", raising=False)
    assert hango(capsys, "agents", "list")[0] == 2
    with pytest.raises(SystemExit) as usage:
        main(["agents", "create"])
    assert usage.value.code == 2
    assert "--name" in capsys.readouterr().err
