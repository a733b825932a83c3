"""The benchmark against Letta gives Letta the conversation that hango inspects: the same messages, in
the same order, with the same roles, texts and tool calls.

Only the mapping to Letta's message records (``letta_records`` in ``scripts/bench/letta.py``) is
checked here: it runs without Letta installed, and installs nothing.
"""

from __future__ import annotations

import itertools
import json
import random
from typing import Any

from scripts.bench.history import history
from scripts.bench.letta import letta_records

ITEMS = history(random.Random(1_000), 1_000)
RECORDS = letta_records(ITEMS)


def as_hango(record: dict[str, Any]) -> dict[str, Any]:
    """A Letta record read back as one of hango's messages: the inverse of the mapping."""
    texts = [{"type": "text", "text": text} for text in record["texts"]]
    uses = [
        {
            "type": "tool_use",
            "id": c["id"],
            "name": c["function"]["name"],
            "input": json.loads(c["function"]["arguments"]),
        }
        for c in record["tool_calls"]
    ]
    results = [
        {
            "type": "tool_result",
            "tool_use_id": r["tool_call_id"],
            "content": r["func_response"],
            "is_error": r["status"] == "error",
        }
        for r in record["tool_returns"]
    ]
    role = "user" if record["role"] == "tool" else record["role"]
    return {"role": role, "content": texts + uses + results}


def test_letta_gets_one_record_per_message() -> None:
    assert len(RECORDS) == len(ITEMS) == 1_000


def test_the_records_read_back_as_the_same_conversation() -> None:
    assert [as_hango(r) for r in RECORDS] == ITEMS


def test_each_tool_message_answers_every_call_of_the_assistant_message_before_it() -> None:
    answered = [(before, r) for before, r in itertools.pairwise(RECORDS) if r["role"] == "tool"]

    for before, record in answered:
        calls = [c["id"] for c in before["tool_calls"]]
        assert [r["tool_call_id"] for r in record["tool_returns"]] == calls
        assert record["tool_call_id"] == calls[0]
        assert record["name"] == before["tool_calls"][0]["function"]["name"]
    assert answered


def test_the_conversation_holds_parallel_calls_and_failed_tools_as_letta_stores_them() -> None:
    tool_messages = [r for r in RECORDS if r["role"] == "tool"]

    assert any(len(r["tool_returns"]) > 1 for r in tool_messages)
    assert any(ret["status"] == "error" for r in tool_messages for ret in r["tool_returns"])
    assert all(not r["texts"] and not r["tool_calls"] for r in tool_messages)
    assert {r["role"] for r in RECORDS} == {"user", "assistant", "tool"}
