"""Property tests of the inspector through the API, against a fake Anthropic that enforces the real rules.

For random histories and random override sets, a PUT either answers 422 with a
reason or stores a set after which every request hango sends passes the Messages
API's pairing and first-message rules. The same for try bodies, and for stored
sets that went bad when new messages arrived. The fake provider judges every
request with ``anthropic_rules`` and the ledger must hold 0 invalid ones.
"""

from __future__ import annotations

import dataclasses
import logging
import os
from collections.abc import Iterator
from typing import Any

import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st

from hango.providers import close_providers
from tests.fakes.anthropic_cache import AnthropicCache
from tests.fakes.provider_server import TEST_API_KEY, FakeProviderServer
from tests.reliability.anthropic_rules import Ledger
from tests.reliability.figures import record
from tests.reliability.histories import (
    History,
    agent_sets,
    continuation,
    histories,
    session_sets,
    store_messages,
    try_bodies,
)
from tests.support.clients import As, Tenant

MODEL = "anthropic/claude-fake-1"
REASONS = {
    "malformed_part",
    "wrong_target",
    "replace_not_allowed_for_tools",
    "replacement_required",
    "replacement_not_allowed",
    "replace_needs_text",
    "duplicate_part",
    "unknown_part",
    "no_user_message",
    "starts_with_assistant",
    "unanswered_tool_use",
    "orphan_tool_result",
    "unknown_paired_from",
}
PROPERTY = settings(
    max_examples=int(os.environ.get("HANGO_PROPERTY_EXAMPLES", "60")),
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@dataclasses.dataclass
class Judged:
    """The owner on an app whose Anthropic agents call the judging fake, and what was sent there."""

    who: As
    engine: sa.Engine
    ledger: Ledger
    provider: FakeProviderServer
    fallbacks: FallbackCounter
    name: str
    counts: dict[str, int] = dataclasses.field(default_factory=dict)
    seen: int = 0

    def count(self, name: str) -> None:
        self.counts[name] = self.counts.get(name, 0) + 1

    def session_with(self, history: History, agent_overrides: list[dict[str, Any]] | None = None) -> str:
        """A new agent and session holding ``history`` (written as runs would have)."""
        agent = self.who.post(
            "/v1/agents", json={"name": "judged", "model": MODEL, "system_prompt": "Be kind."}
        )
        assert agent.status_code == 201, agent.get_json()
        agent_id = agent.get_json()["id"]
        if agent_overrides is not None:
            self.put(f"/v1/agents/{agent_id}/context-overrides", agent_overrides)
        session = self.who.post("/v1/sessions", json={"agent_id": agent_id})
        assert session.status_code == 201, session.get_json()
        session_id = session.get_json()["id"]
        self.append(session_id, list(history.messages), history.summary_through)
        return session_id

    def append(self, session_id: str, messages: list[dict[str, Any]], summary_through: int = 0) -> None:
        store_messages(self.engine, self.who.tenant_id, session_id, messages, summary_through)

    def put(self, path: str, overrides: list[dict[str, Any]]) -> bool:
        """PUT a set: True when stored; a refusal must be 422 with a known reason and the parts."""
        response = self.who.put(path, json={"overrides": overrides})
        self.count("puts")
        if response.status_code == 422:
            error = response.get_json()["error"]
            assert error["code"] in REASONS | {"invalid", "nul_character"}, error
            assert error["code"] not in REASONS or error["details"]["parts"], error
            self.count("refused")
            return False
        assert response.status_code == 200, response.get_json()
        return True

    def run(self, session_id: str) -> None:
        """One run: it must complete, so the fake accepted every call it made."""
        response = self.who.post_and_wait(
            f"/v1/sessions/{session_id}/messages", json={"content": "next question"}
        )
        self.count("runs")
        assert response.status_code == 201, response.get_json()

    def try_(self, session_id: str, body: dict[str, Any]) -> None:
        response = self.who.post(f"/v1/sessions/{session_id}/context/try", json=body)
        self.count("tries")
        assert response.status_code in (200, 422), response.get_json()
        if response.status_code == 422:
            self.count("tries_refused")
            assert response.get_json()["error"]["code"] in REASONS | {"invalid", "nul_character"}, (
                response.get_json()
            )

    def start(self) -> None:
        """Begin one example: its verdicts are the ones after this point."""
        self.seen = len(self.ledger.invalid)

    def assert_all_valid(self) -> None:
        new = self.ledger.invalid[self.seen :]
        assert new == [], new[0]


@pytest.fixture
def judging_fake() -> Iterator[FakeProviderServer]:
    """A judging fake per test, so each test's verdicts are its own whatever ran before it.

    It is the strict fake (``anthropic_rules``) with Anthropic's prompt cache
    (``tests/fakes/anthropic_cache.py``): every answer reports the cache reads a faithful
    provider would, so the ledger's verdicts can be held to them.
    """
    with FakeProviderServer(validator=Ledger(), cache=AnthropicCache()) as server:
        yield server
        close_providers()


@pytest.fixture
def judged(
    make_app,
    acme: Tenant,
    engine: sa.Engine,
    judging_fake: FakeProviderServer,
    request: pytest.FixtureRequest,
) -> Iterator[Judged]:
    ledger = judging_fake.validator
    app = make_app(anthropic_base_url=judging_fake.anthropic_base_url, anthropic_api_key=TEST_API_KEY)
    fallbacks = FallbackCounter()
    judge = Judged(
        dataclasses.replace(acme.owner, client=app.test_client()),
        engine,
        ledger,
        judging_fake,
        fallbacks,
        request.node.name,
    )
    logging.getLogger(FALLBACK_LOGGER).addHandler(fallbacks)
    try:
        yield judge
    finally:
        logging.getLogger(FALLBACK_LOGGER).removeHandler(fallbacks)
    record(
        f"properties/{request.node.name}",
        examples=PROPERTY.max_examples,
        fallbacks=fallbacks.count,
        **judge.counts,
    )


FALLBACK_LOGGER = "hango.agent.middleware.overrides"


class FallbackCounter(logging.Handler):
    """Counts the runtime's 'stored set went bad, sent without it' errors."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        self.count += 1


def checked_alone(judged: Judged, examples) -> int:
    """Run a property's ``examples`` and check what this test alone sent; the requests it judged."""
    before = judged.ledger.checked
    examples()
    checked = judged.ledger.checked - before
    record(f"properties/{judged.name}/judged", checked_requests=checked)
    assert checked > 0, "the property sent no request to the judging fake"
    assert judged.ledger.invalid == []
    return checked


def test_a_stored_set_is_refused_with_a_reason_or_every_later_request_is_valid(judged: Judged):
    @seed(101)
    @PROPERTY
    @given(data=st.data(), history=histories())
    def examples(data, history):
        judged.start()
        session_id = judged.session_with(history, data.draw(agent_sets()))
        if judged.put(f"/v1/sessions/{session_id}/context-overrides", data.draw(session_sets(history))):
            judged.run(session_id)
        judged.try_(session_id, data.draw(try_bodies(history)))
        judged.assert_all_valid()

    checked_alone(judged, examples)


def test_a_try_body_is_refused_with_a_reason_or_sends_a_valid_request(judged: Judged):
    @seed(202)
    @PROPERTY
    @given(data=st.data(), history=histories())
    def examples(data, history):
        judged.start()
        session_id = judged.session_with(history)
        for _ in range(2):
            judged.try_(session_id, data.draw(try_bodies(history)))
        judged.assert_all_valid()

    checked_alone(judged, examples)


def test_a_set_that_went_bad_after_new_messages_never_reaches_the_provider(judged: Judged):
    @seed(303)
    @PROPERTY
    @given(data=st.data(), history=histories())
    def examples(data, history):
        judged.start()
        session_id = judged.session_with(history)
        if not judged.put(f"/v1/sessions/{session_id}/context-overrides", data.draw(session_sets(history))):
            return
        judged.append(session_id, data.draw(continuation(history)))
        judged.run(session_id)
        judged.try_(session_id, data.draw(try_bodies(history)))
        judged.assert_all_valid()

    checked_alone(judged, examples)
    # Sets are screened against the next request itself (the dangling tool_use repair included) and
    # name only parts that exist, so a stored set rarely goes bad any more: the fallback has its own
    # test (tests/inspector/test_runs.py), here it is only counted.
