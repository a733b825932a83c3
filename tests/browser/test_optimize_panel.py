"""The Optimize card of the Context panel in Chromium: suggestions with their price, Apply, the preview, Compact now."""

from __future__ import annotations

import uuid

import pytest
import sqlalchemy as sa
from playwright.sync_api import expect

from hango.store import TenantStore
from tests.browser.admin import Admin, Api, Demo, inspect_totals
from tests.support.mcp import store_server

pytestmark = pytest.mark.browser


def suggestions(api: Api, session_id: str) -> dict:
    return api.get(f"/v1/sessions/{session_id}/context/suggestions")


def suggest(admin: Admin) -> None:
    """Press Suggest and wait for the list."""
    admin.page.get_by_test_id("suggest").click()
    expect(admin.page.get_by_test_id("suggest")).to_have_text("Suggest again")


def test_suggestions_are_listed_with_their_savings_and_cache_cost(admin: Admin, api: Api, demo: Demo):
    admin.sign_in(demo.owner_key)
    admin.open_context(demo.session_id)
    suggest(admin)
    expected = suggestions(api, demo.session_id)["suggestions"]
    assert expected, "the demo re-reads and edits /notes.md"

    items = admin.page.get_by_test_id("suggestion")
    expect(items).to_have_count(len(expected))
    for index, item in enumerate(expected):
        shown = items.nth(index)
        expect(shown).to_have_attribute("data-kind", item["kind"])
        expect(shown).to_have_attribute("data-parts", " ".join(item["parts"]))
        expect(shown.get_by_test_id("saves")).to_have_text(f"saves {item['tokens_saved']:,}")
        expect(shown.get_by_test_id("cache-cost")).to_have_text(f"cache cost {item['cache_loss_tokens']:,}")
        expect(shown).to_contain_text(item["reason"])


def test_apply_saves_the_override_in_one_click_and_the_table_and_totals_follow(
    admin: Admin, api: Api, demo: Demo
):
    admin.sign_in(demo.owner_key)
    admin.open_context(demo.session_id)
    suggest(admin)
    first = next(s for s in suggestions(api, demo.session_id)["suggestions"] if s["target"] == "session")
    before = api.inspect(demo.session_id)["total_after"]

    card = admin.page.locator(f'[data-testid="suggestion"][data-parts="{" ".join(first["parts"])}"]')
    card.get_by_role("button", name="Apply").click()

    expect(admin.page.get_by_test_id("optimize-notice")).to_contain_text(
        f"Excluded {', '.join(first['parts'])}"
    )
    for part in first["parts"]:
        expect(admin.box(part)).not_to_be_checked()
    after = api.inspect(demo.session_id)
    assert before - after["total_after"] == first["tokens_saved"]
    assert admin.shown_totals() == inspect_totals(after)
    expect(card).to_have_count(0)
    stored = api.get(f"/v1/sessions/{demo.session_id}/context-overrides")["overrides"]
    assert {o["part"] for o in stored} == set(first["parts"])


def test_the_compaction_preview_is_shown_and_compact_now_uses_the_focus(admin: Admin, api: Api, demo: Demo):
    admin.sign_in(demo.owner_key)
    admin.open_context(demo.session_id)
    suggest(admin)
    preview = suggestions(api, demo.session_id)["compaction"]
    history = api.messages(demo.session_id)

    expect(admin.page.get_by_test_id("compaction-preview")).to_contain_text(
        f"Summarizes messages {preview['summarize'][0]}–{preview['summarize'][1]}"
    )
    admin.page.get_by_test_id("compact-focus").fill("keep the file names")
    admin.page.get_by_test_id("compact-now").click()

    expect(admin.page.get_by_test_id("optimize-notice")).to_contain_text(
        f"Compacted messages {preview['summarize'][0]}–{preview['summarize'][1]} into the summary."
    )
    expect(admin.row("summary")).to_be_visible()
    assert api.messages(demo.session_id) == history
    audit = api.get("/v1/audit", action="session.compact")["items"]
    assert [a["detail"]["focused"] for a in audit] == [True]


def test_a_save_in_the_table_refreshes_the_suggestions(admin: Admin, api: Api, demo: Demo):
    admin.sign_in(demo.owner_key)
    admin.open_context(demo.session_id)
    suggest(admin)
    first = suggestions(api, demo.session_id)["suggestions"][0]
    card = admin.page.locator(f'[data-testid="suggestion"][data-parts="{" ".join(first["parts"])}"]')
    expect(card).to_have_count(1)

    admin.box(first["parts"][0]).uncheck()
    admin.save()

    expect(card).to_have_count(0)


def test_opening_the_panel_asks_for_no_suggestions_until_suggest_is_pressed(admin: Admin, demo: Demo):
    asked: list[str] = []
    admin.page.on("request", lambda r: asked.append(r.url) if "/context/suggestions" in r.url else None)
    admin.sign_in(demo.owner_key)
    admin.open_context(demo.session_id)
    expect(admin.page.get_by_test_id("compact-now")).to_be_disabled()
    assert asked == []

    suggest(admin)

    assert len(asked) == 1
    expect(admin.page.get_by_test_id("compact-now")).to_be_enabled()


def test_compact_now_disabled_until_suggest_says_why_beside_it(admin: Admin, demo: Demo):
    admin.sign_in(demo.owner_key)
    admin.open_context(demo.session_id)
    button, why = admin.page.get_by_test_id("compact-now"), admin.page.get_by_test_id("compact-why")

    expect(button).to_be_disabled()
    expect(why).to_be_visible()
    expect(why).to_have_text("Press Suggest first: it previews what a compaction would summarize.")
    expect(button).to_have_attribute(
        "title", "Press Suggest first: it previews what a compaction would summarize."
    )

    suggest(admin)

    expect(button).to_be_enabled()
    expect(why).to_be_hidden()


def test_apply_of_a_defer_server_suggestion_defers_the_server_for_the_agent(
    admin: Admin, api: Api, demo: Demo, engine: sa.Engine
):
    with engine.begin() as conn:
        store = TenantStore(conn, uuid.UUID(demo.tenant_id))
        store_server(store, uuid.UUID(demo.agent_id), "git", ["git_log", "git_status", "git_diff"])
    admin.sign_in(demo.owner_key)
    admin.open_context(demo.session_id)
    suggest(admin)
    item = next(s for s in suggestions(api, demo.session_id)["suggestions"] if s["kind"] == "defer_server")

    card = admin.page.locator('[data-testid="suggestion"][data-kind="defer_server"]')
    card.get_by_role("button", name="Apply").click()

    expect(admin.page.get_by_test_id("optimize-notice")).to_contain_text("Deferred tool:git/*")
    assert api.get(f"/v1/agents/{demo.agent_id}")["defer"]["tools"] == item["apply"]["defer"]["tools"]
    (git,) = [g for g in api.inspect(demo.session_id)["tool_groups"] if g["server"] == "git"]
    assert (git["sent"], git["deferred"]) == (0, 3)
