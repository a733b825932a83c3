"""Cache verdicts against a fake provider that reports cache reads: per call, on chat spans, and in inspect."""

from __future__ import annotations

import json

from hango.messages import Message, Response, TextBlock, Usage
from hango.telemetry import names
from tests.inspector.conftest import assistant, excluding, user
from tests.inspector.test_calibration import calls as usage_rows
from tests.ledger.helpers import LONG_PROMPT, listed_calls, oldest_first
from tests.runtime.chat import tool_call


def answer(text: str, cache_read: int) -> Response:
    """A scripted answer whose usage reports ``cache_read`` tokens read from the prompt cache."""
    return Response(Message("assistant", (TextBlock(text),)), "end_turn", Usage(10, 5, cache_read, 0))


def calling(cache_read: int) -> Response:
    return Response(tool_call("toolu_1", "ls", {}), "tool_use", Usage(10, 5, cache_read, 0))


def verdicts(lab, session: str) -> list[dict]:
    """Each call's verdict figures, oldest first (without the words, pinned in ``test_verdict_words``)."""
    return [
        {k: v for k, v in c["cache"].items() if k not in ("badge", "words")}
        for c in oldest_first(lab, session)
    ]


def long_session(lab, **agent_fields) -> tuple[str, str]:
    agent = lab.agent(system_prompt=LONG_PROMPT, **agent_fields)
    return agent, lab.session(agent, [user("hello"), assistant("hi")])


def test_a_turn_that_reads_what_it_should_has_no_miss_and_the_first_call_is_first_call(lab) -> None:
    _, session = long_session(lab)
    lab.fake.reply(calling(0), answer("two files", 1_000_000))

    assert lab.say(session, "what is in /?").status_code == 201

    first, second = verdicts(lab, session)
    assert (first["expected_read_tokens"], first["miss_reason"]) == (0, "first_call")
    assert second["expected_read_tokens"] > 1024 and second["miss_reason"] is None
    assert second["reported_read_tokens"] == 1_000_000


def test_a_provider_reading_less_than_expected_is_unexplained(lab) -> None:
    _, session = long_session(lab)
    lab.fake.reply(calling(0), answer("two files", 0))

    lab.say(session, "what is in /?")

    assert verdicts(lab, session)[1]["miss_reason"] == "unexplained"


def test_a_full_cache_hit_is_judged_a_miss_no_more_when_the_estimate_errs_high(lab) -> None:
    _, session = long_session(lab)
    lab.fake.reply(answer("fine", 0))
    lab.say(session, "how are you?")
    expected = lab.inspect(session)["cache"]["expected_read_tokens"]
    # a faithful provider read the whole previous prefix: its count is 8 % under hango's estimate
    lab.fake.reply(answer("still fine", int(expected / 1.08)))

    lab.say(session, "and now?")

    last = verdicts(lab, session)[-1]
    assert last["expected_read_tokens"] == expected > 1024
    assert last["miss_reason"] is None


def test_a_saved_override_between_runs_is_a_prefix_change_naming_the_part_and_cause(lab) -> None:
    agent, session = long_session(lab)
    lab.fake.reply(answer("fine", 0), answer("still fine", 0))
    lab.say(session, "how are you?")
    assert lab.put_agent(agent, excluding("system:filesystem")).status_code == 200

    lab.say(session, "and now?")

    later = verdicts(lab, session)[1]
    assert (later["miss_reason"], later["miss_part"], later["miss_cause"]) == (
        "prefix_changed",
        "system:filesystem",
        "override_saved",
    )
    assert later["expected_read_tokens"] == 0  # the system breakpoint sat after the dropped block


def test_a_call_after_the_cache_lifetime_is_expired(make_lab) -> None:
    lab = make_lab(cache_rules=json.dumps({"anthropic": {"ttl_seconds": 0}}))
    _, session = long_session(lab)
    lab.fake.reply(calling(0), answer("two files", 0))

    lab.say(session, "what is in /?")

    assert [v["miss_reason"] for v in verdicts(lab, session)] == ["first_call", "expired"]


