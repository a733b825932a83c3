"""Content is text, never HTML; members reach only their own sessions and read-only agent parts."""

from __future__ import annotations

import uuid

import pytest
import sqlalchemy as sa
from playwright.sync_api import expect

from hango.cli.admin import create_principal
from hango.cli.demo import DEMO_TENANT
from tests.browser.admin import Admin, Api, Demo
from tests.conftest import TEST_RATE_LIMIT

pytestmark = pytest.mark.browser

IMG = '<img src=x onerror="window.__pwned=1;alert(1)">'
SCRIPT = "<script>window.__pwned=2;alert(2)</script>"
PAYLOAD = f"{IMG} then {SCRIPT}"
MEMORY_PATH = "/memories/evil.md"


def _assert_inert(admin: Admin, dialogs: list[str]) -> None:
    page = admin.page
    assert page.evaluate("window.__pwned") is None
    assert dialogs == []
    assert page.locator('img[src="x"]').count() == 0
    assert page.locator("body script:not([src])").count() == 0


def test_markup_in_messages_and_memory_is_shown_as_text_and_never_runs(admin: Admin, api: Api, demo: Demo):
    api.post_and_wait(f"/v1/sessions/{demo.session_id}/messages", 201, json={"content": PAYLOAD})
    api.call("PUT", f"/v1/agents/{demo.agent_id}/memory{MEMORY_PATH}", json={"content": PAYLOAD})
    dialogs: list[str] = []
    admin.page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    admin.sign_in(demo.owner_key)
    page = admin.page

    page.goto(f"/admin/sessions/{demo.session_id}")
    expect(page.locator(".message", has_text=PAYLOAD).first).to_be_visible()
    _assert_inert(admin, dialogs)

    admin.open_context(demo.session_id)
    memory_part = f"system:memory:{MEMORY_PATH}"
    expect(admin.row("message:23").locator(".preview")).to_have_text(PAYLOAD)
    expect(admin.row(memory_part).locator(".preview")).to_contain_text(IMG)
    admin.row("message:23").click()
    expect(page.get_by_test_id("full")).to_have_text(PAYLOAD)
    admin.row(memory_part).click()
    expect(page.get_by_test_id("full")).to_contain_text(SCRIPT)
    expect(page.get_by_test_id("draft")).to_have_value(f"Memory file {MEMORY_PATH}:\n\n{PAYLOAD}")
    _assert_inert(admin, dialogs)

    page.goto(f"/admin/agents/{demo.agent_id}")
    page.get_by_role("button", name=MEMORY_PATH).click()
    expect(page.get_by_label("Content")).to_have_value(PAYLOAD)
    _assert_inert(admin, dialogs)


def _member(engine: sa.Engine, email: str) -> str:
    with engine.begin() as conn:
        return create_principal(conn, DEMO_TENANT, email, "member", TEST_RATE_LIMIT)["api_key"]


def test_a_member_cannot_open_another_members_session(
    admin: Admin, demo: Demo, engine: sa.Engine, live_server: str
):
    with Api(live_server, _member(engine, "other@demo.hango.dev")) as other:
        theirs = other.call("POST", "/v1/sessions", 201, json={"agent_id": demo.agent_id, "title": "Private"})
    admin.sign_in(demo.member_key)
    expect(admin.page.get_by_text("Private")).to_have_count(0)

    for page_path in ("", "/context"):
        admin.page.goto(f"/admin/sessions/{theirs['id']}{page_path}")
        expect(admin.page.get_by_test_id("not-found")).to_be_visible()
        expect(admin.page.locator("tr[data-part]")).to_have_count(0)
    admin.page.goto(f"/admin/sessions/{uuid.uuid4()}/context")
    expect(admin.page.get_by_test_id("not-found")).to_be_visible()


def test_a_member_changes_their_messages_but_not_the_agent(admin: Admin, demo: Demo, live_server: str):
    with Api(live_server, demo.member_key) as member:
        mine = member.call("POST", "/v1/sessions", 201, json={"agent_id": demo.agent_id, "title": "Mine"})
        member.post_and_wait(f"/v1/sessions/{mine['id']}/messages", 201, json={"content": "hello"})
        member.post_and_wait(f"/v1/sessions/{mine['id']}/messages", 201, json={"content": "again"})
    admin.sign_in(demo.member_key)
    admin.open_context(mine["id"])

    expect(admin.box("system:agent")).to_be_disabled()
    expect(admin.box("tool:ls")).to_be_disabled()
    expect(admin.page.get_by_text("read-only: only the agent's owner or an admin").first).to_be_visible()
    admin.box("message:3").uncheck()
    admin.box("message:4").uncheck()
    admin.save()
    expect(admin.box("message:3")).not_to_be_checked()
