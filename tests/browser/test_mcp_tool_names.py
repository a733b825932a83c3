"""An MCP tool under one name shape on the panels, ``<server>/<tool>``: the Context panel's tool filter
and rows, and the Calls tab, whose parts table has a Server column beside each MCP tool part.

The server is stored with its tool list and attached through the store; the live server has no catalog
that could start it, and no call names one of its tools, so nothing contacts it.
"""

from __future__ import annotations

import uuid

import pytest
import sqlalchemy as sa
from playwright.sync_api import expect

from hango.store import TenantStore
from tests.browser.admin import Admin, Api, Demo
from tests.support.mcp import store_server

pytestmark = pytest.mark.browser

GIT_TOOLS = ["git_status", "git_log"]
CALLED = [
    ("assistant", [{"type": "tool_use", "id": "toolu_git", "name": "git__git_status", "input": {}}]),
    ("user", [{"type": "tool_result", "tool_use_id": "toolu_git", "content": "clean"}]),
]


@pytest.fixture
def git(engine: sa.Engine, demo: Demo) -> None:
    """The ``git`` server attached to the demo agent, and one call of its tool in the demo session."""
    with engine.begin() as conn:
        store = TenantStore(conn, uuid.UUID(demo.tenant_id))
        store_server(store, uuid.UUID(demo.agent_id), "git", GIT_TOOLS)
        for role, content in CALLED:
            store.messages.append(uuid.UUID(demo.session_id), role, content)


def test_the_context_panels_tool_filter_names_an_mcp_tool_as_its_rows_do(
    admin: Admin, api: Api, demo: Demo, git
):
    inspect = api.inspect(demo.session_id)
    called = [p["id"] for p in inspect["messages"] if "git/git_status" in p["tools"]]
    assert len(called) == 2, inspect["messages"][-3:]  # the call and its answer

    admin.sign_in(demo.owner_key)
    admin.open_context(demo.session_id)
    page = admin.page
    options = page.get_by_test_id("filter-tool").locator("option").all_inner_texts()
    assert {"git/git_status", "git/git_log"} <= set(options), options
    assert not [option for option in options if "__" in option], options

    page.get_by_test_id("filter-tool").select_option("git/git_status")

    expect(page.locator("tr[data-part]")).to_have_count(3)
    shown = [row.get_attribute("data-part") for row in page.locator("tr[data-part]").all()]
    assert shown == ["tool:git/git_status", *called]
    expect(admin.row(called[0])).to_contain_text("tool_use git/git_status")


def test_the_calls_tab_shows_the_server_beside_each_mcp_tool_part(admin: Admin, api: Api, demo: Demo, git):
    api.post_and_wait(f"/v1/sessions/{demo.session_id}/messages", 201, json={"content": "and now?"})
    call = api.get(f"/v1/sessions/{demo.session_id}/calls", limit=1)["items"][0]
    parts = {p["id"]: p for p in api.get(f"/v1/sessions/{demo.session_id}/calls/{call['id']}")["parts"]}
    assert (parts["tool:git/git_status"]["label"], parts["tool:git/git_status"]["server"]) == (
        "git/git_status",
        "git",
    )

    admin.sign_in(demo.owner_key)
    admin.page.goto(f"/admin/sessions/{demo.session_id}/calls")
    admin.page.get_by_test_id("call").first.get_by_role("button").click()

    detail = admin.page.get_by_test_id("call-detail")
    expect(detail.locator("thead th")).to_contain_text(["Part", "Server"])
    git_row = detail.locator('[data-testid="sent-part"][data-part="tool:git/git_status"]')
    expect(git_row.get_by_test_id("part-server")).to_have_text("git")
    expect(git_row).to_contain_text("git/git_status")
    expect(git_row).not_to_contain_text("git__git_status")
    built_in = detail.locator('[data-testid="sent-part"][data-part="tool:read_file"]')
    expect(built_in.get_by_test_id("part-server")).to_have_text("")
