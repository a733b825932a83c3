"""The panel at 1,000 messages (measured), on a narrow window, and the screenshots of the learning doc.

The timings are printed; the bounds asserted are generous (a slow CI machine
must pass), they only catch a panel that renders every row or re-renders the
whole table on a toggle. Refresh the screenshots in ``docs/images/`` with::

    HANGO_UPDATE_SCREENSHOTS=1 .venv/bin/python -m pytest tests/browser -k screenshots -p no:cacheprovider
"""

from __future__ import annotations

import os
import shutil
import time
import uuid
from pathlib import Path

import pytest
import sqlalchemy as sa
from playwright.sync_api import expect

from hango.config import REPO_ROOT
from hango.store import TenantStore
from tests.browser.admin import Admin, Api, Demo

pytestmark = pytest.mark.browser

MESSAGES = 1_000
IMAGES = REPO_ROOT / "docs" / "images"

# Click a part's checkbox; milliseconds until the total changed, and until the next frame.
TOGGLE = """async (part) => {
  const box = document.querySelector(`tr[data-part="${part}"] input`);
  const total = document.querySelector('[data-testid="total-after"]');
  const shown = total.textContent;
  const started = performance.now();
  box.click();
  while (total.textContent === shown) await new Promise((done) => setTimeout(done, 0));
  const updated = performance.now() - started;
  await new Promise((done) => requestAnimationFrame(() => done()));
  return { updated, painted: performance.now() - started };
}"""
# Milliseconds from the start of the navigation until an element is in the page.
UNTIL = """async (until) => {
  while (!document.querySelector(until)) await new Promise((done) => setTimeout(done, 5));
  return performance.now();
}"""
# Click an element; milliseconds until another one is in the page.
CLICK_UNTIL = """async ([click, until]) => {
  const started = performance.now();
  document.querySelector(click).click();
  while (!document.querySelector(until)) await new Promise((done) => setTimeout(done, 0));
  return performance.now() - started;
}"""


def _long_session(engine: sa.Engine, api: Api, demo: Demo) -> str:
    """A session of the demo agent holding 1,000 text messages, stored through the store."""
    session = api.call("POST", "/v1/sessions", 201, json={"agent_id": demo.agent_id, "title": "Long"})
    with engine.begin() as conn:
        store = TenantStore(conn, uuid.UUID(demo.tenant_id))
        for seq in range(1, MESSAGES + 1):
            role = "user" if seq % 2 else "assistant"
            text = f"message {seq}: " + "a fairly ordinary sentence about the plan. " * 3
            store.messages.append(uuid.UUID(session["id"]), role, [{"type": "text", "text": text}])
    return session["id"]


def test_the_panel_pages_and_toggles_a_thousand_message_session(
    admin: Admin, api: Api, demo: Demo, engine: sa.Engine, capsys: pytest.CaptureFixture[str]
):
    session_id = _long_session(engine, api, demo)
    started = time.monotonic()
    api.inspect(session_id)
    inspected = time.monotonic() - started
    admin.sign_in(demo.owner_key)

    admin.page.goto(f"/admin/sessions/{session_id}/context", wait_until="commit")
    opened = admin.page.evaluate(UNTIL, '[data-part="message:1"]')
    expect(admin.page.locator('[data-group="messages"] tbody tr')).to_have_count(100)
    expect(admin.page.get_by_test_id("page-label")).to_have_text("1–100 of 1,000")

    toggle = admin.page.evaluate(TOGGLE, "message:50")
    expect(admin.page.get_by_test_id("pending")).to_contain_text("1 unsaved change")
    flipped = admin.page.evaluate(
        CLICK_UNTIL, ['[aria-label="Message pages"] button:last-child', '[data-part="message:101"]']
    )
    expect(admin.row("message:1")).to_have_count(0)

    with capsys.disabled():
        print(
            f"\nContext panel at {MESSAGES:,} messages: open {opened:.0f} ms "
            f"(the inspect request alone: {inspected * 1000:.0f} ms), toggle {toggle['updated']:.1f} ms "
            f"to new totals ({toggle['painted']:.1f} ms to the next frame), next page {flipped:.1f} ms"
        )
    # The times are printed for the reader, never asserted: on a loaded machine they say nothing
    # about the code (scripts/bench/ measures it).


