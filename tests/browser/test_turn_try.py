"""The whole-turn try in the Context panel: A (saved context) and B (unsaved changes) side by side.

The demo agent is ``offline/echo``: the try's message asks it to rewrite ``/notes.md``
(``/tool write_file``), so each turn runs a tool on its scratch copy and ends with a
would-be diff. Refresh the screenshot in ``docs/images/`` with::

    HANGO_UPDATE_SCREENSHOTS=1 .venv/bin/python -m pytest tests/browser -k screenshots -p no:cacheprovider
"""

from __future__ import annotations

import json
import os
import re
import shutil
import uuid
from pathlib import Path

import pytest
import sqlalchemy as sa
from playwright.sync_api import Locator, Route, expect

from hango.config import REPO_ROOT
from hango.store import TenantStore
from tests.browser.admin import Admin, Api, Demo

pytestmark = pytest.mark.browser

THANKS = "message:21"  # the demo's closing "Thanks, that is all for now."
REWRITE = 'Rewrite the notes.\n/tool write_file {"path": "/notes.md", "content": "# Plan\\n- try the whole turn\\n"}'
TURN_TIMEOUT = 60_000  # two queued runs on a loaded 2-core machine
IMAGES = REPO_ROOT / "docs" / "images"
DOC = REPO_ROOT / "docs" / "learning" / "whole-turn-try.md"


def _try_the_turn(admin: Admin, message: str = REWRITE) -> dict[str, Locator]:
    """Leave THANKS out (unsaved), press Try the whole turn; the columns by key once both ended."""
    admin.box(THANKS).uncheck()
    admin.settled()
    try_card = admin.page.get_by_test_id("try")
    try_card.get_by_role("textbox").fill(message)
    try_card.get_by_role("button", name="Try the whole turn").click()
    turn = admin.page.get_by_test_id("turn")
    columns = {key: turn.locator(f'[data-testid="turn-column"][data-column="{key}"]') for key in ("a", "b")}
    for column in columns.values():
        expect(column.get_by_test_id("turn-status")).to_have_text("completed", timeout=TURN_TIMEOUT)
    return columns


def test_the_panel_tries_a_whole_turn_side_by_side_with_the_saved_context(admin: Admin, api: Api, demo: Demo):
    admin.sign_in(demo.owner_key)
    admin.open_context(demo.session_id)
    history = api.messages(demo.session_id)
    runs = api.get(f"/v1/sessions/{demo.session_id}/runs")["items"]

    columns = _try_the_turn(admin)

    for key, excluded in (("a", "none"), ("b", THANKS)):
        column = columns[key]
        expect(column.locator("dd", has_text=excluded)).to_be_visible()
        expect(column.get_by_test_id("turn-steps").locator("li").first).to_be_attached()
        expect(column.get_by_test_id("turn-answer")).to_contain_text("offline/echo")
        expect(column.get_by_test_id("turn-tool")).to_have_attribute("data-tool", "write_file")
        expect(column.get_by_test_id("turn-call-count")).to_have_text("2")  # the tool call, then the answer
        expect(column.get_by_test_id("turn-cost")).to_contain_text(
            "(simulated at anthropic/claude-sonnet-4-6 prices)"
        )
        change = column.locator('[data-testid="turn-change"][data-path="/notes.md"]')
        expect(change).to_contain_text("edited")
        diff = change.get_by_test_id("turn-diff")
        expect(diff.locator(".line-removed", has_text="- ship the inspector")).to_be_visible()
        expect(diff.locator(".line-added", has_text="- try the whole turn")).to_be_visible()
        first_call = column.get_by_test_id("turn-call").first
        first_call.locator("summary").click()
        expect(first_call.locator('[data-testid="sent-part"][data-part="system:agent"]')).to_be_visible()
    expect(columns["b"].locator('[data-testid="sent-part"][data-part="message:21"]')).to_have_count(0)

    # nothing of the session changed: its messages, its overrides, its files (a real run reads them)
    assert api.messages(demo.session_id) == history
    assert api.get(f"/v1/sessions/{demo.session_id}/context-overrides")["overrides"] == []
    tries = api.get(f"/v1/sessions/{demo.session_id}/runs")["items"][len(runs) :]
    assert sorted((run["kind"], run["status"]) for run in tries) == [("try", "completed")] * 2
    _assert_the_learning_doc_shows(
        next(run["result"] for run in tries if run["result"]["excluded"] == [THANKS])
    )
    read = api.post_and_wait(
        f"/v1/sessions/{demo.session_id}/messages", json={"content": '/tool read_file {"path": "/notes.md"}'}
    )
    result = read["messages"][2]["content"][0]
    assert "ship the inspector" in result["content"] and "whole turn" not in result["content"]


def test_without_unsaved_changes_the_whole_turn_runs_the_saved_context_alone(
    admin: Admin, api: Api, demo: Demo
):
    admin.sign_in(demo.owner_key)
    admin.open_context(demo.session_id)
    admin.page.get_by_role("button", name="Try the whole turn").click()

    columns = admin.page.get_by_test_id("turn-column")
    expect(columns.get_by_test_id("turn-status")).to_have_text(["completed"], timeout=TURN_TIMEOUT)
    expect(columns).to_have_attribute("data-column", "a")
    expect(columns.get_by_test_id("turn-no-changes")).to_be_visible()  # "Thanks…" answered again: no tool
    kinds = [run["kind"] for run in api.get(f"/v1/sessions/{demo.session_id}/runs")["items"]]
    assert kinds.count("try") == 1


