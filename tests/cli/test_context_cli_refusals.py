"""What the server refuses, the CLI says in the server's words (exit 1), and a refused command saves nothing.

Against a real gunicorn server on the test database with the seeded demo session.
"""

from __future__ import annotations

import os
from typing import Any

import pytest
import requests

from tests.cli.conftest import member_session

pytestmark = pytest.mark.server

UNKNOWN_TOOL = "hango: these parts are not in the session's next request: tool:nope (422 unknown_part); parts: tool:nope\n"


def stored(demo: dict[str, Any], session: str, key: str = "owner_key") -> dict[str, list[str]]:
    """The parts of both routes' stored override sets, read straight from the API."""
    auth = {"Authorization": f"Bearer {demo[key]}"}
    base = os.environ["HANGO_API_URL"]
    paths = {
        "agent": f"/v1/agents/{demo['agent_id']}/context-overrides",
        "session": f"/v1/sessions/{session}/context-overrides",
    }
    found = {}
    for route, path in paths.items():
        response = requests.get(f"{base}{path}", headers=auth, timeout=10)
        response.raise_for_status()
        found[route] = [o["part"] for o in response.json()["overrides"]]
    return found


UNKNOWN = [
    (["exclude", "tool:nope"], UNKNOWN_TOOL),
    (["exclude", "system:todo", "message:2", "tool:nope"], UNKNOWN_TOOL),
    (
        ["exclude", "message:99"],
        "hango: these parts are not in the session's next request: message:99 (422 unknown_part); "
        "parts: message:99\n",
    ),
    (
        ["replace", "system:nope", "--text", "Be terse."],
        "hango: these parts are not in the session's next request: system:nope (422 unknown_part); "
        "parts: system:nope\n",
    ),
    (
        ["include", "message:6", "tool:nope"],
        "hango: tool:nope is not part of this session's next request (404 not_found)\n",
    ),
    (["try", "--exclude", "tool:nope"], UNKNOWN_TOOL),
    (["try", "--exclude", "message:2", "--include", "tool:nope"], UNKNOWN_TOOL),
    (
        ["try", "--exclude", "tool:nope!"],
        "hango: 'tool:nope!' is not a part id (422 malformed_part); parts: tool:nope!\n",
    ),
    (
        ["show", "--full", "message:99"],
        "hango: message:99 is not part of this session's next request (404 not_found)\n",
    ),
]


@pytest.mark.parametrize(("argv", "err"), UNKNOWN, ids=[" ".join(argv) for argv, _ in UNKNOWN])
def test_an_unknown_part_exits_1_with_the_servers_message(hango, demo_session, argv, err):
    session = demo_session["session_id"]
    assert hango("context", "exclude", "--session", session, "message:6").code == 0

    result = hango("context", argv[0], "--session", session, *argv[1:])

    assert (result.code, result.out, result.err) == (1, "", err)
    assert stored(demo_session, session) == {"agent": [], "session": ["message:6", "message:7"]}


def test_a_command_with_an_unknown_part_saves_nothing_on_either_route(hango, demo_session):
    session = demo_session["session_id"]

    result = hango(
        "context", "exclude", "--session", session, "system:todo", "tool:grep", "message:2", "tool:nope"
    )

    assert (result.code, result.err) == (1, UNKNOWN_TOOL)
    assert stored(demo_session, session) == {"agent": [], "session": []}


def test_a_refused_half_saves_neither_route_in_the_one_save(hango, demo_session, monkeypatch):
    """A member may change their session's messages but not the agent: a command that does both saves nothing."""
    session = member_session(demo_session)
    monkeypatch.setenv("HANGO_API_KEY", demo_session["member_key"])
    for text in ("Hello.", "Plan the week."):  # offline/echo answers: messages 1-4
        assert hango("chat", "--session", session, text).code == 0

    result = hango("context", "exclude", "--session", session, "system:todo", "message:1", "message:2")

    assert (result.code, result.out) == (1, "")
    assert f"you may not change agent {demo_session['agent_id']}" in result.err
    assert "nothing was saved for the agent or the session" in result.err
    assert stored(demo_session, session, "member_key") == {"agent": [], "session": []}


def test_a_member_who_may_not_change_the_agent_is_told_so(hango, demo_session, monkeypatch):
    session = member_session(demo_session)
    monkeypatch.setenv("HANGO_API_KEY", demo_session["member_key"])
    result = hango("context", "exclude", "--session", session, "system:todo")
    assert (result.code, result.out) == (1, "")
    assert f"you may not change agent {demo_session['agent_id']}" in result.err
    assert "only by its owner or a tenant admin" in result.err and "not found" not in result.err
