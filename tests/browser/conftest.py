"""Fixtures of the browser tests: a live server on the test database, the seeded demo, Debian's Chromium."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import sqlalchemy as sa
from playwright.sync_api import Browser, expect, sync_playwright

from hango.cli import demo as demo_cli
from hango.config import load_config
from tests.browser.admin import Admin, Api, Demo
from tests.conftest import TEST_RATE_LIMIT

# A message's run goes through the queue and a worker, and the page polls its steps: on a
# loaded 2-core machine that can take longer than Playwright's default 5 s wait.
expect.set_options(timeout=30_000)

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
DESKTOP = {"width": 1280, "height": 800}


@pytest.fixture(scope="session")
def browser() -> Iterator[Browser]:
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture
def demo(engine: sa.Engine, database_url: str, clean_db: None) -> Demo:
    """The demo tenant as ``hango demo`` seeds it (keys with the tests' high rate limit)."""
    config = load_config(overrides={"database_url": database_url, "default_rate_limit": TEST_RATE_LIMIT})
    return Demo(**demo_cli.seed(engine, config))


@pytest.fixture
def admin(browser: Browser, live_server: str, clean_db: None) -> Iterator[Admin]:
    """A fresh browser tab at 1280×800; fails the test if the page threw or Alpine complained.

    It needs ``clean_db`` so that the tab closes before the tables are emptied: a page still
    polling would otherwise meet 404s for what the test made and report them as its errors.
    """
    context = browser.new_context(viewport=DESKTOP, base_url=live_server)
    tab = Admin(context.new_page(), live_server)
    yield tab
    context.close()
    assert tab.errors == [], "the page raised errors"


@pytest.fixture
def api(live_server: str, demo: Demo) -> Iterator[Api]:
    """The live server's API as the demo owner."""
    with Api(live_server, demo.owner_key) as client:
        yield client