def _assert_the_learning_doc_shows(result: dict) -> None:
    """The result in docs/learning/whole-turn-try.md is B's, as the server answered it (usage and calls aside)."""
    text = DOC.read_text()
    block = re.search(r"<!-- turn-result-example -->\n```json\n(.*?)\n```", text, re.DOTALL)
    assert block, "docs/learning/whole-turn-try.md lost its <!-- turn-result-example --> block"
    shown = json.loads(block.group(1))
    for key in ("stop_reason", "changes", "excluded", "added"):
        assert shown[key] == result[key], key
    assert [{**tool, "duration_ms": 0} for tool in shown["tools"]] == [
        {**tool, "duration_ms": 0} for tool in result["tools"]
    ]


def _queued_try(engine: sa.Engine, demo: Demo, api: Api) -> str:
    """A run of kind ``try`` with no job: no worker takes it, it stays queued until cancelled."""
    owner = uuid.UUID(api.get("/v1/me")["user_id"])
    with engine.begin() as conn:
        store = TenantStore(conn, uuid.UUID(demo.tenant_id))
        return str(store.runs.enqueue(uuid.UUID(demo.session_id), owner, None, kind="try").id)


def test_cancel_stops_both_turns_of_a_whole_turn_try(admin: Admin, api: Api, demo: Demo, engine: sa.Engine):
    queued: list[str] = []

    def queue_without_a_worker(route: Route) -> None:
        queued.append(_queued_try(engine, demo, api))
        run = api.get(f"/v1/runs/{queued[-1]}")
        route.fulfill(status=202, json=run, headers={"Location": f"/v1/runs/{run['id']}"})

    admin.page.route("**/context/try", queue_without_a_worker)
    admin.sign_in(demo.owner_key)
    admin.open_context(demo.session_id)
    admin.box(THANKS).uncheck()
    admin.settled()
    admin.page.get_by_role("button", name="Try the whole turn").click()
    turn = admin.page.get_by_test_id("turn")
    expect(turn.get_by_test_id("turn-status")).to_have_text(["queued", "queued"])

    turn.get_by_role("button", name="Cancel").click()

    expect(turn.get_by_test_id("turn-status")).to_have_text(["cancelled", "cancelled"], timeout=TURN_TIMEOUT)
    expect(turn.get_by_test_id("turn-error").first).to_contain_text("Cancelled")
    expect(turn.get_by_role("button", name="Cancel")).to_be_hidden()
    assert [api.get(f"/v1/runs/{run}")["status"] for run in queued] == ["cancelled", "cancelled"]


def test_a_refused_whole_turn_shows_the_reason_next_to_the_part_and_starts_nothing(
    admin: Admin, api: Api, demo: Demo
):
    admin.sign_in(demo.owner_key)
    admin.open_context(demo.session_id)
    runs = api.get(f"/v1/sessions/{demo.session_id}/runs")["items"]

    admin.box("message:1").uncheck()
    admin.settled()
    admin.page.get_by_role("button", name="Try the whole turn").click()

    expect(admin.page.get_by_test_id("try-error")).to_contain_text("the first message is the assistant's")
    expect(admin.row("message:1").get_by_role("alert")).to_contain_text("starts_with_assistant")
    expect(admin.page.get_by_test_id("turn")).to_be_hidden()
    assert api.get(f"/v1/sessions/{demo.session_id}/runs")["items"] == runs


def test_a_whole_turn_try_reports_an_exhausted_quota(admin: Admin, api: Api, demo: Demo):
    api.call("PATCH", "/v1/tenant", json={"token_quota": 1})
    admin.sign_in(demo.owner_key)
    admin.open_context(demo.session_id)
    admin.page.get_by_role("button", name="Try the whole turn").click()
    expect(admin.page.get_by_test_id("try-error")).to_contain_text("quota for this month is used up")


@pytest.mark.parametrize(
    ("status", "code", "shown"),
    [(429, "too_many_runs", "Try again in 7 seconds"), (404, "not_found", "Not found")],
)
def test_a_whole_turn_try_reports_too_many_runs_and_a_missing_session(
    admin: Admin, demo: Demo, status: int, code: str, shown: str
):
    admin.refuse("**/context/try", status, code)
    admin.sign_in(demo.owner_key)
    admin.open_context(demo.session_id)
    admin.page.get_by_role("button", name="Try the whole turn").click()
    expect(admin.page.get_by_test_id("try-error")).to_contain_text(shown)
    expect(admin.page.get_by_test_id("turn")).to_be_hidden()


def test_whole_turn_screenshots(admin: Admin, demo: Demo, tmp_path: Path):
    """A and B of a whole turn that rewrites /notes.md, its would-be diff shown in both columns."""
    page = admin.page
    admin.sign_in(demo.owner_key)
    admin.open_context(demo.session_id)
    _try_the_turn(admin)
    size = page.viewport_size
    page.set_viewport_size({"width": size["width"], "height": 1600})  # the whole card, drawn
    shot = tmp_path / "context-turn-try.png"
    page.get_by_test_id("turn").screenshot(path=shot)
    page.set_viewport_size(size)

    assert shot.read_bytes().startswith(b"\x89PNG")
    if os.environ.get("HANGO_UPDATE_SCREENSHOTS"):
        shutil.copyfile(shot, IMAGES / shot.name)
