"""Fixtures of the ``hango context`` tests: a live gunicorn server, the seeded demo, and a small fixed session.

The CLI runs in-process (``main([...])``) as an HTTP client of a real gunicorn
server on the test database; nothing of the HTTP layer is mocked.
"""

from __future__ import annotations

import os
import uuid
from dataclasses import dataclass
from typing import Any

import pytest
import requests
import sqlalchemy as sa

from hango.cli import demo, main
from hango.config import load_config
from hango.store import TenantStore
from tests.conftest import TEST_RATE_LIMIT
from tests.support.clients import Tenant


@dataclass(frozen=True)
class Result:
    """One ``hango`` run: exit code, stdout, stderr."""

    code: int
    out: str
    err: str


@pytest.fixture
def hango(capsys: pytest.CaptureFixture[str]):
    """Run ``hango argv`` in-process and capture what it printed."""

    def run(*argv: str) -> Result:
        code = main(list(argv))
        out, err = capsys.readouterr()
        return Result(code, out, err)

    return run


@pytest.fixture
def demo_session(
    engine: sa.Engine, database_url: str, live_server: str, clean_db: None, monkeypatch: pytest.MonkeyPatch
) -> dict[str, Any]:
    """The seeded demo (22 messages with tool pairs); the client commands point at it as its owner."""
    config = load_config(overrides={"database_url": database_url, "default_rate_limit": TEST_RATE_LIMIT})
    seeded = demo.seed(engine, config)
    monkeypatch.setenv("HANGO_API_URL", live_server)
    monkeypatch.setenv("HANGO_API_KEY", seeded["owner_key"])
    monkeypatch.setenv("COLUMNS", "120")
    return seeded


def member_session(demo: dict[str, Any]) -> str:
    """A session of the demo agent that the member (who may not change the agent) starts."""
    created = requests.post(
        f"{os.environ['HANGO_API_URL']}/v1/sessions",
        json={"agent_id": demo["agent_id"], "title": "mine"},
        headers={"Authorization": f"Bearer {demo['member_key']}"},
        timeout=30,
    )
    assert created.status_code == 201, created.text
    return created.json()["id"]


GOLDEN_PROMPT = "You answer in one line.\nYou never guess."
GOLDEN_MEMORY = "Prefer tea.\n東京 office opens at 9."
GOLDEN_HISTORY = [
    ("user", [{"type": "text", "text": "Plan?\n\x1b[31mnow\x1b[0m"}]),
    (
        "assistant",
        [
            {"type": "text", "text": "Reading it."},
            {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "/plan.md"}},
        ],
    ),
    (
        "user",
        [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "1\t# Plan\n2\t- 東京 launch 🚀"}],
    ),
    ("assistant", [{"type": "text", "text": "The plan is the Tokyo launch."}]),
    ("user", [{"type": "text", "text": "Thanks — what is next?"}]),
]


@pytest.fixture
def fixed_session(
    engine: sa.Engine, acme: Tenant, live_server: str, monkeypatch: pytest.MonkeyPatch
) -> dict[str, str]:
    """A small session with fixed contents (a tool pair, a control character, wide characters)."""
    owner = uuid.UUID(acme.owner.user_id)
    with engine.begin() as conn:
        store = TenantStore(conn, uuid.UUID(acme.id))
        agent = store.agents.create(
            owner,
            name="golden",
            model="offline/echo",
            system_prompt=GOLDEN_PROMPT,
            tools=["read_file", "write_todos"],
            context_window=760,
        )
        store.memory_files.put(agent.id, "/memories/notes.md", GOLDEN_MEMORY)
        session = store.sessions.create(agent.id, owner, "golden")
        for role, content in GOLDEN_HISTORY:
            store.messages.append(session.id, role, content)
    monkeypatch.setenv("HANGO_API_URL", live_server)
    monkeypatch.setenv("HANGO_API_KEY", acme.owner.key)
    return {"agent_id": str(agent.id), "session_id": str(session.id)}
