"""Driving the admin page (one browser tab) and checking through the live server's API."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import requests
from playwright.sync_api import ConsoleMessage, Locator, Page, Route, expect

from tests.support.queue import finished_over_http


@dataclass(frozen=True)
class Demo:
    """What ``hango demo`` seeded: the tenant, its owner's and member's keys, the agent and session."""

    tenant_id: str
    owner_key: str
    member_key: str
    agent_id: str
    session_id: str


class Api:
    """The public API of the live server, as one key."""

    def __init__(self, url: str, key: str) -> None:
        self.url = url
        self.http = requests.Session()
        self.http.headers["Authorization"] = f"Bearer {key}"

    def __enter__(self) -> Api:
        return self

    def __exit__(self, *exc: object) -> None:
        self.http.close()

    def call(self, method: str, path: str, status: int = 200, **kw: Any) -> Any:
        response = self.http.request(method, self.url + path, timeout=60, **kw)
        assert response.status_code == status, response.text
        return response.json() if response.content else None

    def post_and_wait(self, path: str, status: int = 201, **kw: Any) -> Any:
        """``POST .../messages``, then its run polled to the end (``tests.support.queue``)."""
        sent = self.http.post(self.url + path, timeout=60, **kw)
        finished = finished_over_http(lambda tail: self.http.get(self.url + tail, timeout=60), sent)
        assert finished.status_code == status, finished.json()
        return finished.json()

    def get(self, path: str, **params: Any) -> Any:
        return self.call("GET", path, params=params)

    def inspect(self, session_id: str) -> dict[str, Any]:
        return self.get(f"/v1/sessions/{session_id}/context")

    def messages(self, session_id: str) -> list[dict[str, Any]]:
        return self.get(f"/v1/sessions/{session_id}/messages", limit=10_000)["items"]


class Admin:
    """One tab of the admin page; ``errors`` collects uncaught exceptions and Alpine's complaints."""

    def __init__(self, page: Page, url: str) -> None:
        self.page = page
        self.url = url
        self.errors: list[str] = []
        page.on("pageerror", lambda error: self.errors.append(str(error)))
        page.on("console", self._console)

    def _console(self, message: ConsoleMessage) -> None:
        if "Alpine" in message.text:
            self.errors.append(message.text)

    def sign_in(self, key: str) -> None:
        """Sign in through the form and land on the sessions list."""
        self.page.goto("/admin/")
        self.page.fill("#api-key", key)
        self.page.click("button[type=submit]")
        expect(self.page).to_have_url(re.compile(r"/admin/sessions$"))
        self.page.wait_for_load_state()  # Alpine has bound the forms: typing is kept

    def refuse(self, url: str, status: int, code: str) -> None:
        """Answer every request to ``url`` (a glob) with this error, as the server words one, and ``Retry-After: 7``."""

        def answer(route: Route) -> None:
            body = {"error": {"code": code, "message": "refused", "details": None}}
            route.fulfill(status=status, json=body, headers={"Retry-After": "7"})

        self.page.route(url, answer)

    def open_context(self, session_id: str) -> None:
        """Open a session's Context panel and wait for its parts."""
        self.page.goto(f"/admin/sessions/{session_id}/context")
        expect(self.row("system:agent")).to_be_visible()

    def row(self, part: str) -> Locator:
        return self.page.locator(f'tr[data-part="{part}"]')

    def box(self, part: str) -> Locator:
        return self.row(part).locator("input[type=checkbox]")

    def badge(self, part: str, text: str) -> Locator:
        """A part's badge (shown or hidden) whose text contains ``text``."""
        return self.row(part).locator(".badge", has_text=text)

    def settled(self) -> None:
        """Wait until the panel shows the server's answer to the latest change (no preview under way)."""
        self.page.wait_for_function(
            "() => { const el = document.querySelector('[x-data=contextPanel]');"
            " return el && !Alpine.$data(el).previewing; }",
            timeout=30_000,
        )

    def figure(self, name: str) -> int:
        """A figure the panel shows (``total-after``, ``group-messages``…) as a number, once settled."""
        self.settled()
        text = self.page.get_by_test_id(name).inner_text()
        return int(text.split(" ")[0].replace(",", ""))

    def save(self) -> None:
        """Press Save and wait until the panel has reloaded what the server stored."""
        self.page.get_by_role("button", name="Save", exact=True).click()
        expect(self.page.get_by_test_id("notice")).to_contain_text("Saved.")

    def shown_totals(self) -> dict[str, int]:
        names = ("total-before", "total-after", "free", "group-system", "group-tools", "group-messages")
        return {name: self.figure(name) for name in names}


def inspect_totals(inspect: dict[str, Any]) -> dict[str, int]:
    """The figures of an inspect response, named as the panel names them."""
    groups = {f"group-{name}": inspect["totals"][name]["after"] for name in ("system", "tools", "messages")}
    return {
        "total-before": inspect["total_before"],
        "total-after": inspect["total_after"],
        "free": inspect["free"],
        **groups,
    }
