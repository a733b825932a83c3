"""Issue 37 item 3: cache prices follow every rule of the one cache model.

The minimum (nothing below it is written), a change's loss counting only what is written again,
each change's net price (saved per call, written again once, break-even in calls), a partial read
after a todo change named as the change it is, and a whole-turn try's cost as a number.
"""

from __future__ import annotations

import datetime as dt
import math

import pytest

from hango.agent.ledger.record import Previous, SentCall, SentPart
from hango.agent.ledger.verdict import READ_TOLERANCE, Outlook, change_cache_loss
from hango.agent.scratch import TurnRecord
from hango.inspector.verdict_words import verdict_words
from hango.providers.prices import Prices
from tests.inspector.conftest import Lab, assistant, excluding, user
from tests.inspector.test_suggestions import answered
from tests.ledger.test_verdicts_and_causes import SYSTEM, TOOLS, part, verdict

SONNET = "anthropic/claude-sonnet-4-6"
HAIKU = "anthropic/claude-haiku-4-5"
LIVE = Outlook("live", minimum=100)


def sent(*parts: SentPart, breakpoints: tuple[int, ...]) -> SentCall:
    return SentCall(parts, breakpoints)


def test_a_new_session_below_the_models_minimum_prices_no_cache_write(lab: Lab):
    short = lab.session(lab.agent(model=HAIKU), [user("hello"), assistant("hi")])
    long = lab.session(lab.agent(model=HAIKU), [user("x " * 12_000), assistant("read it")])

    small = lab.who.get(f"/v1/sessions/{short}/context").get_json()
    large = lab.who.get(f"/v1/sessions/{long}/context").get_json()

    assert small["total_after"] < 4_096, "Haiku 4.5 caches prefixes of 4,096 tokens and more"
    assert small["next_call_cost"]["tokens"]["cache_write"] == 0
    assert small["next_call_cost"]["tokens"]["input"] == small["total_after"]
    # above the minimum the first call writes its prefix through the last breakpoint: the whole prompt
    assert large["next_call_cost"]["tokens"]["cache_write"] == large["total_after"]


def test_a_suggestions_cache_loss_counts_only_what_is_written_again_not_the_excluded_part():
    big = part("message:1", tokens=4_470)
    before = sent(*TOOLS, *SYSTEM, big, part("message:2", 210), breakpoints=(3, 5))
    after = sent(*TOOLS, *SYSTEM, part("message:2", 210), breakpoints=(3, 4))

    held = Previous(before, dt.datetime(2026, 12, 7, tzinfo=dt.UTC), before.tokens)

    assert (
        change_cache_loss(held, before, after, LIVE) == 210
    )  # message:2 is written again; message:1 is not sent


def test_a_suggestion_and_a_preview_give_their_net_price_in_money_and_tokens(lab: Lab):
    listing = "/src/a.py\n/src/b.py\n/src/c.py\n" * 40
    history = [
        user("what is in src?"),
        *answered("glob", listing, pattern="*.py", path="/src"),
        assistant("three files " * 400),
        *answered("glob", listing, pattern="**/*.py", path="/src"),
        assistant("still three"),
    ]
    session = lab.session(lab.agent(model=SONNET), history)
    rates = Prices().rates(SONNET)

    (found,) = lab.who.get(f"/v1/sessions/{session}/context/suggestions").get_json()["suggestions"]
    shown = lab.who.post(
        f"/v1/sessions/{session}/context/preview", json={"session": excluding(*found["parts"])}
    )
    pending = shown.get_json()["pending"]

    assert found["cache_loss_tokens"] == 0, "before a first call the provider holds nothing to lose"
    for priced in (found, pending):
        assert priced["usd_saved_per_call"] == pytest.approx(
            rates.usd(priced["tokens_saved"], "cache_read_mtok")
        )
        loss = rates.usd(priced["cache_loss_tokens"], "cache_write_mtok", "cache_read_mtok")
        assert priced["usd_cache_loss"] == pytest.approx(loss)
        assert priced["break_even_calls"] == math.ceil(loss / priced["usd_saved_per_call"])
    assert (pending["tokens_saved"], pending["cache_loss_tokens"]) == (
        found["tokens_saved"],
        found["cache_loss_tokens"],
    )


def test_a_partial_read_after_a_todo_change_is_a_prefix_change_at_system_todo():
    todo = part("system:todo", 50)
    first = sent(*TOOLS, *SYSTEM, todo, part("message:1"), breakpoints=(3, 5))
    changed = sent(*TOOLS, *SYSTEM, part("system:todo", 60, "2"), part("message:1"), breakpoints=(3, 5))
    expected = 400  # the tools and the stable system blocks, through the system breakpoint
    # the provider's count of the partial prefix a little above the estimate scaled from the whole prompt
    reported = round(expected * (1 + READ_TOLERANCE / 2))

    judged = verdict(first, changed, reported=reported)

    assert (judged.expected_read_tokens, judged.miss_reason, judged.miss_part) == (
        expected,
        "prefix_changed",
        "system:todo",
    )
    words = verdict_words({**judged.as_dict(), "reported_read_tokens": reported})
    assert words["badge"] == "miss"
    assert words["words"].startswith(f"read {reported:,} cached tokens, missed the rest: ")
    assert words["words"].endswith("at system:todo")


def test_a_whole_turn_trys_cost_is_a_number_like_each_calls_cost_usd():
    record = TurnRecord(costs=["0.0012", "0.003"])

    assert record.cost() == pytest.approx(0.0042)
    assert isinstance(record.cost(), float)
    assert TurnRecord(costs=["0.0012", None]).cost() is None
