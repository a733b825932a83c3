"""``hango context show`` with MCP servers attached: the tools by server within 80 columns, a server
excluded as a whole by its part, against a real gunicorn server.

The servers are stored with their tool lists and attached through the store, and the gunicorn server
has no catalog that could start them: every figure comes from the stored lists.
"""

from __future__ import annotations

import json
import uuid

import pytest
import sqlalchemy as sa

from hango.cli.context_table import width_of
from hango.store import TenantStore
from tests.support.clients import Tenant
from tests.support.mcp import store_server

pytestmark = pytest.mark.server

GIT_TOOLS = [f"git_{verb}" for verb in ("status", "diff", "commit", "add", "reset", "log", "create_branch")]
TIME_TOOLS = ["get_current_time", "convert_time"]


@pytest.fixture
def session(engine: sa.Engine, acme: Tenant, live_server: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """A session of an agent with ``read_file`` built in and the ``git`` and ``time`` servers attached."""
    owner = uuid.UUID(acme.owner.user_id)
    with engine.begin() as conn:
        store = TenantStore(conn, uuid.UUID(acme.id))
        agent = store.agents.create(
            owner, name="servers", model="offline/echo", system_prompt="Be brief.", tools=["read_file"]
        )
        store_server(store, agent.id, "git", GIT_TOOLS)
        store_server(store, agent.id, "time", TIME_TOOLS)
        row = store.sessions.create(agent.id, owner, "servers")
        store.messages.append(row.id, "user", [{"type": "text", "text": "what changed?"}])
    monkeypatch.setenv("HANGO_API_URL", live_server)
    monkeypatch.setenv("HANGO_API_KEY", acme.owner.key)
    monkeypatch.setenv("COLUMNS", "80")
    return str(row.id)


def section(out: str, heading: str) -> list[str]:
    """The lines after the line starting with ``heading``, up to the next heading or blank line."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(heading))
    rest = []
    for line in lines[start + 1 :]:
        if not line.startswith(("[", "…")):
            break
        rest.append(line)
    return rest


def test_show_groups_the_tools_by_server_with_a_subtotal_each_within_80_columns(hango, session: str):
    shown = hango("context", "show", "--session", session)

    assert shown.code == 0, shown.err
    assert max(map(width_of, shown.out.splitlines())) <= 80
    inspected = hango("context", "show", "--session", session, "--json")
    groups = {g["server"]: g for g in json.loads(inspected.out)["tool_groups"]}
    git = groups["git"]
    assert f"server git  7 tools  {git['tokens_before']} → {git['tokens']} tokens" in shown.out.splitlines()
    assert [line.split()[1] for line in section(shown.out, "built-in")] == ["tool:read_file"]
    assert [line.split()[1] for line in section(shown.out, "server time")] == [
        f"tool:time/{name}" for name in TIME_TOOLS
    ]
    git_rows = section(shown.out, "server git")
    assert len(git_rows) == 7 and all(row.startswith("[x] tool:git/git_") for row in git_rows)


def test_a_server_is_excluded_as_a_whole_by_its_part_and_shown_so(hango, session: str):
    excluded = hango("context", "exclude", "--session", session, "tool:git/*")
    assert excluded.code == 0, excluded.err

    shown = hango("context", "show", "--session", session)

    assert max(map(width_of, shown.out.splitlines())) <= 80
    heading = next(line for line in shown.out.splitlines() if line.startswith("server git"))
    assert heading.endswith("→ 0 tokens  excluded as tool:git/*")
    git_rows = section(shown.out, "server git")
    assert git_rows and all(row.startswith("[ ] tool:git/") for row in git_rows)
    assert all(row.endswith("left-out=tool:git/*") for row in git_rows)
    assert all(row.startswith("[x]") for row in section(shown.out, "server time"))

    included = hango("context", "include", "--session", session, "tool:git/*")
    assert included.code == 0, included.err
    assert all(
        row.startswith("[x]")
        for row in section(hango("context", "show", "--session", session).out, "server git")
    )
