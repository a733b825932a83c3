"""``hango context calls|call|diff`` at 80 and 120 columns on the demo's calls, and their refusals.

After an intended change to the layout, regenerate the golden files and review the diff::

    HANGO_UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/cli/test_context_calls_golden.py -p no:cacheprovider
"""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path

import pytest

from hango.cli.context_calls import render_call
from hango.cli.context_table import width_of
from tests.support.golden import assert_golden

pytestmark = pytest.mark.server

GOLDEN = Path(__file__).parent / "golden"
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
CALL_START = re.compile(r"^[0-9a-f]{6} ", re.MULTILINE)
TIME = re.compile(r"\d{2}:\d{2}:\d{2}")
DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


def calls_of(hango, session: str) -> list[dict]:
    """The demo session's calls, oldest first, as ``calls --json`` gives them."""
    result = hango("context", "calls", "--session", session, "--json")
    assert result.code == 0, result.err
    return list(reversed(json.loads(result.out)["calls"]))


def normalized(text: str) -> str:
    """The output without what varies between runs: ids, times and dates."""
    text = UUID.sub("<uuid>", text)
    return DATE.sub("<date>", TIME.sub("<time>", CALL_START.sub("<call> ", text)))


@pytest.mark.parametrize("columns", [80, 120])
@pytest.mark.parametrize("name", ["calls", "call", "diff"])
def test_golden_output_of_the_call_commands_at_80_and_120_columns(
    hango, demo_session, monkeypatch, name, columns
):
    session = demo_session["session_id"]
    calls = calls_of(hango, session)
    argv = {
        "calls": ["calls"],
        "call": ["call", calls[-1]["id"][:6]],  # by the start `calls` prints
        "diff": ["diff", calls[0]["id"], calls[-1]["id"]],
    }[name]
    monkeypatch.setenv("COLUMNS", str(columns))

    result = hango("context", argv[0], "--session", session, *argv[1:])

    assert result.code == 0, result.err
    assert max(map(width_of, result.out.splitlines())) <= columns
    assert_golden(GOLDEN / f"context_calls_{name}_{columns}.txt", normalized(result.out))


def test_calls_lists_one_line_per_call_with_its_cost_and_the_sessions_total(hango, demo_session):
    session = demo_session["session_id"]
    calls = calls_of(hango, session)

    out = hango("context", "calls", "--session", session).out.splitlines()

    assert len(out) == 1 + len(calls) + 1  # header, one line per call, the session's cost
    assert all(re.search(r"\$0\.\d{4}", row) for row in out[1:-1])  # offline/echo at simulated prices
    assert re.fullmatch(
        rf"{len(calls)} calls, \$0\.\d+ \(simulated at anthropic/claude-sonnet-4-6 prices\)", out[-1]
    )


def test_json_of_each_call_command_is_the_servers_answer(hango, demo_session):
    session = demo_session["session_id"]
    newest = calls_of(hango, session)[-1]

    shown = json.loads(hango("context", "call", "--session", session, newest["id"], "--json").out)
    compared = json.loads(hango("context", "diff", "--session", session, "last", "next", "--json").out)

    assert shown["id"] == newest["id"] and shown["parts"]
    assert compared["from"] == newest["id"] and compared["to"] == "next"


def test_an_unknown_call_id_is_refused_with_the_servers_not_found(hango, demo_session):
    missing = "00000000-0000-4000-8000-000000000000"

    result = hango("context", "call", "--session", demo_session["session_id"], missing)

    assert result.code == 1 and result.out == ""
    assert "no such call in this session" in result.err


def test_a_call_start_that_matches_no_call_is_a_usage_error_that_says_where_ids_are(hango, demo_session):
    result = hango("context", "diff", "--session", demo_session["session_id"], "zzzz", "next")

    assert result.code == 2
    assert "no call of this session starts with 'zzzz'" in result.err and "hango context calls" in result.err


