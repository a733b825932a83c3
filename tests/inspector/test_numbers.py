"""Numbers that agree: replaced parts, one unit for both totals, the output reserve, last_call, previews."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from hango.agent.parts import PREVIEW_CHARS, preview
from hango.db.schema import runs, usage_records
from hango.messages import Message, Response, TextBlock, Usage
from tests.fakes.provider_server import COUNT_TOKENS
from tests.inspector.conftest import OFFLINE, Lab, assistant, by_id, override_set, user

LONG = "the original text, long enough to be worth replacing " * 20


def test_a_replaced_part_shows_the_replacements_preview_and_tokens_and_carries_original_tokens(lab: Lab):
    agent = lab.agent(model=OFFLINE)
    session = lab.session(agent, [user(LONG), assistant("ok")])
    lab.put_session(session, override_set(replace={"message:1": "short"}))
    lab.put_agent(agent, override_set(replace={"system:agent": "Be brief."}))
    plain = lab.inspect(lab.session(agent, [user(LONG), assistant("ok")]))

    body = lab.inspect(session)
    full = lab.inspect(session, full="message:1")
    system = lab.inspect(session, full="system:agent")

    message = by_id(body)["message:1"]
    assert message["preview"] == "short" and message["truncated"] is False
    assert message["original_tokens"] == by_id(plain)["message:1"]["tokens"]
    assert message["tokens"] < message["original_tokens"]
    assert (full["id"], full["replacement"], full["content"][0]["text"]) == ("message:1", "short", LONG)
    assert (full["tokens"], full["original_tokens"]) == (message["tokens"], message["original_tokens"])
    assert by_id(body)["system:agent"]["preview"] == "Be brief."
    assert system["tokens"] == by_id(body)["system:agent"]["tokens"] < system["original_tokens"]
    assert by_id(body)["message:2"]["original_tokens"] is None
    assert body["totals"]["messages"]["before"] - body["totals"]["messages"]["after"] == (
        message["original_tokens"] - message["tokens"]
    )


def test_total_before_and_total_after_are_in_one_unit(lab: Lab):
    agent = lab.agent(model="anthropic/claude-test")
    session = lab.session(agent, [user("one"), assistant("two"), user("three")])
    lab.fake.count(1639)

    untouched = lab.inspect(session)
    lab.put_session(session, override_set(replace={"message:1": "1"}))
    lab.fake.count(1639, 1576)
    overridden = lab.inspect(session)
    lab.fake.fail(529, path=COUNT_TOKENS, times=None)
    estimated = lab.inspect(session)

    assert (untouched["counted"], untouched["total_before"], untouched["total_after"]) == (
        "provider",
        1639,
        1639,
    )
    assert (overridden["counted"], overridden["total_before"], overridden["total_after"]) == (
        "provider",
        1639,
        1576,
    )
    assert estimated["counted"] == "estimate"
    assert estimated["total_before"] == sum(g["before"] for g in estimated["totals"].values())
    assert estimated["total_after"] == sum(g["after"] for g in estimated["totals"].values())


def test_free_takes_the_output_reserve_and_free_before_compaction_is_given(make_lab):
    lab = make_lab(compact_trigger=0.5)
    session = lab.session(lab.agent(model=OFFLINE, context_window=50_000), [user("hi")])

    body = lab.inspect(session)

    assert body["output_reserve"] == 4096
    assert body["free"] == 50_000 - body["total_after"] - 4096
    assert body["free_before_compaction"] == 25_000 - body["total_after"]


def test_free_is_negative_when_the_input_and_the_output_reserve_exceed_the_window(make_lab):
    lab = make_lab(compact_trigger=0.5)
    session = lab.session(lab.agent(model=OFFLINE, context_window=6_000), [user("word " * 3_000)])

    body = lab.inspect(session)

    assert body["total_after"] + body["output_reserve"] > body["context_window"]
    assert body["free"] == 6_000 - body["total_after"] - 4096 < 0  # the provider would refuse this call
    assert body["free_before_compaction"] == 0 and body["would_compact"] is True


def test_last_call_is_the_last_call_of_a_run_with_its_purpose_never_a_try(lab: Lab):
    session = lab.session(lab.agent(model="anthropic/claude-test"), [user("one"), assistant("two")])
    lab.fake.reply(Response(Message("assistant", (TextBlock("done"),)), "end_turn", Usage(700, 5)))
    assert lab.say(session, "three").status_code == 201
    lab.fake.reply(Response(Message("assistant", (TextBlock("tried"),)), "end_turn", Usage(9, 1)))
    assert lab.try_(session, {"message": "a try"}).status_code == 200

    last = lab.inspect(session)["last_call"]

    assert (last["purpose"], last["reported"]) == ("run", 700)


def test_last_run_call_is_the_last_call_of_a_run_that_completed_and_names_it(lab: Lab):
    session = lab.session(lab.agent(model="anthropic/claude-test"), [user("one"), assistant("two")])
    lab.fake.reply(Response(Message("assistant", (TextBlock("done"),)), "end_turn", Usage(700, 5)))
    assert lab.say(session, "three").status_code == 201
    [completed] = lab.store(lambda s: list(s.conn.execute(sa.select(runs.c.id, runs.c.status))))
    # a whole-turn try, then a compaction's summarize call (its own run): neither is the last run call
    lab.fake.reply(Response(Message("assistant", (TextBlock("tried"),)), "end_turn", Usage(9, 1)))
    assert lab.try_(session, {"message": "a try", "mode": "turn"}).status_code in (200, 202)
    lab.fake.reply(Response(Message("assistant", (TextBlock("a summary"),)), "end_turn", Usage(50, 5)))
    compacted = lab.who.post_and_wait(f"/v1/sessions/{session}/compact", json={})
    assert compacted.status_code == 200, compacted.get_json()
    purposes = lab.store(lambda s: set(s.conn.execute(sa.select(usage_records.c.purpose)).scalars()))
    assert "summarize" in purposes

    last = lab.inspect(session)["last_call"]

    assert completed.status == "completed"
    assert (last["purpose"], last["reported"], last["run_id"]) == ("run", 700, str(completed.id))
    assert last["at"]


@pytest.mark.parametrize(
    "cluster",
    [
        "e\u0302\u0301",  # a Vietnamese ế written with two combining marks
        "\U0001f468\u200d\U0001f469\u200d\U0001f467",  # a ZWJ family
        "\U0001f1fb\U0001f1f3",  # a flag: two regional indicators
    ],
)
def test_previews_cut_on_a_grapheme_cluster_boundary_and_say_when_they_are_cut(cluster: str):
    for offset in range(len(cluster)):
        prefix = "a" * (PREVIEW_CHARS - offset - 1)
        cut = preview(prefix + cluster * 3)
        assert cut.truncated is True
        assert len(cut.text) <= PREVIEW_CHARS
        tail = cut.text.removeprefix(prefix)
        assert cut.text.startswith(prefix) and tail == cluster * (len(tail) // len(cluster))
    whole = preview("short")
    assert (whole.text, whole.truncated) == ("short", False)


def test_inspect_previews_say_truncated(lab: Lab):
    session = lab.session(lab.agent(model=OFFLINE), [user("e\u0302\u0301" * 120), assistant("ok")])

    body = lab.inspect(session)

    first = by_id(body)["message:1"]
    assert first["truncated"] is True and len(first["preview"]) == 198
    assert by_id(body)["message:2"]["truncated"] is False