def test_a_prefix_under_the_minimum_is_below_minimum(lab) -> None:
    session = lab.session(lab.agent(tools=["ls"], settings={"memory": False, "skills": False}))
    lab.fake.reply(calling(0), answer("two files", 0))

    lab.say(session, "what is in /?")

    assert verdicts(lab, session)[1] == {
        "expected_read_tokens": 0,
        "reported_read_tokens": 0,
        "miss_reason": "below_minimum",
        "miss_part": None,
        "miss_cause": None,
    }


def test_chat_spans_carry_the_cache_verdict(lab, spans) -> None:
    _, session = long_session(lab)
    lab.fake.reply(calling(0), answer("two files", 0))

    lab.say(session, "what is in /?")

    chats = [s for s in spans() if s.name == names.SPAN_CHAT]
    expected = [c["cache"]["expected_read_tokens"] for c in oldest_first(lab, session)]
    assert [s.attributes[names.CACHE_EXPECTED_READ_TOKENS] for s in chats] == expected
    assert [s.attributes.get(names.CACHE_MISS_REASON) for s in chats] == ["first_call", "unexplained"]


def test_a_chat_span_without_a_miss_has_no_miss_reason(lab, spans) -> None:
    _, session = long_session(lab)
    lab.fake.reply(calling(0), answer("two files", 1_000_000))

    lab.say(session, "what is in /?")

    last = [s for s in spans() if s.name == names.SPAN_CHAT][-1]
    assert names.CACHE_MISS_REASON not in last.attributes
    assert last.attributes[names.CACHE_EXPECTED_READ_TOKENS] > 0


def test_inspect_says_what_the_next_call_would_read_and_which_pending_change_breaks_the_prefix(lab) -> None:
    agent, session = long_session(lab)
    lab.fake.reply(answer("fine", 0))
    lab.say(session, "how are you?")
    last_call = listed_calls(lab, session)["items"][0]

    unchanged = lab.inspect(session)["cache"]
    assert unchanged["miss_reason"] is None
    assert unchanged["expected_read_tokens"] > 1024
    assert unchanged["expected_read_tokens"] <= last_call["estimated_input_tokens"]

    lab.memory(agent, "/memories/AGENTS.md", "a new note")  # a pending edit: a new memory block
    assert lab.put_session(session, excluding("message:1", "message:2")).status_code == 200

    pending = lab.inspect(session)["cache"]
    assert (pending["miss_reason"], pending["miss_part"], pending["miss_cause"]) == (
        "prefix_changed",
        "system:memory",  # the memory block lists the files: the first part the new file changes
        "memory_file_edited",
    )


def test_inspect_before_any_call_says_first_call(lab) -> None:
    session = lab.session(lab.agent(), [user("hello")])

    assert lab.inspect(session)["cache"]["miss_reason"] == "first_call"


def test_after_a_call_without_a_plausible_report_the_expected_read_is_in_the_calibrated_unit(lab) -> None:
    agent, plain = long_session(lab)
    lab.fake.reply(calling(0), answer("two files", 1_000_000))  # the tool call reports 10 tokens: made up
    lab.say(plain, "what is in /?")
    calibrated = lab.session(agent, [user("hello"), assistant("hi")])
    usage_rows(lab, agent, calibrated, [(1000, 1200)] * 5)  # the agent's calibration: 1.2
    lab.fake.reply(calling(0), answer("two files", 1_000_000))

    lab.say(calibrated, "what is in /?")

    estimated = verdicts(lab, plain)[1]["expected_read_tokens"]  # no calibration then: the estimate
    assert estimated > 1024
    assert verdicts(lab, calibrated)[1]["expected_read_tokens"] == round(estimated * 1.2)
