"""The Context panel in Chromium against a live server: toggles, Save, pairs, 422s, edits, Try."""

from __future__ import annotations

import json
import re

import pytest
from playwright.sync_api import expect

from tests.browser.admin import Admin, Api, Demo, inspect_totals

pytestmark = pytest.mark.browser

# The demo session: 22 messages; #21 is the user's closing "Thanks…", #2 calls write_file and #3 holds its result.
THANKS = "message:21"
THANKS_TEXT = "Thanks, that is all for now."


def test_an_unchecked_message_is_not_sent_but_stays_in_the_history(admin: Admin, api: Api, demo: Demo):
    admin.sign_in(demo.owner_key)
    admin.open_context(demo.session_id)
    stored = len(api.messages(demo.session_id))

    admin.box(THANKS).uncheck()
    admin.save()
    admin.page.get_by_role("link", name="History").click()
    # the page has loaded what it shows, and follows no run, before the message is typed
    expect(admin.page.locator(".message")).to_have_count(stored)
    expect(admin.page.get_by_test_id("live-run")).to_be_hidden()
    admin.page.fill("#new-message", "What comes next?")
    send = admin.page.get_by_role("button", name="Send")
    expect(send).to_be_enabled()
    send.click()
    expect(admin.page.locator(".message").last).to_contain_text('Last user text: "What comes next?"')

    history = api.messages(demo.session_id)
    answer = history[-1]["content"][0]["text"]
    # Stored before, plus the new user message, minus the unchecked one.
    assert f"and {stored} message(s)" in answer
    assert [m["content"][0]["text"] for m in history if m["seq"] == 21] == [THANKS_TEXT]
    sent = api.get(f"/v1/sessions/{demo.session_id}/context", format="request")
    assert THANKS_TEXT not in [block.get("text") for m in sent["messages"] for block in m["content"]]


def test_totals_follow_the_boxes_and_equal_the_inspect_response_after_save(
    admin: Admin, api: Api, demo: Demo
):
    admin.sign_in(demo.owner_key)
    admin.open_context(demo.session_id)
    assert admin.shown_totals() == inspect_totals(api.inspect(demo.session_id))
    before = api.inspect(demo.session_id)

    for part in ("system:todo", "tool:grep", THANKS):
        admin.box(part).uncheck()
    proposed = {
        "agent": {"overrides": [{"part": p, "action": "exclude"} for p in ("system:todo", "tool:grep")]},
        "session": {"overrides": [{"part": THANKS, "action": "exclude"}]},
    }
    preview = api.call("POST", f"/v1/sessions/{demo.session_id}/context/preview", json=proposed)
    # the server's figures, which alone know that leaving grep out rewrites system:filesystem
    assert admin.shown_totals() == inspect_totals(preview)
    assert preview["total_after"] < before["total_after"]
    expect(admin.page.get_by_test_id("pending")).to_contain_text("3 unsaved changes")
    expect(admin.page.get_by_test_id("pending")).not_to_contain_text("counted here")

    admin.save()
    after = api.inspect(demo.session_id)
    assert admin.shown_totals() == inspect_totals(after) == inspect_totals(preview)
    agent_set = api.get(f"/v1/agents/{demo.agent_id}/context-overrides")["overrides"]
    assert [(o["part"], o["action"]) for o in agent_set] == [
        ("system:todo", "exclude"),
        ("tool:grep", "exclude"),
    ]


def test_unchecking_tool_task_shows_system_subagent_left_out_with_its_reason_and_the_servers_after_total(
    admin: Admin, api: Api, demo: Demo
):
    admin.sign_in(demo.owner_key)
    admin.open_context(demo.session_id)

    admin.box("tool:task").uncheck()
    preview = api.call(
        "POST",
        f"/v1/sessions/{demo.session_id}/context/preview",
        json={"agent": {"overrides": [{"part": "tool:task", "action": "exclude"}]}},
    )
    for moment in ("before Save", "after Save"):
        expect(admin.box("system:subagent"), moment).not_to_be_checked()
        expect(admin.badge("system:subagent", "left out with tool:task"), moment).to_be_visible()
        assert admin.figure("total-after") == preview["total_after"], moment
        assert admin.figure("group-system") == preview["totals"]["system"]["after"], moment
        if moment == "before Save":
            admin.save()
    assert api.inspect(demo.session_id)["total_after"] == preview["total_after"]


