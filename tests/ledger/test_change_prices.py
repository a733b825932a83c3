"""Issue 49 items 1, 2 and 6: the price shown before a change is the verdict seen after it.

A change's cache price is the next call's expected read without it less the one with it, both
against the prefixes the provider holds (the previous call, within the lifetime), by the one
cache model; a change that restores the cache shows a gain (a negative ``cache_loss_tokens``).
The simulated cache of the offline default decides "cacheable" on the count it reports. A
compaction is priced by the same rule: what it summarizes away is saved, not written again.
"""

from __future__ import annotations

import datetime as dt

from hango.agent.ledger.record import Previous, SentCall
from hango.agent.ledger.simulated_cache import simulated_usage
from hango.agent.ledger.verdict import Outlook, change_cache_loss, expected_read, rules_for
from hango.inspector.cache_outlook import NextCache
from hango.inspector.suggestion_savings import compaction_cache_loss
from hango.messages import Usage
from tests.inspector.conftest import OFFLINE, Lab, excluding, user
from tests.ledger.test_verdicts_and_causes import SYSTEM, TOOLS, part

NOW = dt.datetime(2026, 12, 7, 6, tzinfo=dt.UTC)
LIVE = Outlook("live", minimum=100)
TIME_TOOL = part("tool:time/get_current_time", 300)
MESSAGES = (part("message:1", 200), part("message:2", 200), part("message:3", 200))


def held(call: SentCall) -> Previous:
    """``call`` as the provider holds it: sent a minute ago, reported as estimated."""
    return Previous(call, NOW - dt.timedelta(minutes=1), call.tokens)


def test_a_change_that_restores_the_cache_shows_a_gain_not_a_loss():
    provider_holds = SentCall((*TOOLS, *SYSTEM, *MESSAGES), (3, 6))
    # a server attached since: its tool breaks the prefix at index 2, so the next call reads nothing
    attached = SentCall((*TOOLS, TIME_TOOL, *SYSTEM, *MESSAGES), (4, 7))
    saved_out = SentCall((*TOOLS, *SYSTEM, *MESSAGES), (3, 6))
    previous = held(provider_holds)

    assert expected_read(previous, attached, LIVE) == 0
    assert expected_read(previous, saved_out, LIVE) == provider_holds.tokens
    # leaving the server out restores the cache: a gain of the whole read, not a loss of the request
    assert change_cache_loss(previous, attached, saved_out, LIVE) == -provider_holds.tokens
    # and bringing it back loses that read again
    assert change_cache_loss(previous, saved_out, attached, LIVE) == provider_holds.tokens


def test_a_change_is_priced_against_what_the_provider_holds_not_the_request_it_would_replace():
    provider_holds = SentCall((*TOOLS, *SYSTEM), (3,))
    # the next request grew by three messages the provider never held: changing them loses nothing held
    grown = SentCall((*TOOLS, *SYSTEM, *MESSAGES), (3, 6))
    replaced = SentCall((*TOOLS, *SYSTEM, part("message:1", 20, "2"), *MESSAGES[1:]), (3, 6))

    assert change_cache_loss(held(provider_holds), grown, replaced, LIVE) == 0
    assert change_cache_loss(None, grown, replaced, LIVE) == 0, "before a first call nothing is held"
    expired = Outlook("expired", minimum=100)
    assert change_cache_loss(held(grown), grown, replaced, expired) == 0


def test_a_restoring_change_previewed_through_the_api_shows_a_gain_the_saved_call_reads(lab: Lab):
    agent = lab.agent(model=OFFLINE)
    session = lab.session(agent, [user("hello")])
    assert lab.say(session, "first turn").status_code == 201
    assert lab.put_agent(agent, excluding("tool:grep")).status_code == 200
    broken = lab.inspect(session)["cache"]
    assert (broken["miss_reason"], broken["miss_part"]) == ("prefix_changed", "tool:grep")

    answer = lab.who.post(
        f"/v1/sessions/{session}/context/preview", json={"agent": {"overrides": []}}
    ).get_json()
    pending, restored = answer["pending"], answer["cache"]["expected_read_tokens"]

    assert restored > broken["expected_read_tokens"]
    assert pending["cache_loss_tokens"] == broken["expected_read_tokens"] - restored < 0
    assert pending["usd_cache_loss"] < 0 and pending["break_even_calls"] == 0
    assert lab.put_agent(agent, {"overrides": []}).status_code == 200
    assert lab.inspect(session)["cache"]["expected_read_tokens"] == restored


def test_the_simulated_cache_decides_cacheable_on_the_count_it_reports():
    rules = rules_for("offline")
    minimum = rules.minimum_for("echo")
    above = SentCall((part("tool:ls", minimum + 100),), (0,))
    below = SentCall((part("tool:ls", minimum - 100),), (0,))

    # the stand-in's own character count says the opposite of the estimate each time
    for call, own_count in ((above, minimum - 200), (below, minimum + 200)):
        usage = simulated_usage(
            Usage(input_tokens=own_count), None, call, started_at=NOW, rules=rules, model="echo"
        )
        reported = usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens
        assert reported == call.tokens, "one count: the one the cache model decides on"
        assert (usage.cache_write_tokens > 0) == (reported >= minimum)


def test_the_offline_defaults_minimum_is_its_reference_models_documented_one():
    assert rules_for("offline").minimum_for("echo") == rules_for("anthropic").minimum_for("claude-sonnet-4-6")
    assert rules_for("anthropic").minimum_for("claude-sonnet-4-6") == 1024


def test_would_compact_prices_only_what_is_written_again():
    summarized = (part("message:1", 500), part("message:2", 544))
    kept = (part("message:3", 125),)
    call = SentCall((*TOOLS, *SYSTEM, *summarized, *kept), (3, 6))
    cache = NextCache(held(call), LIVE, rules_for("offline"), "echo", NOW)
    plan = {"summarize": [1, 2], "keep_from": 3, "tokens_summarized": 1044, "previous_summary_tokens": 0}

    # the tools and system blocks are still read; message:3 is written again; messages 1-2 are summarized
    assert compaction_cache_loss(cache, call, plan) == 125
    assert compaction_cache_loss(NextCache(None, LIVE, rules_for("offline"), "echo", NOW), call, plan) == 0
