"""``hango context show`` on an agent that defers a built-in and an MCP server, one tool of it revealed,
against a real gunicorn server: the rows, the headings and the legend as the CLI prints them."""

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

GIT_TOOLS = ["git_status", "git_diff", "git_log"]
REVEALED_AT = 1


@pytest.fixture
def session(engine: sa.Engine, acme: Tenant, live_server: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """A session of an agent deferring ``grep`` and the ``git`` server, ``git_log`` revealed at seq 1."""
    owner = uuid.UUID(acme.owner.user_id)
    with engine.begin() as conn:
        store = TenantStore(conn, uuid.UUID(acme.id))
        agent = store.agents.create(
            owner,
            name="deferring",
            model="offline/echo",
            system_prompt="Be brief.",
            tools=["read_file", "grep"],
            defer={"tools": ["tool:grep", "tool:git/*"], "auto_percent": None},
        )
        store_server(store, agent.id, "git", GIT_TOOLS)
        row = store.sessions.create(agent.id, owner, "deferring")
        store.messages.append(row.id, "user", [{"type": "text", "text": "what changed?"}])
        store.revealed_tools.reveal(row.id, [("tool:git/git_log", "git__git_log")], REVEALED_AT)
    monkeypatch.setenv("HANGO_API_URL", live_server)
    monkeypatch.setenv("HANGO_API_KEY", acme.owner.key)
    monkeypatch.setenv("COLUMNS", "80")
    return str(row.id)


def test_show_marks_deferred_tools_and_a_revealed_one_with_the_tokens_saved_per_server(hango, session: str):
    shown = hango("context", "show", "--session", session)
    answer = json.loads(hango("context", "show", "--session", session, "--json").out)

    assert shown.code == 0, shown.err
    lines = shown.out.splitlines()
    assert max(map(width_of, lines)) <= 80
    parts = {p["id"]: p for p in answer["tools"]}
    rows = {line[4:].split()[0]: line for line in lines if line.startswith(("[x] tool:", "[ ] tool:"))}
    for deferred in ("tool:grep", "tool:git/git_status", "tool:git/git_diff"):
        tokens = parts[deferred]["tokens"]
        assert rows[deferred].startswith("[ ] ") and rows[deferred].endswith(f" {tokens}  deferred"), rows
    assert rows["tool:git/git_log"].startswith("[x] ") and rows["tool:git/git_log"].endswith(
        f"  revealed #{REVEALED_AT}"
    )
    assert rows["tool:read_file"].startswith("[x] ") and rows["tool:tool_search"].startswith("[x] ")
    groups = {g["server"]: g for g in answer["tool_groups"]}
    git, built_in = groups["git"], groups[None]
    assert (git["deferred"], built_in["deferred"]) == (2, 1)
    assert f"  2 deferred ({git['deferred_tokens']} tokens saved)" in next(
        line for line in lines if line.startswith("server git  3 tools")
    )
    saved = git["deferred_tokens"] + built_in["deferred_tokens"]
    assert f"3 deferred ({saved} tokens saved): sent once tool_search reveals them" in lines
    assert any(line.startswith("deferred: not sent until tool_search reveals it") for line in lines)
