"""The Context panel's cache warning, on a server whose offline provider follows a prompt cache.

The demo's offline provider has no cache (nothing to lose); ``HANGO_CACHE_RULES`` gives it one
here, so the warning shows the server's price of each change: the preview's ``cache_loss_tokens``,
inspect's per-part figure of the earliest changed part less the parts no longer sent.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from playwright.sync_api import expect

from tests.browser.admin import Admin, Api, Demo
from tests.support.server import gunicorn_server

pytestmark = pytest.mark.browser

THANKS = "message:21"
CACHED = {"HANGO_CACHE_RULES": json.dumps({"offline": {"enabled": True, "minimum_tokens": 0}})}


@pytest.fixture
def live_server(database_url: str) -> Iterator[str]:
    """The live server with a prompt cache for the offline provider."""
    with gunicorn_server(database_url, env=CACHED) as url:
        yield url


def test_before_saving_a_change_that_breaks_the_cached_prefix_the_panel_says_the_cache_tokens_it_costs(
    admin: Admin, api: Api, demo: Demo
):
    inspect = api.inspect(demo.session_id)
    cached = [p for p in (*inspect["tools"], *inspect["system"]) if p["cached_prefix"] and p["included"]]
    first, late = cached[0], cached[-1]  # the prefix's first part costs all of it, later ones less
    assert first["cache_loss_tokens"] > late["cache_loss_tokens"] > 0
    admin.sign_in(demo.owner_key)
    admin.open_context(demo.session_id)
    note = admin.page.get_by_test_id("cache-loss")

    def says(tokens: int) -> None:
        expect(note).to_have_text(
            f"Saving breaks the cached prompt prefix: the next call no longer reads {tokens:,} tokens "
            "from the cache (they are written to it again)."
        )

    def priced(*parts: str) -> int:
        """The preview's price of leaving ``parts`` out (tools and system blocks are the agent's)."""
        body = {route: {"overrides": []} for route in ("agent", "session")}
        for part in parts:
            route = "session" if part.startswith("message:") else "agent"
            body[route]["overrides"].append({"part": part, "action": "exclude"})
        loss = api.call("POST", f"/v1/sessions/{demo.session_id}/context/preview", json=body)["pending"]
        return loss["cache_loss_tokens"]

    admin.box(THANKS).uncheck()  # the last message: what the cache holds after it is lost too
    says(priced(THANKS))
    admin.box(THANKS).check()
    expect(note).to_be_hidden()
    admin.box(late["id"]).uncheck()
    says(priced(late["id"]))
    admin.box(first["id"]).uncheck()
    says(priced(late["id"], first["id"]))  # the earliest change decides
    assert priced(late["id"], first["id"]) > priced(late["id"]) > 0
    admin.box(first["id"]).check()
    says(priced(late["id"]))
    admin.page.get_by_role("button", name="Discard").click()
    expect(note).to_be_hidden()
