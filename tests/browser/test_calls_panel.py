"""The Calls tab against real gunicorn: the demo's calls with verdicts and costs, the chart, a call's parts, a diff.

Refresh its screenshots in ``docs/images/`` with::

    HANGO_UPDATE_SCREENSHOTS=1 .venv/bin/python -m pytest tests/browser/test_calls_panel.py -p no:cacheprovider
"""

from __future__ import annotations

import datetime as dt
import os
import shutil
import uuid
from pathlib import Path

import pytest
import sqlalchemy as sa
from playwright.sync_api import expect

from hango.cli.money import money
from hango.db.schema import model_calls, usage_records
from hango.providers.prices import Tokens
from hango.store import TenantStore
from scripts.bench.history import record_calls
from tests.browser.admin import Admin, Api, Demo

pytestmark = pytest.mark.server

IMAGES = Path(__file__).resolve().parents[2] / "docs" / "images"
SEGMENTS = {
    "cache_read": "cache_read_tokens",
    "cache_write": "cache_write_tokens",
    "uncached": "input_tokens",
    "output": "output_tokens",
}


def open_calls(admin: Admin, demo: Demo) -> None:
    admin.sign_in(demo.owner_key)
    admin.page.goto(f"/admin/sessions/{demo.session_id}/calls")
    expect(admin.page.get_by_test_id("call").first).to_be_visible()


def test_the_calls_tab_lists_the_demos_calls_with_verdict_badges_and_costs(
    admin: Admin, demo: Demo, api: Api
):
    calls = api.get(f"/v1/sessions/{demo.session_id}/calls", limit=1000)["items"]

    open_calls(admin, demo)

    rows = admin.page.get_by_test_id("call")
    expect(rows).to_have_count(len(calls))
    for index, call in enumerate(calls):  # newest first, as the server lists them
        row = rows.nth(index)
        expect(row).to_have_attribute("data-call-id", call["id"])
        expect(row.get_by_test_id("verdict")).to_have_text(call["cache"]["badge"])
        expect(row.get_by_test_id("verdict-words")).to_have_text(call["cache"]["words"])
        expect(row.get_by_test_id("cost")).to_have_text(money(call["cost"]["usd"]))
    total = api.get(f"/v1/sessions/{demo.session_id}/cost")
    expect(admin.page.get_by_test_id("session-cost")).to_contain_text(
        f"{len(calls)} calls · {money(total['usd'])} (simulated at anthropic/claude-sonnet-4-6 prices)"
    )


def test_the_offline_demos_costs_are_labelled_simulated_at_the_reference_models_prices(
    admin: Admin, demo: Demo, api: Api
):
    newest = api.get(f"/v1/sessions/{demo.session_id}/calls", limit=1)["items"][0]
    label = "(simulated at anthropic/claude-sonnet-4-6 prices)"

    open_calls(admin, demo)
    cost = admin.page.get_by_test_id("call").first.get_by_test_id("cost")
    admin.page.get_by_test_id("call").first.get_by_role("button").click()

    assert newest["cost"]["usd"] > 0
    expect(cost).to_have_attribute("title", f"{newest['cost']['source']} {label}")
    expect(admin.page.get_by_test_id("call-detail").get_by_test_id("call-cost")).to_have_text(
        f"· {money(newest['cost']['usd'])} {label}"
    )


def test_the_chart_has_one_bar_per_call_whose_segments_are_the_calls_usage(
    admin: Admin, demo: Demo, api: Api
):
    calls = api.get(f"/v1/sessions/{demo.session_id}/calls", limit=1000)["items"]

    open_calls(admin, demo)

    bars = admin.page.get_by_test_id("chart").locator("[data-testid=bar]")
    expect(bars).to_have_count(len(calls))
    for index, call in enumerate(reversed(calls)):  # oldest on the left
        bar = bars.nth(index)
        assert bar.get_attribute("data-call-id") == call["id"]
        drawn = {
            s.get_attribute("data-segment"): int(s.get_attribute("data-tokens"))
            for s in bar.locator("rect").all()
        }
        usage = {name: call["usage"][key] for name, key in SEGMENTS.items() if call["usage"][key]}
        assert drawn == usage


