"""Money on every surface, in the CLI: ``show``, ``suggest`` and ``try`` print the server's dollars by the one rule."""

from __future__ import annotations

import json
import re

import pytest

from hango.cli.money import change_price, money, next_call_line

pytestmark = pytest.mark.server


def joined(out: str) -> str:
    """The output with its wrapping undone (a wrapped line continues indented)."""
    return " ".join(line.strip() for line in out.splitlines())


def test_money_on_every_surface_show_prints_the_next_calls_cost_and_cache_verdict(hango, demo_session):
    session = demo_session["session_id"]
    inspect = json.loads(hango("context", "show", "--session", session, "--json").out)
    cost = inspect["next_call_cost"]
    assert cost["usd"] > 0 and cost["simulated_at"] == "anthropic/claude-sonnet-4-6"

    result = hango("context", "show", "--session", session)

    assert (result.code, result.err) == (0, "")
    said = next_call_line(inspect)
    assert said in joined(result.out)
    assert said.startswith(
        f"next call: input {money(cost['usd'])} (simulated at anthropic/claude-sonnet-4-6 prices)"
    )
    assert f" · cache {inspect['cache']['badge']}: {inspect['cache']['words']}" in said


def test_money_on_every_surface_suggest_prints_each_suggestions_dollars_and_break_even(
    hango, demo_session, monkeypatch
):
    monkeypatch.setenv("COLUMNS", "200")
    session = demo_session["session_id"]
    body = json.loads(hango("context", "suggest", "--session", session, "--json").out)
    assert body["suggestions"], "the demo re-reads and edits /notes.md"

    lines = hango("context", "suggest", "--session", session).out.splitlines()

    for item in body["suggestions"]:
        assert f"   {change_price(item)}" in lines
        assert money(item["usd_saved_per_call"]) != "$0.0000"  # a few hundred tokens' saving stays readable
    assert lines[-1] == "dollars simulated at anthropic/claude-sonnet-4-6 prices"


def test_money_on_every_surface_try_prints_what_the_call_cost(hango, demo_session):
    session = demo_session["session_id"]

    tried = json.loads(hango("context", "try", "--session", session, "--json").out)
    result = hango("context", "try", "--session", session)

    assert tried["cost"]["usd"] > 0 and tried["cost"]["simulated_at"] == "anthropic/claude-sonnet-4-6"
    assert result.code == 0, result.err
    costs = [line for line in result.out.splitlines() if line.startswith("cost ")]
    assert len(costs) == 1
    assert re.fullmatch(r"cost \$0\.\d{2,}? \(simulated at anthropic/claude-sonnet-4-6 prices\)", costs[0])
