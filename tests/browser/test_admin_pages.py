"""The admin page's screens in Chromium: sign-in and out, agents, memory, skills, sessions, usage, audit."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.browser.admin import Admin, Api, Demo

pytestmark = pytest.mark.browser


def test_sign_in_validates_the_key_shows_who_and_signs_out(admin: Admin, demo: Demo):
    page = admin.page
    page.goto("/admin/agents")
    expect(page).to_have_url(re.compile(r"/admin/\?next=%2Fadmin%2Fagents$"))
    page.wait_for_load_state()
    page.fill("#api-key", "hgo_000000000000_not-a-real-key-at-all-000000")
    page.click("button[type=submit]")
    expect(page.get_by_role("alert")).to_contain_text("This API key is not valid.")

    page.fill("#api-key", demo.owner_key)
    page.click("button[type=submit]")
    expect(page).to_have_url(re.compile(r"/admin/agents$"))
    header = page.locator("header.top")
    expect(header).to_contain_text("Demo")
    expect(header).to_contain_text("owner@demo.hango.dev")
    expect(page.get_by_test_id("role")).to_have_text("owner")
    assert demo.owner_key not in page.url
    assert demo.owner_key not in page.content()

    page.get_by_role("button", name="Sign out").click()
    expect(page).to_have_url(re.compile(r"/admin/$"))
    assert page.evaluate("sessionStorage.length") == 0
    page.goto("/admin/sessions")
    expect(page).to_have_url(re.compile(r"/admin/\?next=%2Fadmin%2Fsessions$"))


def test_agents_are_created_and_edited(admin: Admin, api: Api, demo: Demo):
    admin.sign_in(demo.owner_key)
    page = admin.page
    page.get_by_role("link", name="Agents").click()
    expect(page.get_by_role("link", name="Demo agent")).to_be_visible()

    page.get_by_label("Name").fill("Reviewer")
    page.get_by_label("System prompt").fill("You review code.")
    page.get_by_role("button", name="Create").click()
    expect(page).to_have_url(re.compile(r"/admin/agents/[0-9a-f-]{36}$"))
    agent_id = page.url.rsplit("/", 1)[1]

    page.get_by_label("Context window (tokens)").fill("64000")
    page.get_by_label("System prompt").fill("You review code carefully.")
    page.get_by_label("task").uncheck()
    page.get_by_role("button", name="Save agent").click()
    expect(page.get_by_role("status")).to_have_text("Agent saved.")
    agent = api.get(f"/v1/agents/{agent_id}")
    assert (agent["context_window"], agent["system_prompt"]) == (64000, "You review code carefully.")
    assert "task" not in agent["tools"]
    assert len(agent["tools"]) == 7


def test_memory_files_and_skills_are_listed_edited_and_deleted(admin: Admin, api: Api, demo: Demo):
    admin.sign_in(demo.owner_key)
    page = admin.page
    page.goto(f"/admin/agents/{demo.agent_id}")
    memory = page.get_by_role("region", name="Memory files")
    skills = page.get_by_role("region", name="Skills")

    memory.get_by_role("button", name="/memories/AGENTS.md").click()
    expect(memory.get_by_label("Content")).to_have_value(re.compile("^# Team conventions"))
    memory.get_by_label("Content").fill("# Team conventions\n\n- Be brief.\n")
    memory.get_by_role("button", name="Save file").click()
    expect(page.get_by_role("status")).to_have_text("Memory file saved.")
    assert api.get(f"/v1/agents/{demo.agent_id}/memory/memories/AGENTS.md")["content"].endswith("Be brief.\n")

    memory.get_by_role("button", name="New file").click()
    memory.get_by_label("Path").fill("/memories/style.md")
    memory.get_by_label("Content").fill("short answers")
    memory.get_by_role("button", name="Save file").click()
    expect(memory.get_by_role("button", name="/memories/style.md")).to_be_visible()
    memory.get_by_role("listitem").filter(has_text="style.md").get_by_role("button", name="Delete").click()
    memory.get_by_role("button", name="Really delete").click()
    expect(memory.get_by_role("button", name="/memories/style.md")).to_have_count(0)
    paths = [e["path"] for e in api.get(f"/v1/agents/{demo.agent_id}/memory")["items"]]
    assert paths == ["/memories/AGENTS.md"]

    skills.get_by_role("button", name="triage").click()
    skills.get_by_label("Instructions").fill("Sort by urgency, then by age.")
    skills.get_by_role("button", name="Save skill").click()
    expect(page.get_by_role("status")).to_have_text("Skill saved.")
    assert api.get(f"/v1/agents/{demo.agent_id}/skills/triage")["body"] == "Sort by urgency, then by age."
    skills.get_by_role("listitem").filter(has_text="triage").get_by_role("button", name="Delete").click()
    skills.get_by_role("button", name="Really delete").click()
    expect(skills.get_by_role("button", name="triage")).to_have_count(0)
    names = [s["name"] for s in api.get(f"/v1/agents/{demo.agent_id}/skills")["items"]]
    assert names == ["release-notes"]


def test_a_session_shows_its_history_runs_and_takes_a_message(admin: Admin, api: Api, demo: Demo):
    admin.sign_in(demo.owner_key)
    page = admin.page
    page.get_by_role("link", name="Planning the inspector launch").click()
    history = page.get_by_role("region", name="History")
    expect(history.locator(".message")).to_have_count(22)
    first_call = history.locator(".message").nth(1)
    expect(first_call.locator(".tag.tool")).to_have_text("tool call")
    expect(first_call).to_contain_text('"path": "/notes.md"')
    expect(history.locator(".message").nth(2).locator(".tag.result")).to_have_text("tool result")
    runs = page.get_by_role("region", name="Runs")
    expect(runs.locator("tbody tr")).to_have_count(6)

    page.fill("#new-message", '/tool ls {"path": "/"}')
    page.get_by_role("button", name="Send").click()
    expect(history.locator(".message")).to_have_count(26)  # user, tool call, tool result, answer
    expect(runs.locator("tbody tr")).to_have_count(7)
    assert len(api.messages(demo.session_id)) == 26


def test_new_sessions_start_from_the_list(admin: Admin, api: Api, demo: Demo):
    admin.sign_in(demo.owner_key)
    page = admin.page
    expect(page.get_by_role("link", name="Planning the inspector launch")).to_be_visible()
    page.get_by_label("Title").fill("Second thoughts")
    page.get_by_role("button", name="Start").click()
    expect(page).to_have_url(re.compile(r"/admin/sessions/[0-9a-f-]{36}$"))
    expect(page.get_by_role("heading", name="Second thoughts")).to_be_visible()
    titles = [s["title"] for s in api.get("/v1/sessions")["items"]]
    assert sorted(titles) == ["Planning the inspector launch", "Second thoughts"]


def test_usage_and_audit_filter(admin: Admin, demo: Demo):
    admin.sign_in(demo.owner_key)
    page = admin.page
    page.get_by_role("link", name="Usage").click()
    rows = page.locator("table.list tbody tr")
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("run")
    expect(page.get_by_test_id("quota-left")).to_have_text("unlimited")
    page.get_by_label("Purpose").select_option("run")
    expect(rows).to_have_count(1)

    page.get_by_role("link", name="Audit").click()
    entries = page.locator("table.list tbody tr")
    expect(entries.first).to_be_visible()
    page.get_by_label("Action").select_option("tenant.bootstrap")
    page.get_by_role("button", name="Filter").click()
    expect(entries).to_have_count(2)  # the owner's and the member's first keys
    page.get_by_label("Action").select_option("agent.delete")
    page.get_by_role("button", name="Filter").click()
    expect(entries).to_have_count(0)
    expect(page.get_by_text("Nothing here yet.")).to_be_visible()


def test_a_member_sees_no_audit_link_and_no_audit_log(admin: Admin, demo: Demo):
    admin.sign_in(demo.member_key)
    expect(admin.page.get_by_test_id("role")).to_have_text("member")
    expect(admin.page.get_by_role("link", name="Audit")).to_be_hidden()
    admin.page.goto("/admin/audit")
    expect(admin.page.get_by_text("The audit log is for the tenant's owners and admins.")).to_be_visible()