def test_opening_a_call_shows_its_parts_as_sent_with_what_changed_since_the_previous(
    admin: Admin, demo: Demo, api: Api
):
    newest = api.get(f"/v1/sessions/{demo.session_id}/calls", limit=1)["items"][0]
    detail = api.get(f"/v1/sessions/{demo.session_id}/calls/{newest['id']}")

    open_calls(admin, demo)
    admin.page.get_by_test_id("call").first.get_by_role("button").click()

    shown = admin.page.get_by_test_id("call-detail").get_by_test_id("sent-part")
    expect(shown).to_have_count(len(detail["parts"]))
    for index, part in enumerate(detail["parts"]):
        expect(shown.nth(index)).to_have_attribute("data-part", part["id"])
        mark = "" if part["since_previous"] in (None, "same") else part["since_previous"]
        expect(shown.nth(index)).to_have_attribute("data-mark", mark)
        so_far = shown.nth(index).get_by_test_id("part-so-far")  # the server's total, never recounted
        expect(so_far).to_have_text(money(part["cost_so_far"]["usd"]))
    assert any(p["since_previous"] == "added" for p in detail["parts"])


def test_comparing_two_calls_shows_the_servers_first_difference_side_by_side(
    admin: Admin, demo: Demo, api: Api
):
    calls = api.get(f"/v1/sessions/{demo.session_id}/calls", limit=1000)["items"]
    oldest, newest = calls[-1]["id"], calls[0]["id"]
    diff = api.get(f"/v1/sessions/{demo.session_id}/context/diff", **{"from": oldest, "to": newest})

    open_calls(admin, demo)
    page = admin.page
    page.locator(f'tr[data-call-id="{oldest}"] input[name=compare-a]').check()
    page.locator(f'tr[data-call-id="{newest}"] input[name=compare-b]').check()
    page.get_by_test_id("compare").click()

    comparison = page.get_by_test_id("comparison")
    expect(comparison.get_by_test_id("first-difference")).to_have_text(
        f"First difference: {diff['first_difference']['words']}"
    )
    right = comparison.get_by_test_id("parts-right")
    first = diff["first_difference"]["part"]
    expect(right.locator(f'tr[data-part="{first}"]')).to_have_attribute("data-mark", "first difference")
    for part in diff["added"]:
        if part != first:
            expect(right.locator(f'tr[data-part="{part}"]')).to_have_attribute("data-mark", "added")


def add_priced_calls(engine: sa.Engine, demo: Demo) -> None:
    """Six calls of a priced model after the demo's, the fourth a cache miss: what a real session shows."""

    def tokens(index: int) -> Tokens:
        read, write = (0, 6_400) if index in (0, 3) else (6_400, 180)
        return Tokens(240 + 30 * index, read, write, 150 + 20 * index)

    with engine.begin() as conn:
        store = TenantStore(conn, uuid.UUID(demo.tenant_id))
        made = record_calls(store, uuid.UUID(demo.session_id), 6, "anthropic/claude-sonnet-4-6", tokens)
        for index, call in enumerate(made):
            miss = index == 3
            verdict = (
                {"miss_reason": "prefix_changed", "miss_part": "message:21", "miss_cause": "replaced_part"}
                if miss
                else {"miss_reason": "first_call"}
                if index == 0
                else {}
            )
            conn.execute(
                sa.update(model_calls)
                .where(model_calls.c.id == call)
                .values(expected_cache_read=0 if index == 0 else 6_400, **verdict)
            )
            usage = sa.select(model_calls.c.usage_id).where(model_calls.c.id == call).scalar_subquery()
            conn.execute(
                sa.update(usage_records)
                .where(usage_records.c.id == usage)
                .values(created_at=dt.datetime.now(dt.UTC))
            )


