"""The Context panel with an MCP server attached: the server as a group of the window bar and of the
Tools card, with its subtotal, and excluded as a whole by its heading's box.

The server is stored with its tool list and attached through the store; the live server has no catalog
that could start it, so everything shown comes from the stored list.
"""

from __future__ import annotations

import uuid

import pytest
import sqlalchemy as sa
from playwright.sync_api import expect

from hango.mcp.tool_lists import list_hash
from hango.store import TenantStore
from tests.browser.admin import Admin, Api, Demo, inspect_totals
from tests.support.mcp import listed_tools, store_server

pytestmark = pytest.mark.browser

GIT = "tool:git/*"
GIT_TOOLS = ["git_status", "git_diff", "git_log", "git_commit"]


@pytest.fixture
def git(engine: sa.Engine, demo: Demo) -> None:
    with engine.begin() as conn:
        store_server(TenantStore(conn, uuid.UUID(demo.tenant_id)), uuid.UUID(demo.agent_id), "git", GIT_TOOLS)


def source(admin: Admin, part: str):
    return admin.page.locator(f'.tool-source[data-source="{part}"]')


def test_a_server_is_a_group_of_the_bar_and_of_the_tools_with_its_subtotal(
    admin: Admin, api: Api, demo: Demo, git
):
    admin.sign_in(demo.owner_key)
    admin.open_context(demo.session_id)
    inspect = api.inspect(demo.session_id)
    groups = {g["server"]: g for g in inspect["tool_groups"]}

    bar = admin.page.get_by_test_id("bar")
    segments = [s.get_attribute("data-segment") for s in bar.locator(".segment").all()]
    assert segments[:3] == ["system", "tools", "server:git"]
    legend = admin.page.locator('.legend.segments li[data-segment="server:git"]')
    expect(legend).to_contain_text("Server git")
    shown = [
        int(
            admin.page.locator(f'.legend.segments li[data-segment="{key}"] .figure')
            .inner_text()
            .split(" ")[0]
            .replace(",", "")
        )
        for key in ("tools", "server:git")
    ]
    assert sum(shown) == inspect["totals"]["tools"]["after"]

    git_source = source(admin, GIT)
    expect(git_source.locator("h3")).to_have_text("server git")
    expect(git_source.get_by_test_id("source-total")).to_have_text(
        f"4 tools · {groups['git']['tokens']:,} of {groups['git']['tokens_before']:,} tokens"
    )
    expect(git_source.locator("tr[data-part]")).to_have_count(len(GIT_TOOLS))
    expect(source(admin, "built-in").locator('tr[data-part="tool:grep"]')).to_be_visible()


def test_unchecking_a_server_leaves_out_all_its_tools_and_save_stores_its_part(
    admin: Admin, api: Api, demo: Demo, git
):
    admin.sign_in(demo.owner_key)
    admin.open_context(demo.session_id)
    git_source = source(admin, GIT)

    git_source.get_by_test_id("server-box").uncheck()
    admin.settled()

    expect(git_source.get_by_test_id("server-excluded")).to_be_visible()
    expect(git_source.locator("tr[data-part].off")).to_have_count(len(GIT_TOOLS))
    expect(git_source.get_by_test_id("excluded-by").first).to_have_text(f"left out with {GIT}")
    expect(git_source.get_by_test_id("source-total")).to_contain_text("4 tools · 0 of")
    preview = api.call(
        "POST",
        f"/v1/sessions/{demo.session_id}/context/preview",
        json={"agent": {"overrides": [{"part": GIT, "action": "exclude"}]}},
    )
    assert admin.shown_totals() == inspect_totals(preview)

    admin.save()
    stored = api.get(f"/v1/agents/{demo.agent_id}/context-overrides")["overrides"]
    assert [(o["part"], o["action"]) for o in stored] == [(GIT, "exclude")]
    assert admin.shown_totals() == inspect_totals(api.inspect(demo.session_id))
    expect(git_source.get_by_test_id("server-box")).not_to_be_checked()


def test_a_task_required_tool_is_shown_unavailable_with_its_reason_under_its_server(
    admin: Admin, api: Api, demo: Demo, engine: sa.Engine
):
    tools = listed_tools(["plain", "needs_task"])
    tools[1]["task_support"] = "required"
    with engine.begin() as conn:
        store = TenantStore(conn, uuid.UUID(demo.tenant_id))
        owner = store.agents.get(uuid.UUID(demo.agent_id)).owner_id
        server = store.mcp_servers.create(owner, "tasks", catalog="tasks", url=None, header_names=[])
        store.mcp_servers.store_tools(server.id, tools, list_hash(tools))
        store.mcp_servers.attach(uuid.UUID(demo.agent_id), server.id, None)
    admin.sign_in(demo.owner_key)
    admin.open_context(demo.session_id)

    tasks = source(admin, "tool:tasks/*")
    expect(tasks.locator("tr[data-part]")).to_have_count(1)
    unavailable = tasks.get_by_test_id("unavailable-tools").locator('li[data-tool="needs_task"]')
    expect(unavailable).to_contain_text("unavailable: task_required")
    expect(unavailable).to_contain_text("only as a task")
    assert "tool:tasks/needs_task" not in {p["id"] for p in api.inspect(demo.session_id)["tools"]}