def test_the_panel_reads_on_a_narrow_window(admin: Admin, demo: Demo):
    admin.page.set_viewport_size({"width": 390, "height": 844})
    admin.sign_in(demo.owner_key)
    admin.open_context(demo.session_id)
    assert admin.page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    expect(admin.box("message:21")).to_be_visible()
    expect(admin.page.get_by_test_id("try")).to_be_visible()


def test_screenshots(admin: Admin, demo: Demo, tmp_path: Path):
    """The panel with a saved pair, an unsaved uncheck, an open part and two Try answers side by side; its bar; wide and narrow."""
    page = admin.page
    admin.sign_in(demo.owner_key)
    admin.open_context(demo.session_id)
    admin.box("message:6").uncheck()
    admin.save()
    admin.box("tool:glob").uncheck()
    try_card = page.get_by_test_id("try")
    try_card.get_by_role("textbox").fill('Where are the notes?\n/tool read_file {"path": "/notes.md"}')
    try_card.get_by_role("button", name="Try", exact=True).click()
    expect(page.get_by_test_id("try-answer")).to_be_visible()
    admin.box("system:todo").uncheck()
    try_card.get_by_role("textbox").fill("")
    try_card.get_by_role("button", name="Try", exact=True).click()
    expect(try_card.get_by_test_id("try-diff")).to_be_visible()

    def shoot(name: str, part: str | None = None) -> Path:
        if part:
            admin.row(part).evaluate("row => row.scrollIntoView({block: 'start'})")
        else:
            page.evaluate("window.scrollTo(0, 0)")
        page.screenshot(path=tmp_path / name)
        return tmp_path / name

    shots = [shoot("context-panel.png")]
    page.get_by_label("Totals").screenshot(path=tmp_path / "context-bar.png")
    size = page.viewport_size
    page.set_viewport_size({"width": size["width"], "height": 1600})  # the whole card, drawn
    try_card.screenshot(path=tmp_path / "context-try-side-by-side.png")
    page.set_viewport_size(size)
    shots += [tmp_path / "context-bar.png", tmp_path / "context-try-side-by-side.png"]
    admin.row("message:6").click()
    expect(page.get_by_test_id("detail").get_by_test_id("full")).to_contain_text("read_file")
    shots.append(shoot("context-panel-messages.png", "message:4"))
    page.set_viewport_size({"width": 390, "height": 844})
    shots.append(shoot("context-panel-narrow.png", "message:4"))  # the part opens in a drawer over the rows

    for shot in shots:
        assert shot.read_bytes().startswith(b"\x89PNG")
        if os.environ.get("HANGO_UPDATE_SCREENSHOTS"):
            shutil.copyfile(shot, IMAGES / shot.name)


def test_on_a_phone_the_save_bar_stays_in_view_while_toggling_rows(admin: Admin, demo: Demo):
    page = admin.page
    page.set_viewport_size({"width": 390, "height": 844})
    admin.sign_in(demo.owner_key)
    admin.open_context(demo.session_id)
    save = page.get_by_role("button", name="Save", exact=True)

    admin.box("message:21").uncheck()  # far down the rows: the page scrolls to it
    admin.box("message:17").uncheck()
    page.evaluate("window.scrollTo(0, document.documentElement.scrollHeight)")

    expect(save).to_be_enabled()
    box = save.bounding_box()
    assert box is not None and box["y"] >= 0 and box["y"] + box["height"] <= 844, box
    on_top = "(el) => { const r = el.getBoundingClientRect();"
    on_top += " return document.elementFromPoint(r.x + r.width / 2, r.y + r.height / 2) === el; }"
    assert save.evaluate(on_top)  # not under the rows or a drawer
    admin.save()
    assert not admin.box("message:21").is_checked()
