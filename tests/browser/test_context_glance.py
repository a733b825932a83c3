"""The Context panel at a glance: the window bar by category, finding the weight, a part on a phone.

Chromium against a live server with the seeded demo session (6 system parts,
8 tools, 22 messages; #2 calls write_file and #3 holds its result).
"""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser.admin import Admin, Api, Demo

pytestmark = pytest.mark.browser

SEGMENTS = ["system", "tools", "messages", "free", "buffer", "reserve"]
PHONE = {"width": 390, "height": 844}
# The element drawn at the compaction mark's centre, and the mark's colours.
AT_MARK = """() => {
  const mark = document.querySelector('[data-testid="compact-mark"]');
  const box = mark.getBoundingClientRect();
  const top = document.elementFromPoint(box.left + box.width / 2, box.top + box.height / 2);
  const style = getComputedStyle(mark);
  return { top: top === mark, inside: style.backgroundColor, edge: style.borderLeftColor, width: box.width };
}"""


def legend(admin: Admin) -> dict[str, int]:
    """The tokens the legend prints for each segment."""
    items = admin.page.locator(".legend.segments li[data-segment]")
    return {
        item.get_attribute("data-segment"): int(
            item.locator(".figure").inner_text().split(" ")[0].replace(",", "")
        )
        for item in items.all()
    }


def expected_segments(inspect: dict) -> dict[str, int]:
    used = sum(inspect["totals"][group]["after"] for group in ("system", "tools", "messages"))
    window, reserve = inspect["context_window"], inspect["output_reserve"]
    return {
        **{group: inspect["totals"][group]["after"] for group in ("system", "tools", "messages")},
        "free": max(0, inspect["compact_at"] - used),
        "buffer": window - reserve - max(used, inspect["compact_at"]),
        "reserve": reserve,
    }


def test_the_bar_shows_each_category_with_tokens_and_share_of_the_window(admin: Admin, api: Api, demo: Demo):
    admin.sign_in(demo.owner_key)
    admin.open_context(demo.session_id)
    inspect = api.inspect(demo.session_id)
    bar = admin.page.get_by_test_id("bar")
    assert [s.get_attribute("data-segment") for s in bar.locator(".segment").all()] == SEGMENTS
    shown = legend(admin)
    assert shown == expected_segments(inspect)
    assert sum(shown.values()) == inspect["context_window"]
    share = 100 * shown["reserve"] / inspect["context_window"]
    reserve = admin.page.locator('.legend.segments li[data-segment="reserve"]')
    expect(reserve).to_contain_text(f"Output reserve {shown['reserve']:,} · {round(share, 1):g}%")
    width = bar.evaluate("bar => bar.clientWidth")
    tools = bar.locator('[data-segment="tools"]').evaluate("s => s.getBoundingClientRect().width")
    assert abs(tools - width * shown["tools"] / inspect["context_window"]) < 1

    admin.box("tool:grep").uncheck()  # the bar follows the boxes before Save
    grep = next(p["tokens"] for p in inspect["tools"] if p["id"] == "tool:grep")
    expect(admin.page.locator('.legend.segments li[data-segment="tools"] .figure')).to_contain_text(
        f"{shown['tools'] - grep:,} ·"
    )


@pytest.mark.parametrize("window", [200_000, 4_000])
def test_the_compaction_mark_stays_visible_whatever_the_bars_colour(
    admin: Admin, api: Api, demo: Demo, window
):
    """On free room (the demo) and over the messages once past the threshold (a small window)."""
    api.call("PATCH", f"/v1/agents/{demo.agent_id}", json={"context_window": window})
    admin.sign_in(demo.owner_key)
    admin.open_context(demo.session_id)
    inspect = api.inspect(demo.session_id)
    assert (inspect["total_after"] > inspect["compact_at"]) == (window == 4_000)
    mark = admin.page.evaluate(AT_MARK)
    assert mark["top"] and mark["width"] >= 4
    assert mark["inside"] == "rgb(255, 255, 255)" and mark["edge"] != mark["inside"]


def rows_shown(admin: Admin) -> list[str]:
    return [row.get_attribute("data-part") for row in admin.page.locator("tr[data-part]").all()]


def test_top_10_by_tokens_is_one_click(admin: Admin, api: Api, demo: Demo):
    admin.sign_in(demo.owner_key)
    admin.open_context(demo.session_id)
    inspect = api.inspect(demo.session_id)
    parts = [p for group in ("system", "tools", "messages") for p in inspect[group]]
    admin.page.get_by_test_id("top").click()
    expect(admin.page.locator("tr[data-part]")).to_have_count(10)
    tokens = {p["id"]: p["tokens"] for p in parts}
    shown = rows_shown(admin)
    assert sorted(tokens[p] for p in shown) == sorted(tokens.values())[-10:]
    for group in ("system", "tools", "messages"):
        rows = admin.page.locator(f'[data-group="{group}"] tr[data-part]').all()
        group_tokens = [tokens[r.get_attribute("data-part")] for r in rows]
        assert group_tokens == sorted(group_tokens, reverse=True)
    admin.page.get_by_role("button", name="Show every part").click()
    expect(admin.page.locator("tr[data-part]")).to_have_count(len(parts))


