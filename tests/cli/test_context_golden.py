"""A golden file per ``hango context`` command at 80 and at 120 columns, on a small fixed session.

After an intended change to the layout, regenerate them and review the diff::

    HANGO_UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/cli/test_context_golden.py -p no:cacheprovider
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
import requests

from hango.cli.context_table import width_of
from tests.support.golden import assert_golden

pytestmark = pytest.mark.server

GOLDEN = Path(__file__).parent / "golden"
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
MILLISECONDS = re.compile(r"\b\d+ ms\b")  # a step's or a call's duration
COMMANDS = {
    "show": ["show"],
    "show_top": ["show", "--sort", "tokens", "--top", "4"],
    "show_full": ["show", "--full", "message:3"],
    "try": [
        "try",
        "--exclude",
        "message:4",
        "--replace",
        "message:5=Which launch comes after Tokyo, and when?",
    ],
    "exclude": ["exclude", "message:2", "system:todo"],
    "include": ["include", "message:3"],
    "replace": ["replace", "message:1", "--text", "Plan?"],
    "suggest": ["suggest"],
    "suggest_apply": ["suggest", "--apply", "1"],
    "compact": ["compact", "--instructions", "keep the launch dates"],
}


@pytest.fixture
def prepared(hango, fixed_session):
    """The fixed session with a tool pair and a stale part excluded and the agent's prompt replaced.

    The stale part is a memory file excluded and then deleted: a part that was never in the request
    is refused (``unknown_part``).
    """
    session = fixed_session["session_id"]
    memory = f"{os.environ['HANGO_API_URL']}/v1/agents/{fixed_session['agent_id']}/memory/memories/old.md"
    auth = {"Authorization": f"Bearer {os.environ['HANGO_API_KEY']}"}
    requests.put(memory, json={"content": "Old notes."}, headers=auth, timeout=10).raise_for_status()
    for argv in (
        ["exclude", "message:2", "system:memory:/memories/old.md"],
        ["replace", "system:agent", "--text", "Answer in French."],
    ):
        assert hango("context", argv[0], "--session", session, *argv[1:]).code == 0
    requests.delete(memory, headers=auth, timeout=10).raise_for_status()
    return session


@pytest.mark.parametrize("columns", [80, 120])
@pytest.mark.parametrize("name", list(COMMANDS))
def test_golden_output_per_command_at_80_and_120_columns(hango, prepared, monkeypatch, name, columns):
    monkeypatch.setenv("COLUMNS", str(columns))
    argv = COMMANDS[name]
    result = hango("context", argv[0], "--session", prepared, *argv[1:])
    assert result.code == 0
    if name != "show_full":  # a part's whole content is printed as it is
        assert max(map(width_of, result.out.splitlines())) <= columns
    said = result.out + (
        f"--- stderr\n{result.err}" if result.err else ""
    )  # an agent change states its scope
    text = MILLISECONDS.sub("<n> ms", UUID.sub("<uuid>", said))  # the only things that vary
    assert_golden(GOLDEN / f"context_{name}_{columns}.txt", text)
