"""Money on every surface: the panel writes the server's dollars by the CLI's one rule, in the CLI's words.

On a server whose offline provider follows a prompt cache (as in ``test_cache_warning``), so the
next call has a verdict and a change has a cache price. Each figure is read from the API, written
by the CLI's functions (``hango/cli/money.py``) and compared with the panel's text.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from playwright.sync_api import expect

from hango.cli.money import change_price, money, next_call_line, priced
from tests.browser.admin import Admin, Api, Demo
from tests.support.server import gunicorn_server

pytestmark = pytest.mark.browser

THANKS = "message:21"
CACHED = {"HANGO_CACHE_RULES": json.dumps({"offline": {"enabled": True, "minimum_tokens": 0}})}
# Figures where a rounding rule shows: ties on the exact binary value, carries to the next power of
# ten and to a dollar, tiny shares of a cent, whole dollars, the "$0.00718605".
FIGURES = [
    0.0, 0.00718605, 0.0036, 0.5, 0.015625, 0.03125, 0.0000375, 3e-7, 1.2e-9, 0.99996, 0.999949,
    0.0099995, 1.0, 1.125, 12.345, 1234.5678, 0.1, 0.2 + 0.1, 0.00012345, -0.0042, None,
]  # fmt: skip


@pytest.fixture
def live_server(database_url: str) -> Iterator[str]:
    """The live server with a prompt cache for the offline provider."""
    with gunicorn_server(database_url, env=CACHED) as url:
        yield url


def test_money_on_every_surface_the_panel_rounds_every_figure_as_the_cli_does(admin: Admin, demo: Demo):
    admin.sign_in(demo.owner_key)
    admin.open_context(demo.session_id)

    shown = admin.page.evaluate("(figures) => figures.map((usd) => hango.money(usd))", FIGURES)

    assert shown == [money(usd) for usd in FIGURES]
    assert shown[1:3] == ["$0.007186", "$0.0036"]  # one rule: no "$0.00718605" beside "$0.0036"


def test_money_on_every_surface_the_context_header_says_the_next_calls_cost_and_verdict_as_the_cli(
    admin: Admin, api: Api, demo: Demo
):
    inspect = api.inspect(demo.session_id)
    assert inspect["cache"]["badge"] == "hit" and inspect["next_call_cost"]["usd"] > 0
    admin.sign_in(demo.owner_key)
    admin.open_context(demo.session_id)

    line = next_call_line(inspect)  # what `hango context show` prints (wrapped to the terminal)
    expect(admin.page.get_by_test_id("next-call")).to_have_text(line)
    assert money(inspect["next_call_cost"]["usd"]) in line and inspect["cache"]["words"] in line


def test_money_on_every_surface_the_optimize_card_prices_each_suggestion_as_the_cli(
    admin: Admin, api: Api, demo: Demo
):
    admin.sign_in(demo.owner_key)
    admin.open_context(demo.session_id)
    admin.page.get_by_test_id("suggest").click()
    expected = api.get(f"/v1/sessions/{demo.session_id}/context/suggestions")["suggestions"]
    assert expected and all(s["usd_saved_per_call"] > 0 for s in expected)

    items = admin.page.get_by_test_id("suggestion")
    expect(items).to_have_count(len(expected))
    for index, item in enumerate(expected):
        said = change_price(item)  # the line `hango context suggest` prints under the suggestion
        expect(items.nth(index).get_by_test_id("price")).to_have_text(said)
        assert said.startswith(
            f"{money(item['usd_saved_per_call'])} a call, {money(item['usd_cache_loss'])} once"
        )


def test_money_on_every_surface_the_pending_change_says_its_price_as_the_preview_answers_it(
    admin: Admin, api: Api, demo: Demo
):
    body = {"agent": {"overrides": []}, "session": {"overrides": [{"part": THANKS, "action": "exclude"}]}}
    pending = api.call("POST", f"/v1/sessions/{demo.session_id}/context/preview", json=body)["pending"]
    assert pending["usd_cache_loss"] > 0 and pending["break_even_calls"] is not None
    admin.sign_in(demo.owner_key)
    admin.open_context(demo.session_id)

    admin.box(THANKS).uncheck()

    simulated = f" (simulated at {pending['simulated_at']} prices)"
    expect(admin.page.get_by_test_id("change-price")).to_have_text(
        f"Saving it: {change_price(pending)}{simulated}."
    )
    admin.page.get_by_role("button", name="Discard").click()
    expect(admin.page.get_by_test_id("change-price")).to_be_hidden()


def test_money_on_every_surface_a_try_shows_its_cost_as_the_api_answers_it(admin: Admin, demo: Demo):
    admin.sign_in(demo.owner_key)
    admin.open_context(demo.session_id)
    try_card = admin.page.get_by_test_id("try")
    try_card.get_by_role("textbox").fill("What is still open?")

    with admin.page.expect_response("**/context/try") as answered:
        try_card.get_by_role("button", name="Try", exact=True).click()

    cost = answered.value.json()["cost"]
    assert cost["usd"] > 0 and cost["simulated_at"] == "anthropic/claude-sonnet-4-6"
    expect(admin.page.get_by_test_id("try-cost")).to_have_text(priced(cost["usd"], cost["simulated_at"]))
