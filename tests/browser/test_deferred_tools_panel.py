"""The Context panel of an agent that defers tools: a deferred tool tagged "deferred" with its tokens as
saved and a disabled box (tool_search reveals it, no override sends it), a revealed tool tagged with the
seq that revealed it, and each server's line and the Tools heading with the deferred count and savings.

The deferral and the reveal are stored through the store (a reveal is otherwise a run's doing); the
server is stored with its tool list, so everything shown comes from the inspect answer.
"""

from __future__ import annotations

import re
import uuid

import pytest
import sqlalchemy as sa
from playwright.sync_api import expect

from hango.store import TenantStore
from tests.browser.admin import Admin, Api, Demo
from tests.support.mcp import store_server

pytestmark = pytest.mark.browser

GIT_TOOLS = ["git_status", "git_diff", "git_log"]
REVEALED_AT = 3


@pytest.fixture
def deferring(engine: sa.Engine, demo: Demo) -> None:
    """The demo agent defers ``grep`` and the ``git`` server; the session has ``git_log`` revealed."""
    agent = uuid.UUID(demo.agent_id)
    with engine.begin() as conn:
        store = TenantStore(conn, uuid.UUID(demo.tenant_id))
        store_server(store, agent, "git", GIT_TOOLS)
        store.agents.update(agent, defer={"tools": ["tool:grep", "tool:git/*"], "auto_percent": None})
        store.revealed_tools.reveal(
            uuid.UUID(demo.session_id), [("tool:git/git_log", "git__git_log")], REVEALED_AT
        )


def test_deferred_tools_show_a_deferred_tag_with_tokens_saved_and_a_disabled_box_and_a_revealed_one_its_seq(
    admin: Admin, api: Api, demo: Demo, deferring
):
    admin.sign_in(demo.owner_key)
    admin.open_context(demo.session_id)
    inspect = api.inspect(demo.session_id)
    parts = {p["id"]: p for p in inspect["tools"]}
    groups = {g["server"]: g for g in inspect["tool_groups"]}

    for part in ("tool:grep", "tool:git/git_status", "tool:git/git_diff"):
        assert parts[part]["deferred"] is True, part
        expect(admin.row(part).get_by_test_id("deferred")).to_have_text(
            f"deferred · {parts[part]['tokens']:,} tokens saved"
        )
        expect(admin.box(part)).not_to_be_checked()
        expect(admin.box(part)).to_be_disabled()
        expect(admin.box(part)).to_have_attribute("title", re.compile("tool_search reveals it"))
        expect(admin.row(part)).to_have_class(re.compile(r"\boff\b"))
    revealed = admin.row("tool:git/git_log")
    expect(revealed.get_by_test_id("revealed")).to_have_text(f"revealed at #{REVEALED_AT}")
    expect(revealed.get_by_test_id("deferred")).to_be_hidden()
    expect(admin.box("tool:git/git_log")).to_be_checked()
    expect(admin.box("tool:git/git_log")).to_be_enabled()
    expect(admin.row("tool:read_file").get_by_test_id("revealed")).to_be_hidden()
    expect(admin.row("tool:read_file").get_by_test_id("deferred")).to_be_hidden()

    git = admin.page.locator('.tool-source[data-source="tool:git/*"]')
    expect(git.get_by_test_id("source-deferred")).to_have_text(
        f"2 deferred · {groups['git']['deferred_tokens']:,} tokens saved"
    )
    built_in = admin.page.locator('.tool-source[data-source="built-in"]')
    expect(built_in.get_by_test_id("source-deferred")).to_have_text(
        f"1 deferred · {groups[None]['deferred_tokens']:,} tokens saved"
    )
    saved = groups["git"]["deferred_tokens"] + groups[None]["deferred_tokens"]
    expect(admin.page.get_by_test_id("tools-deferred")).to_have_text(f"3 deferred · {saved:,} tokens saved")


def test_an_agent_that_defers_nothing_shows_no_deferred_tag(admin: Admin, demo: Demo):
    admin.sign_in(demo.owner_key)
    admin.open_context(demo.session_id)

    expect(admin.page.get_by_test_id("tools-deferred")).to_be_hidden()
    expect(admin.page.locator('[data-testid="deferred"]:visible')).to_have_count(0)
    expect(admin.page.locator('[data-testid="revealed"]:visible')).to_have_count(0)