def test_a_refused_second_half_of_a_save_leaves_both_sets_as_they_were(admin: Admin, api: Api, demo: Demo):
    admin.sign_in(demo.owner_key)
    admin.open_context(demo.session_id)
    admin.box("tool:grep").uncheck()
    admin.box(THANKS).uncheck()
    admin.settled()
    # someone else saves the session's set meanwhile: the panel's ETag of it is stale now
    api.call(
        "PUT",
        f"/v1/sessions/{demo.session_id}/context-overrides",
        json={"overrides": [{"part": THANKS, "action": "exclude"}]},
    )
    agent_before = api.get(f"/v1/agents/{demo.agent_id}/context-overrides")
    session_before = api.get(f"/v1/sessions/{demo.session_id}/context-overrides")

    admin.page.get_by_role("button", name="Save", exact=True).click()

    expect(admin.page.get_by_test_id("save-error")).to_contain_text("Changed elsewhere")
    assert (
        api.get(f"/v1/agents/{demo.agent_id}/context-overrides")
        == agent_before
        == {
            **agent_before,
            "overrides": [],
        }
    )
    assert api.get(f"/v1/sessions/{demo.session_id}/context-overrides") == session_before


def test_a_tool_use_message_takes_its_result_along_and_gives_it_back(admin: Admin, api: Api, demo: Demo):
    admin.sign_in(demo.owner_key)
    admin.open_context(demo.session_id)

    admin.box("message:2").uncheck()
    expect(admin.box("message:3")).not_to_be_checked()
    expect(admin.badge("message:3", "paired with message:2")).to_be_visible()
    admin.box("message:2").check()
    expect(admin.box("message:3")).to_be_checked()
    expect(admin.badge("message:3", "paired with")).to_be_hidden()

    admin.box("message:2").uncheck()
    admin.save()
    expect(admin.page.get_by_test_id("notice")).to_contain_text("message:3")
    expect(admin.badge("message:3", "added by Save")).to_be_visible()
    stored = api.get(f"/v1/sessions/{demo.session_id}/context-overrides")["overrides"]
    assert [(o["part"], o["paired_from"]) for o in stored] == [
        ("message:2", None),
        ("message:3", "message:2"),
    ]

    admin.box("message:3").check()  # re-checking the companion releases the whole pair
    expect(admin.box("message:2")).to_be_checked()
    admin.save()
    assert api.get(f"/v1/sessions/{demo.session_id}/context-overrides")["overrides"] == []


def test_a_rejected_set_shows_the_reason_next_to_the_part(admin: Admin, api: Api, demo: Demo):
    admin.sign_in(demo.owner_key)
    admin.open_context(demo.session_id)

    admin.box("message:1").uncheck()
    admin.page.get_by_role("button", name="Save", exact=True).click()

    expect(admin.row("message:1").get_by_role("alert")).to_contain_text("starts_with_assistant")
    expect(admin.page.get_by_test_id("save-error")).to_contain_text("the first message is the assistant's")
    assert api.get(f"/v1/sessions/{demo.session_id}/context-overrides")["overrides"] == []


def test_editing_a_part_saves_a_replace_and_tools_are_read_only(admin: Admin, api: Api, demo: Demo):
    admin.sign_in(demo.owner_key)
    admin.open_context(demo.session_id)
    detail = admin.page.get_by_test_id("detail")

    admin.row("system:agent").click()
    expect(detail.get_by_test_id("full")).to_contain_text("You are hango's demo agent.")
    detail.get_by_test_id("draft").fill("You are terse.")
    detail.get_by_role("button", name="Save replacement").click()
    expect(detail).to_contain_text("Saved replacement")
    expect(admin.badge("system:agent", "replaced")).to_be_visible()
    stored = api.get(f"/v1/agents/{demo.agent_id}/context-overrides")["overrides"]
    assert [(o["part"], o["action"], o["replacement"]) for o in stored] == [
        ("system:agent", "replace", "You are terse.")
    ]

    admin.row("tool:read_file").click()
    expect(detail.get_by_test_id("schema")).to_contain_text('"path"')
    expect(detail.get_by_test_id("draft")).to_be_hidden()


