"""A run in flight seen from the panel: History shows it live with Cancel, the Context tab says so.

The run is queued with no job (a row no worker will take), so it stays in flight
exactly as long as the test needs: until the page's Cancel ends it.
"""

from __future__ import annotations

import uuid

import sqlalchemy as sa
from playwright.sync_api import expect

from hango.store import TenantStore
from tests.browser.admin import Admin, Api, Demo


def queue_a_run(engine: sa.Engine, demo: Demo, api: Api) -> str:
    owner = api.get("/v1/me")["user_id"]
    with engine.begin() as conn:
        store = TenantStore(conn, uuid.UUID(demo.tenant_id))
        content = [{"type": "text", "text": "Are we there yet?"}]
        return str(store.runs.enqueue(uuid.UUID(demo.session_id), uuid.UUID(owner), content).id)


def test_history_shows_a_run_in_flight_and_cancel_ends_it(admin: Admin, api: Api, demo: Demo, engine):
    run = queue_a_run(engine, demo, api)
    admin.sign_in(demo.owner_key)
    page = admin.page

    page.goto(f"/admin/sessions/{demo.session_id}")
    live = page.get_by_test_id("live-run")
    expect(live).to_be_visible()
    expect(live).to_contain_text("queued")
    expect(page.get_by_role("button", name="Send")).to_be_disabled()
    live.get_by_role("button", name="Cancel").click()

    expect(live).to_be_hidden()
    assert api.get(f"/v1/runs/{run}")["status"] == "cancelled"
    runs = page.get_by_role("region", name="Runs")
    expect(runs.locator("tbody tr").last).to_contain_text("cancelled")


def test_the_context_tab_says_a_run_is_in_progress_until_it_ends(admin: Admin, api: Api, demo: Demo, engine):
    run = queue_a_run(engine, demo, api)
    admin.sign_in(demo.owner_key)
    admin.open_context(demo.session_id)

    notice = admin.page.get_by_test_id("run-in-progress")
    expect(notice).to_be_visible()
    expect(notice).to_contain_text("queued, waiting for a worker")
    api.call("POST", f"/v1/runs/{run}/cancel", 202, json={})

    expect(notice).to_be_hidden()
    expect(admin.row("system:agent")).to_be_visible()  # reloaded, with no unsaved changes to keep