def test_screenshots_of_the_calls_tab(admin: Admin, demo: Demo, api: Api, engine: sa.Engine, tmp_path: Path):
    """The tab with priced calls and a miss, an opened call, and two calls compared."""
    add_priced_calls(engine, demo)
    calls = api.get(f"/v1/sessions/{demo.session_id}/calls", limit=1000)["items"]
    open_calls(admin, demo)
    page = admin.page
    misses = sum(c["cache"]["badge"] == "miss" for c in calls)  # the demo's own misses, and the added one
    expect(page.get_by_test_id("chart").locator("[data-testid=miss]")).to_have_count(misses)
    shots = [tmp_path / "calls-tab.png", tmp_path / "calls-open.png", tmp_path / "calls-compare.png"]
    page.screenshot(path=shots[0], full_page=False)
    miss = page.locator("tr[data-testid=call]", has=page.locator(".badge.danger")).first  # the added one
    miss.get_by_role("button").click()
    expect(page.get_by_test_id("call-detail")).to_be_visible()
    page.get_by_test_id("call-detail").screenshot(path=shots[1])
    rows = page.get_by_test_id("call")
    miss.locator("input[name=compare-b]").check()
    rows.nth(3).locator("input[name=compare-a]").check()
    page.get_by_test_id("compare").click()
    expect(page.get_by_test_id("first-difference")).to_contain_text("First difference")
    page.get_by_test_id("comparison").screenshot(path=shots[2])
    for shot in shots:
        assert shot.read_bytes().startswith(b"\x89PNG")
        if os.environ.get("HANGO_UPDATE_SCREENSHOTS"):
            shutil.copyfile(shot, IMAGES / shot.name)


PHONE = {"width": 390, "height": 844}
# Every element under ``root`` whose content is wider than its box (cut, or scrolled out of view), or
# that reaches past the window's right edge: its tag, test id or class, and its text.
CLIPPED = """(root) => [...root.querySelectorAll("*")].filter((el) => {
  if (!el.getClientRects().length) return false;
  const box = el.getBoundingClientRect();
  return el.scrollWidth > el.clientWidth + 1 || box.right > window.innerWidth + 1;
}).filter((el) => !(el instanceof SVGElement)).map((el) => `${el.tagName} ${el.dataset.testid || el.className}: ${el.textContent.trim().slice(0, 40)}`)"""


def compare_oldest_and_newest(admin: Admin, demo: Demo, api: Api) -> None:
    calls = api.get(f"/v1/sessions/{demo.session_id}/calls", limit=1000)["items"]
    page = admin.page
    page.locator(f'tr[data-call-id="{calls[-1]["id"]}"] input[name=compare-a]').check()
    page.locator(f'tr[data-call-id="{calls[0]["id"]}"] input[name=compare-b]').check()
    page.get_by_test_id("compare").click()
    expect(page.get_by_test_id("parts-left").locator("tr[data-part]").first).to_be_visible()


def test_compare_at_1280_px_cuts_no_column_of_a_or_b(admin: Admin, demo: Demo, api: Api):
    open_calls(admin, demo)
    compare_oldest_and_newest(admin, demo, api)

    comparison = admin.page.get_by_test_id("comparison")
    for side in ("parts-left", "parts-right"):
        heads = comparison.get_by_test_id(side).locator("th").all_inner_texts()
        assert heads == ["", "Part", "Tokens", "Cost", "So far", "Preview"]
    assert comparison.evaluate(CLIPPED) == []


def test_the_calls_table_at_phone_width_is_not_cut(admin: Admin, demo: Demo, api: Api):
    admin.page.set_viewport_size(PHONE)
    open_calls(admin, demo)

    calls = admin.page.get_by_role("region", name="Calls")
    expect(calls.get_by_test_id("verdict-words").first).to_be_visible()
    assert calls.evaluate(CLIPPED) == []
    compare_oldest_and_newest(admin, demo, api)
    assert admin.page.get_by_test_id("comparison").evaluate(CLIPPED) == []


def test_the_chart_has_axes_with_labels_and_units(admin: Admin, demo: Demo, api: Api):
    calls = api.get(f"/v1/sessions/{demo.session_id}/calls", limit=1000)["items"]
    tallest = max(sum(c["usage"][key] for key in SEGMENTS.values()) for c in calls)

    open_calls(admin, demo)

    chart = admin.page.get_by_test_id("chart")
    expect(chart.get_by_test_id("axis-y-title")).to_have_text("tokens per call")
    expect(chart.get_by_test_id("axis-x-title")).to_have_text(f"calls, oldest to newest ({len(calls)})")
    ticks = [int(t.replace(",", "")) for t in chart.get_by_test_id("axis-y-tick").all_text_contents()]
    assert ticks[0] == 0 and ticks == sorted(ticks) and len(ticks) >= 3
    assert ticks[-1] >= tallest > ticks[-2]  # the scale covers the tallest bar, no more than one step over
    assert chart.locator("line[data-testid=axis-x], line[data-testid=axis-y]").count() == 2