def test_try_answers_beside_the_table_and_stores_nothing(admin: Admin, api: Api, demo: Demo):
    admin.sign_in(demo.owner_key)
    admin.open_context(demo.session_id)
    history = api.messages(demo.session_id)
    runs = api.get(f"/v1/sessions/{demo.session_id}/runs")["items"]

    admin.box(THANKS).uncheck()  # not saved: the try body carries it
    try_card = admin.page.get_by_test_id("try")
    try_card.get_by_role("textbox").fill('Look again.\n/tool ls {"path": "/"}')
    try_card.get_by_role("button", name="Try", exact=True).click()

    answer = admin.page.get_by_test_id("try-answer")
    expect(answer).to_contain_text(f"and {len(history)} message(s)")  # 22 stored − 1 unchecked + 1 new
    expect(answer).to_contain_text("not executed")
    expect(answer).to_contain_text("tool_use")
    expect(answer.get_by_text(THANKS, exact=True)).to_be_visible()  # listed as excluded
    assert api.messages(demo.session_id) == history
    assert api.get(f"/v1/sessions/{demo.session_id}/runs")["items"] == runs
    assert api.get(f"/v1/sessions/{demo.session_id}/context-overrides")["overrides"] == []


def test_try_reports_an_exhausted_quota(admin: Admin, api: Api, demo: Demo):
    api.call("PATCH", "/v1/tenant", json={"token_quota": 1})
    admin.sign_in(demo.owner_key)
    admin.open_context(demo.session_id)
    admin.page.get_by_test_id("try").get_by_role("button", name="Try", exact=True).click()
    expect(admin.page.get_by_test_id("try-error")).to_contain_text("quota for this month is used up")


@pytest.mark.parametrize(
    ("status", "code", "shown"),
    [(504, "provider_timeout", "No answer in time"), (429, "rate_limited", "Try again in 7 seconds")],
)
def test_try_reports_timeouts_and_rate_limits(admin: Admin, demo: Demo, status: int, code: str, shown: str):
    admin.refuse("**/context/try", status, code)
    admin.sign_in(demo.owner_key)
    admin.open_context(demo.session_id)
    admin.page.get_by_test_id("try").get_by_role("button", name="Try", exact=True).click()
    expect(admin.page.get_by_test_id("try-error")).to_contain_text(shown)


def test_the_panel_works_from_the_keyboard(admin: Admin, demo: Demo):
    admin.sign_in(demo.owner_key)
    admin.open_context(demo.session_id)
    admin.page.get_by_role("link", name="Context").focus()

    for _ in range(10):
        admin.page.keyboard.press("Tab")
        if admin.page.evaluate("document.activeElement.type") == "checkbox":
            break
    focused = admin.page.locator("input:focus")
    expect(focused).to_have_attribute("aria-label", "send system:agent")
    assert admin.page.evaluate("getComputedStyle(document.activeElement).outlineStyle") != "none"

    admin.page.keyboard.press("Space")
    expect(admin.box("system:agent")).not_to_be_checked()
    admin.page.keyboard.press("Enter")
    expect(admin.page.get_by_test_id("detail").get_by_test_id("full")).to_contain_text("demo agent")


def test_save_sends_if_match_and_never_overwrites_a_change_made_elsewhere(admin: Admin, api: Api, demo: Demo):
    admin.sign_in(demo.owner_key)
    admin.open_context(demo.session_id)
    elsewhere = {"overrides": [{"part": "message:4", "action": "exclude"}]}
    api.call("PUT", f"/v1/sessions/{demo.session_id}/context-overrides", json=elsewhere)

    admin.box(THANKS).uncheck()
    admin.page.get_by_role("button", name="Save", exact=True).click()
    expect(admin.page.get_by_test_id("save-error")).to_contain_text("Changed elsewhere")
    stored = api.get(f"/v1/sessions/{demo.session_id}/context-overrides")["overrides"]
    assert [o["part"] for o in stored] == ["message:4"]

    admin.page.get_by_test_id("save-error").get_by_role("button", name="Reload").click()
    expect(admin.box("message:4")).not_to_be_checked()
    expect(admin.box(THANKS)).to_be_checked()
    expect(admin.page.get_by_test_id("save-error")).to_be_hidden()


