"""A whole-turn try with a deferral picked in the Context panel: B defers ``grep``, A sends it as the agent
does, and the turn's message asks the model to search for it (the offline model's ``/tool`` line): B's
search reveals it, A's finds no search to run. Each column says its deferral, its search lines
and what its first call sent, as text."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.browser.admin import Admin, Api, Demo
from tests.browser.test_turn_try import TURN_TIMEOUT

pytestmark = pytest.mark.browser

SEARCH = '/tool tool_search {"query": "search file contents for a pattern"}'


def test_a_whole_turn_try_with_a_tool_deferred_shows_its_search_line_beside_the_saved_context(
    admin: Admin, api: Api, demo: Demo
):
    admin.sign_in(demo.owner_key)
    admin.open_context(demo.session_id)
    try_card = admin.page.get_by_test_id("try")
    try_card.get_by_role("textbox").fill(f"Look for TODO.\n{SEARCH}")
    try_card.get_by_test_id("defer-action").select_option("defer")
    try_card.get_by_test_id("defer-part").select_option("tool:grep")
    try_card.get_by_test_id("defer-add").click()
    expect(try_card.get_by_test_id("deferral-entry")).to_have_text("defer tool:grep Remove")
    try_card.get_by_role("button", name="Try the whole turn").click()

    turn = admin.page.get_by_test_id("turn")
    a, b = (turn.locator(f'[data-testid="turn-column"][data-column="{key}"]') for key in ("a", "b"))
    for column in (a, b):
        expect(column.get_by_test_id("turn-status")).to_have_text("completed", timeout=TURN_TIMEOUT)
        expect(column.get_by_test_id("turn-first-call")).to_have_text(
            re.compile(r"^[\d,]+ tokens · \d+ tools$")
        )
    expect(a.get_by_test_id("turn-deferral")).to_have_text("the agent's own")
    expect(a.get_by_test_id("turn-no-search")).to_be_visible()  # nothing deferred to search: no search ran
    expect(b.locator("h3")).to_have_text("B · the saved context with the deferral")
    expect(b.get_by_test_id("turn-deferral")).to_have_text("deferred tool:grep")
    expect(b.get_by_test_id("turn-search")).to_have_text(
        "searched 'search file contents for a pattern' → revealed tool:grep; called none of them"
    )

    runs = [r for r in api.get(f"/v1/sessions/{demo.session_id}/runs")["items"] if r["kind"] == "try"]
    assert sorted(r["result"]["deferral"]["defer"] for r in runs) == [[], ["tool:grep"]]