def test_sort_by_tokens_or_order_and_filter_by_kind_role_tool_and_search(admin: Admin, api: Api, demo: Demo):
    admin.sign_in(demo.owner_key)
    admin.open_context(demo.session_id)
    inspect = api.inspect(demo.session_id)
    page = admin.page
    page.get_by_test_id("sort").select_option("tokens")
    messages = sorted(inspect["messages"], key=lambda p: -p["tokens"])
    expect(page.locator('[data-group="messages"] tr[data-part]').first).to_have_attribute(
        "data-part", messages[0]["id"]
    )
    page.get_by_test_id("sort").select_option("order")
    expect(page.locator('[data-group="messages"] tr[data-part]').first).to_have_attribute(
        "data-part", "message:1"
    )

    page.get_by_test_id("filter-kind").select_option("tool")
    expect(page.locator("tr[data-part]")).to_have_count(len(inspect["tools"]))
    page.get_by_test_id("filter-kind").select_option("")
    page.get_by_test_id("filter-role").select_option("user")
    users = [p["id"] for p in inspect["messages"] if p["role"] == "user"]
    expect(page.locator("tr[data-part]")).to_have_count(len(users))
    assert rows_shown(admin) == users
    page.get_by_test_id("filter-role").select_option("")
    page.get_by_test_id("filter-tool").select_option("write_file")
    expect(page.locator("tr[data-part]")).to_have_count(3)
    assert rows_shown(admin) == ["tool:write_file", "message:2", "message:3"]
    page.get_by_test_id("filter-tool").select_option("")
    page.get_by_test_id("search").fill("thanks, THAT")  # #21 says it, the echo in #22 quotes it
    expect(page.locator("tr[data-part]")).to_have_count(2)
    assert rows_shown(admin) == ["message:21", "message:22"]
    expect(page.locator('[data-group="system"]')).to_contain_text("No part of this group matches.")


def test_on_a_phone_an_opened_part_shows_where_the_user_is(admin: Admin, demo: Demo):
    admin.page.set_viewport_size(PHONE)
    admin.sign_in(demo.owner_key)
    admin.open_context(demo.session_id)
    row = admin.row("message:20")
    row.scroll_into_view_if_needed()
    row.locator("button.link").click()
    detail = admin.page.get_by_test_id("detail")
    expect(detail.get_by_test_id("full")).to_be_visible()
    box = detail.bounding_box()
    assert (
        box is not None
        and 0 <= box["y"] < PHONE["height"]
        and box["y"] + box["height"] <= PHONE["height"] + 1
    )
    assert admin.page.evaluate(
        "() => { const r = document.querySelector('[data-testid=\"full\"]').getBoundingClientRect();"
        " return r.top >= 0 && r.top < window.innerHeight; }"
    )
    assert admin.page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    detail.get_by_role("button", name="Close").click()
    expect(detail).to_be_hidden()


def test_the_history_marks_messages_the_next_call_excludes_or_replaces(admin: Admin, api: Api, demo: Demo):
    path = f"/v1/sessions/{demo.session_id}/context-overrides"
    overrides = [
        {"part": "message:2", "action": "exclude"},
        {"part": "message:5", "action": "replace", "replacement": "Shorter."},
    ]
    api.call("PUT", path, json={"overrides": overrides})
    admin.sign_in(demo.owner_key)
    admin.page.goto(f"/admin/sessions/{demo.session_id}")
    marks = admin.page.locator('[data-testid="next-call"]:visible')
    expect(marks).to_have_count(3)  # the marks come with inspect, after the history
    shown = {
        item.get_attribute("data-seq"): item.get_by_test_id("next-call").inner_text()
        for item in admin.page.locator(".message").all()
        if item.get_by_test_id("next-call").is_visible()
    }
    assert shown == {
        "2": "excluded from the next call",
        "3": "excluded with its tool pair",
        "5": "replaced in the next call",
    }
    assert marks.first.get_attribute("href") == f"/admin/sessions/{demo.session_id}/context"


def test_try_side_by_side_keeps_both_answers_with_the_requests_diff_and_both_usages(
    admin: Admin, api: Api, demo: Demo
):
    admin.sign_in(demo.owner_key)
    admin.open_context(demo.session_id)
    page = admin.page
    try_card = page.get_by_test_id("try")
    column = lambda key: try_card.locator(f'[data-testid="try-answer"][data-column="{key}"]')  # noqa: E731

    try_card.get_by_role("button", name="Try", exact=True).click()  # A: the saved selection
    expect(column("a")).to_contain_text("6 system block(s)")
    admin.box("system:todo").uncheck()  # B: the variant, unsaved
    try_card.get_by_role("button", name="Try", exact=True).click()
    expect(column("b")).to_contain_text("5 system block(s)")
    expect(column("a")).to_contain_text("6 system block(s)")  # the Try did not replace A
    diff = try_card.get_by_test_id("try-diff")
    expect(diff.get_by_test_id("only-b")).to_have_text("system:todo")
    expect(diff.get_by_test_id("only-a")).to_have_text("none")
    # "uncached in · out · cache read · cache write": B's prompt (all but the output) is the shorter
    figures = [
        [int(word.replace(",", "")) for word in u.inner_text().split(" ") if word.replace(",", "").isdigit()]
        for u in try_card.get_by_test_id("try-usage").all()
    ]
    assert len(figures) == 2 and sum(figures[1]) - figures[1][1] < sum(figures[0]) - figures[0][1]
    uncached = figures[1][0] - figures[0][0]
    expect(diff.get_by_test_id("token-diff")).to_contain_text(f"{'+' * (uncached > 0)}{uncached:,} in")

    try_card.get_by_role("textbox").fill("One more question?")
    try_card.get_by_role("button", name="Try", exact=True).click()  # another variant replaces B, never A
    expect(column("b")).to_contain_text('Last user text: "One more question?"')
    expect(column("a")).to_contain_text("6 system block(s)")
    column("b").get_by_role("button", name="Keep as A").click()
    expect(column("a")).to_contain_text('Last user text: "One more question?"')
    expect(column("b")).to_have_count(0)