def test_badges_show_counting_the_last_call_cache_loss_and_compaction(admin: Admin, api: Api, demo: Demo):
    api.call("PATCH", f"/v1/agents/{demo.agent_id}", json={"context_window": 2048})
    inspect = api.inspect(demo.session_id)
    assert inspect["would_compact"]
    admin.sign_in(demo.owner_key)
    admin.open_context(demo.session_id)

    expect(admin.page.get_by_test_id("counted")).to_have_text("counted by estimate")
    last = inspect["last_call"]
    expect(admin.page.get_by_test_id("last-call")).to_have_text(
        re.compile(
            rf"^last call of run {last['run_id'][:8]} \(.+\): "
            rf"estimated {last['estimated']:,} · reported {last['reported']:,}$"
        )
    )
    calls = inspect["calibration"]["calls"]
    expect(admin.page.get_by_test_id("calibrated")).to_have_text(
        f"calibrated {inspect['calibrated_total']:,} (from {calls} call{'s' if calls > 1 else ''})"
    )
    expect(admin.page.get_by_text("would compact", exact=True)).to_be_visible()
    loss = inspect["system"][0]["cache_loss_tokens"]
    expect(admin.badge("system:agent", "cached prefix")).to_have_attribute("title", re.compile(f" {loss:,} "))
    # The offline default caches as its reference model: the last call's message breakpoints lie after the
    # todo list, so changing it loses their cache too, and the badge says what the server priced.
    todo = next(part for part in inspect["system"] if part["id"] == "system:todo")
    assert todo["cached_prefix"]
    expect(admin.badge("system:todo", "cached prefix")).to_have_attribute(
        "title", re.compile(f" {todo['cache_loss_tokens']:,} ")
    )


def test_a_stale_override_is_shown_and_can_be_dropped(admin: Admin, api: Api, demo: Demo):
    memory = "system:memory:/memories/AGENTS.md"
    body = {"overrides": [{"part": memory, "action": "exclude"}]}
    api.call("PUT", f"/v1/agents/{demo.agent_id}/context-overrides", json=body)
    api.call("DELETE", f"/v1/agents/{demo.agent_id}/memory/memories/AGENTS.md", 204)
    admin.sign_in(demo.owner_key)
    admin.open_context(demo.session_id)

    expect(admin.badge(memory, "stale")).to_be_visible()
    expect(admin.box(memory)).not_to_be_checked()
    admin.row(memory).click()
    expect(admin.page.get_by_test_id("detail")).to_contain_text("Its override is kept")
    # A click, not check(): check() reads the box again after its click, and once the preview is in
    # (the part sent again, and absent) the row is gone, so on a fast answer it waited for a row
    # that no longer exists.
    admin.box(memory).click()
    admin.save()
    assert api.get(f"/v1/agents/{demo.agent_id}/context-overrides")["overrides"] == []
    expect(admin.row(memory)).to_have_count(0)


def test_copy_request_puts_the_providers_exact_body_on_the_clipboard(admin: Admin, api: Api, demo: Demo):
    # openai: no token counter to wait for (the live server reaches no provider)
    api.call("PATCH", f"/v1/agents/{demo.agent_id}", json={"model": "openai/gpt-test"})
    admin.page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=admin.url)
    admin.sign_in(demo.owner_key)
    admin.open_context(demo.session_id)

    admin.page.get_by_test_id("copy-request").click()

    expect(admin.page.get_by_test_id("copied")).to_have_text("Copied the openai request body.")
    copied = json.loads(admin.page.evaluate("navigator.clipboard.readText()"))
    assert copied == api.get(f"/v1/sessions/{demo.session_id}/context", format="openai")
    assert copied["model"] == "gpt-test" and copied["messages"][0]["role"] == "system"


def test_an_agent_level_change_states_its_scope_before_and_after_saving(admin: Admin, api: Api, demo: Demo):
    admin.sign_in(demo.owner_key)
    admin.open_context(demo.session_id)
    scope = admin.page.get_by_test_id("scope")
    expect(scope).to_be_hidden()

    admin.box(THANKS).uncheck()
    expect(scope).to_be_hidden()  # a session-level change reaches this session only
    admin.box("system:todo").uncheck()

    expect(scope).to_have_text("Saving changes the agent's parts: applies to 1 session of Demo agent.")
    admin.save()
    expect(admin.page.get_by_test_id("notice")).to_contain_text(
        "The agent's set applies to 1 session of Demo agent."
    )
    expect(scope).to_be_hidden()
