"""The offline default shows the cache and cost features: the demo's calls hit, miss with causes and cost money.

``offline/echo`` stands in for ``anthropic/claude-sonnet-4-6``: its usage is what that model's
cache would report by the one cache model, and its prices are that model's, labelled simulated.
The demo session is seeded by ``hango demo`` (as ``scripts/run`` does) over real PostgreSQL.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
import sqlalchemy as sa

from hango.agent.ledger.causes import NOTHING
from hango.agent.ledger.record import Previous, SentCall
from hango.agent.ledger.simulated_cache import simulated_usage
from hango.agent.ledger.verdict import judge, rules_for
from hango.cli import demo
from hango.config import load_config
from hango.messages import Usage, prompt_tokens
from hango.providers import SIMULATED_MODEL
from hango.providers.base import CacheRules
from hango.providers.prices import Prices, Tokens
from tests.conftest import TEST_RATE_LIMIT
from tests.inspector.conftest import excluding
from tests.ledger.test_verdicts_and_causes import FIRST, SECOND
from tests.support.clients import As

NOW = dt.datetime(2026, 12, 5, 12, tzinfo=dt.UTC)
RULES = rules_for("offline")
ANY_LENGTH = CacheRules(minimum_tokens=0)  # the same cache, caching prefixes of any length


@pytest.fixture
def demo_owner(engine: sa.Engine, database_url: str, client) -> tuple[As, str]:
    """The seeded demo session (as ``scripts/run`` seeds it) and its owner on the app."""
    config = load_config(overrides={"database_url": database_url, "default_rate_limit": TEST_RATE_LIMIT})
    seeded = demo.seed(engine, config)
    return As(client, seeded["owner_key"], seeded["tenant_id"], "", "owner"), seeded["session_id"]


def demo_calls(owner: As, session_id: str) -> list[dict[str, Any]]:
    response = owner.get(f"/v1/sessions/{session_id}/calls?limit=100")
    assert response.status_code == 200, response.get_json()
    return list(reversed(response.get_json()["items"]))


def test_the_offline_default_shows_cache_hits_misses_with_causes_and_money_at_simulated_prices(demo_owner):
    owner, session_id = demo_owner

    calls = demo_calls(owner, session_id)
    cost = owner.get(f"/v1/sessions/{session_id}/cost").get_json()

    hits = [c for c in calls if c["cache"]["badge"] == "hit"]
    misses = [c["cache"] for c in calls if c["cache"]["badge"] == "miss"]
    assert calls[0]["cache"]["miss_reason"] == "first_call"
    assert hits and all(c["usage"]["cache_read_tokens"] >= RULES.minimum_for("echo") for c in hits)
    assert "prefix_changed" in {m["miss_reason"] for m in misses}
    assert any(m["miss_part"] == "system:todo" and m["miss_cause"] == "todos_changed" for m in misses)
    assert any(c["usage"]["cache_write_tokens"] > 0 for c in calls)
    # the prompt the provider counted, summed by the server once (``prompt_tokens``), read by the Calls tab
    assert all(c["usage"]["prompt_tokens"] == prompt_tokens(c["usage"]) > 0 for c in calls)
    assert all(c["cost"]["usd"] > 0 and c["cost"]["simulated_at"] == SIMULATED_MODEL for c in calls)
    assert cost["usd"] == pytest.approx(sum(c["cost"]["usd"] for c in calls))
    assert cost["simulated_at"] == SIMULATED_MODEL and cost["priced_calls"] == len(calls)


def test_a_hit_costs_less_than_the_same_prompt_sent_uncached_at_the_reference_prices(demo_owner):
    owner, session_id = demo_owner
    hit = next(c for c in demo_calls(owner, session_id) if c["cache"]["badge"] == "hit")
    usage = hit["usage"]
    prompt = usage["input_tokens"] + usage["cache_read_tokens"] + usage["cache_write_tokens"]

    uncached = Prices().cost(SIMULATED_MODEL, Tokens(prompt, 0, 0, usage["output_tokens"])).usd

    assert hit["cost"]["usd"] < float(uncached)


def simulate(previous: Previous | None, call: SentCall, rules: CacheRules = ANY_LENGTH) -> Usage:
    """The stand-in's usage for ``call`` after ``previous``, its whole prompt counted as the estimate."""
    return simulated_usage(
        Usage(input_tokens=call.tokens), previous, call, started_at=NOW, rules=rules, model="echo"
    )


def recent(call: SentCall, age: float = 10) -> Previous:
    return Previous(call, NOW - dt.timedelta(seconds=age), reported_prompt=call.tokens)


def test_a_simulated_call_reads_what_the_cache_model_expects_and_writes_the_rest_of_its_cached_prefix():
    expected = judge(
        recent(FIRST), SECOND, started_at=NOW, rules=ANY_LENGTH, model="echo", facts=lambda: NOTHING
    )

    usage = simulate(recent(FIRST), SECOND)

    assert usage.cache_read_tokens == expected.expected_read_tokens == FIRST.tokens
    assert usage.cache_write_tokens == SECOND.tokens - FIRST.tokens and usage.input_tokens == 0


def test_a_simulated_first_call_or_one_after_the_lifetime_reads_nothing_and_writes_its_cached_prefix():
    stale = recent(FIRST, age=ANY_LENGTH.ttl_seconds + 1)

    assert (simulate(None, SECOND).cache_read_tokens, simulate(None, SECOND).cache_write_tokens) == (0, 700)
    assert (simulate(stale, SECOND).cache_read_tokens, simulate(stale, SECOND).cache_write_tokens) == (0, 700)


def test_a_prompt_below_the_reference_models_minimum_is_neither_read_nor_written():
    usage = simulate(recent(FIRST), SECOND, RULES)

    assert SECOND.tokens < RULES.minimum_for("echo")
    assert (usage.cache_read_tokens, usage.cache_write_tokens, usage.input_tokens) == (0, 0, SECOND.tokens)


def test_inspect_suggestions_and_the_preview_name_the_reference_model_of_their_simulated_prices(demo_owner):
    owner, session_id = demo_owner

    inspect = owner.get(f"/v1/sessions/{session_id}/context").get_json()
    suggested = owner.get(f"/v1/sessions/{session_id}/context/suggestions").get_json()["suggestions"]
    pending = owner.post(
        f"/v1/sessions/{session_id}/context/preview", json={"agent": excluding("tool:task")}
    ).get_json()["pending"]

    assert (
        inspect["next_call_cost"]["usd"] > 0 and inspect["next_call_cost"]["simulated_at"] == SIMULATED_MODEL
    )
    assert suggested and all(s["simulated_at"] == SIMULATED_MODEL for s in suggested)
    assert pending["usd_saved_per_call"] > 0 and pending["simulated_at"] == SIMULATED_MODEL