def test_call_prints_each_parts_cost_on_the_call_and_its_total_so_far_as_the_server_gave_them():
    call = {
        "id": "0" * 8 + "-0000-4000-8000-" + "0" * 12,
        "purpose": "run",
        "model": "anthropic/claude-sonnet-4-6",
        "started_at": "2026-12-01T12:00:00+00:00",
        "usage": {"input_tokens": 10, "cache_read_tokens": 0, "cache_write_tokens": 0, "output_tokens": 1},
        "estimated_input_tokens": 12,
        "cost": {"usd": 0.0001},
        "cache": {"badge": "first", "words": "first call"},
        "removed_since_previous": [],
        "parts": [
            {
                "id": "system:agent",
                "label": "agent",
                "preview": "You are hango",
                "tokens": 10,
                "changed_since_call": False,
                "since_previous": "same",
                "cost_usd": 0.00003,
                "cost_so_far": {"calls": 4, "priced_calls": 4, "usd": 0.00012},
            },
            {
                "id": "message:1",
                "label": "#1 user",
                "preview": None,
                "tokens": 2,
                "changed_since_call": True,
                "since_previous": "added",
                "cost_usd": None,
                "cost_so_far": {"calls": 1, "priced_calls": 0, "usd": None},
            },
        ],
    }

    *_, header, agent, message = render_call(call, 80)

    assert header.split() == ["part", "tokens", "this", "call", "so", "far"]
    assert agent.split()[:4] == ["system:agent", "10", "$0.00003", "$0.00012"]
    assert message.split()[:5] == ["+", "message:1", "2", "–", "–"]


def test_the_call_header_does_not_wrap_at_80_columns_with_millions_of_tokens():
    usage = {
        "input_tokens": 1_234_567,
        "cache_read_tokens": 7_654_321,
        "cache_write_tokens": 1_000_000,
        "output_tokens": 128_000,
    }
    call = {
        "id": "0" * 8 + "-0000-4000-8000-" + "0" * 12,
        "purpose": "context_try",
        "model": "anthropic/claude-sonnet-4-6",
        "started_at": "2026-12-01T12:00:00+00:00",
        "usage": usage,
        "estimated_input_tokens": 9_999_999,
        "cost": {"usd": 12.34},
        "cache": {"badge": "hit", "words": "hit: read the cached prefix"},
        "removed_since_previous": [],
        "parts": [],
    }

    lines = render_call(call, 80)

    assert lines[:5] == [
        "call 00000000-0000-4000-8000-000000000000 · try",
        "anthropic/claude-sonnet-4-6 · 2026-12-01 12:00:00 · cost $12.34",
        "input 9,999,999 estimated · 9,888,888 reported · out 128,000",
        "cache read 7,654,321 · cache write 1,000,000 · uncached 1,234,567",
        "cache hit: hit: read the cached prefix",
    ]
    assert lines[5].split() == ["part", "tokens", "this", "call", "so", "far"]


def shared_start(a: str, b: str) -> str:
    """The characters ``a`` and ``b`` start with alike."""
    same = [x for x, y in itertools.takewhile(lambda pair: pair[0] == pair[1], zip(a, b, strict=False))]
    return "".join(same)


def test_an_ambiguous_call_prefix_lists_the_candidates(hango, demo_session):
    session = demo_session["session_id"]
    ids = sorted(c["id"] for c in calls_of(hango, session))
    # the longest start two calls share (neighbours once sorted), then every call that has it
    start = max((shared_start(a, b) for a, b in itertools.pairwise(ids)), key=len)
    candidates = [i for i in ids if i.startswith(start)]
    assert start and len(candidates) > 1

    result = hango("context", "call", "--session", session, start)

    assert result.code == 2 and result.out == ""
    assert f"{len(candidates)} calls of this session start with {start!r}: " in result.err
    assert all(call_id in result.err for call_id in candidates)
