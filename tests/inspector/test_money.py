"""Money on every surface, in the API: the next call's cost and verdict in words, and a try's cost."""

from __future__ import annotations

import json

import pytest

from hango.messages import Message, Response, TextBlock, Usage
from hango.providers.prices import Tokens, prices_of
from tests.inspector.conftest import ANTHROPIC, ONE_TOOL_CALL, Lab

# The test model's rates (USD per million tokens): the price table does not know it.
RATES = json.dumps(
    {ANTHROPIC: {"input_mtok": 3, "output_mtok": 15, "cache_read_mtok": 0.3, "cache_write_mtok": 3.75}}
)


@pytest.fixture
def lab(make_lab) -> Lab:
    return make_lab(prices=RATES)


def test_money_on_every_surface_a_try_answers_its_cost_as_the_calls_ledger_prices_that_call(lab: Lab):
    session = lab.session(lab.agent(), ONE_TOOL_CALL)
    usage = Usage(input_tokens=1200, output_tokens=80, cache_read_tokens=0, cache_write_tokens=900)
    lab.fake.reply(Response(Message("assistant", (TextBlock("tried"),)), "end_turn", usage))

    tried = lab.try_(session)

    assert tried.status_code == 200, tried.get_json()
    cost = tried.get_json()["cost"]
    (call,) = lab.who.get(f"/v1/sessions/{session}/calls").get_json()["items"]
    assert call["purpose"] == "context_try"
    assert cost == call["cost"]  # the same dollars, source and reason as the ledger's row of the call
    expected = prices_of(RATES).cost(tried.get_json()["model"], Tokens(1200, 0, 900, 80))
    assert cost["usd"] == float(expected.usd) > 0


def test_money_on_every_surface_the_next_calls_cost_is_what_the_call_then_costs_when_the_usage_is_as_predicted(
    lab: Lab,
):
    session = lab.session(lab.agent(), ONE_TOOL_CALL)
    ahead = lab.inspect(session)
    predicted = ahead["next_call_cost"]
    tokens = predicted["tokens"]
    # the provider reports exactly the predicted input (the estimate right): the call costs the prediction
    usage = Usage(tokens["input"], 0, tokens["cache_read"], tokens["cache_write"])
    lab.fake.reply(Response(Message("assistant", (TextBlock("sent"),)), "end_turn", usage))

    tried = lab.try_(session, {"message": "next"})

    assert tried.status_code == 200, tried.get_json()
    assert predicted["usd"] is not None and predicted["usd"] > 0
    assert tried.get_json()["cost"]["usd"] == predicted["usd"]


def test_money_on_every_surface_inspect_says_the_next_calls_cache_verdict_in_words(lab: Lab):
    session = lab.session(lab.agent(), ONE_TOOL_CALL)

    cache = lab.inspect(session)["cache"]

    assert (cache["outlook"], cache["miss_reason"]) == ("first_call", "first_call")
    assert (cache["badge"], cache["words"]) == (
        "first",
        "nothing was cached yet: the first call of its lineage",
    )
