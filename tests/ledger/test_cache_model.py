"""The cache suite: hango's verdicts against a fake that follows Anthropic's documented cache rules.

The fake (``tests/fakes/anthropic_cache.py``) reports what Anthropic's prompt cache would read
for each request hango sends: prefixes through breakpoints, the 20-block lookback, minimum
lengths, the 5-minute lifetime, counted in its own token units. Each test is one case of
issue 25's list; in every one, no call the fake served faithfully is judged ``unexplained``
(0 false misses) and a call that reads the whole previous prompt expects exactly what the
provider counted for it.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import itertools
import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import sqlalchemy as sa
from hypothesis import given
from hypothesis import strategies as st

from hango.agent.cache_breakpoints import PLACEMENT, message_breakpoints
from hango.agent.ledger.causes import NOTHING
from hango.agent.ledger.record import Previous, SentCall, SentPart, sent_blocks
from hango.agent.ledger.verdict import READ_TOLERANCE, judge, outlook, part_cache_losses
from hango.agent.parts import SourcedMessage, message_part
from hango.messages import Message, Response, TextBlock, Usage
from hango.providers import close_providers
from hango.providers.base import CacheRules
from tests.fakes.anthropic_cache import AnthropicCache
from tests.fakes.provider_server import FakeProviderServer
from tests.inspector.conftest import Lab, assistant, by_id, excluding, fake_config, user
from tests.ledger.helpers import LONG_PROMPT, conversation, oldest_first
from tests.reliability.anthropic_rules import problem
from tests.runtime.chat import tool_call, tool_calls
from tests.support.clients import Tenant

CacheLab = tuple[Lab, AnthropicCache]


@pytest.fixture
def make_cache_lab(make_app, acme: Tenant, engine: sa.Engine) -> Iterator[Callable[..., CacheLab]]:
    """A lab whose provider is the strict fake with Anthropic's cache; ``ttl_seconds`` for both sides."""
    servers: list[FakeProviderServer] = []

    def build(ttl_seconds: float | None = None) -> CacheLab:
        cache = AnthropicCache() if ttl_seconds is None else AnthropicCache(ttl_seconds=ttl_seconds)
        server = FakeProviderServer(validator=problem, cache=cache)
        servers.append(server)
        rules = (
            {}
            if ttl_seconds is None
            else {"cache_rules": json.dumps({"anthropic": {"ttl_seconds": ttl_seconds}})}
        )
        app = make_app(**fake_config(server), **rules)
        return Lab(dataclasses.replace(acme.owner, client=app.test_client()), acme, engine, server), cache

    yield build
    for server in servers:
        server.close()
    close_providers()


@pytest.fixture
def cache_lab(make_cache_lab) -> CacheLab:
    return make_cache_lab()


def text(answer: str) -> Response:
    return Response(Message("assistant", (TextBlock(answer),)), "end_turn", Usage(0, 5))


def calling(message: Message) -> Response:
    return Response(message, "tool_use", Usage(0, 5))


def long_session(lab: Lab, **agent_fields: Any) -> tuple[str, str]:
    agent = lab.agent(system_prompt=LONG_PROMPT, **agent_fields)
    return agent, lab.session(agent, [user("hello"), assistant("hi")])


def verdicts(lab: Lab, session: str) -> list[dict[str, Any]]:
    """Every call's cache verdict, oldest first, after checking it holds no false miss."""
    found = [c["cache"] for c in oldest_first(lab, session)]
    for verdict in found:
        assert verdict["miss_reason"] != "unexplained", verdict  # the fake is faithful: never a false miss
        if verdict["miss_reason"] is None:
            assert verdict["reported_read_tokens"] >= verdict["expected_read_tokens"] * (1 - READ_TOLERANCE)
    return found


def said(lab: Lab, session: str, content: str) -> None:
    response = lab.say(session, content)
    assert response.status_code == 201, response.get_json()


def test_a_full_hit_is_a_hit_and_expects_what_the_provider_counted(cache_lab: CacheLab) -> None:
    lab, cache = cache_lab
    _, session = long_session(lab)
    lab.fake.reply(text("fine"), text("still fine"))

    said(lab, session, "how are you?")
    foreseen = lab.inspect(session)["cache"]
    said(lab, session, "and now?")

    first, second = verdicts(lab, session)
    assert first["miss_reason"] == "first_call"
    # inspect foresaw the call's verdict in the same units (the next call sends one more user message)
    assert (foreseen["miss_reason"], foreseen["expected_read_tokens"]) == (
        None,
        second["expected_read_tokens"],
    )
    whole_first_prompt = cache.outcomes[0].read + cache.outcomes[0].written + cache.outcomes[0].uncached
    assert second["miss_reason"] is None
    assert second["expected_read_tokens"] == second["reported_read_tokens"] == whole_first_prompt


def test_an_appended_turn_reads_the_whole_previous_call(cache_lab: CacheLab) -> None:
    lab, cache = cache_lab
    _, session = long_session(lab)
    lab.fake.reply(calling(tool_call("toolu_1", "ls", {"path": "/"})), text("two files"))

    said(lab, session, "what is in /?")

    _, second = verdicts(lab, session)
    assert second["miss_reason"] is None
    assert (
        second["expected_read_tokens"]
        == second["reported_read_tokens"]
        == sum(dataclasses.astuple(cache.outcomes[0]))
    )


def test_a_turn_of_25_blocks_keeps_the_message_cache(cache_lab: CacheLab) -> None:
    lab, cache = cache_lab
    _, session = long_session(lab)
    many = tool_calls(*((f"toolu_{i}", "ls", {"path": "/"}) for i in range(13)))  # 13 uses + 13 results
    lab.fake.reply(calling(many), text("all listed"))

    said(lab, session, "list / thirteen times")

    _, second = verdicts(lab, session)
    body = lab.fake.bodies("/v1/messages")[-1]
    marks = [b for m in body["messages"] for b in m["content"] if "cache_control" in b]
    assert len(marks) == 2, "the last message and a bridge 13 blocks before it"
    assert second["miss_reason"] is None
    assert (
        second["expected_read_tokens"]
        == second["reported_read_tokens"]
        == sum(dataclasses.astuple(cache.outcomes[0]))
    )


def after_a_change(lab: Lab, change: Callable[[str], Any], memory: str | None = None) -> dict[str, Any]:
    """The verdict on a turn after ``change(agent_id)``, the turn before it having been cached."""
    agent, session = long_session(lab)
    if memory is not None:
        lab.memory(agent, "/memories/AGENTS.md", memory)
    lab.fake.reply(text("fine"), text("still fine"))
    said(lab, session, "how are you?")
    change(agent)
    said(lab, session, "and now?")
    return verdicts(lab, session)[1]


def missed(verdict: dict[str, Any]) -> tuple:
    """Reason, part, cause, expected and reported read of a verdict."""
    keys = ("miss_reason", "miss_part", "miss_cause", "expected_read_tokens", "reported_read_tokens")
    return tuple(verdict[k] for k in keys)


def test_a_system_edit_is_a_prefix_change_at_the_agent_prompt(cache_lab: CacheLab) -> None:
    lab, _ = cache_lab

    def edit(agent: str) -> None:
        edited = lab.who.patch(f"/v1/agents/{agent}", json={"system_prompt": LONG_PROMPT + "Be brief."})
        assert edited.status_code == 200, edited.get_json()

    later = after_a_change(lab, edit)

    assert missed(later) == ("prefix_changed", "system:agent", "prompt_edited", 0, 0)


def test_a_tool_excluded_is_a_prefix_change_at_the_tool(cache_lab: CacheLab) -> None:
    lab, _ = cache_lab

    def exclude(agent: str) -> None:
        assert lab.put_agent(agent, excluding("tool:ls")).status_code == 200

    later = after_a_change(lab, exclude)

    assert missed(later) == ("prefix_changed", "tool:ls", "override_saved", 0, 0)


def test_a_memory_edit_is_a_prefix_change_at_the_memory_block(cache_lab: CacheLab) -> None:
    lab, _ = cache_lab

    def edit(agent: str) -> None:
        lab.memory(agent, "/memories/AGENTS.md", "the tulips come first")

    later = after_a_change(lab, edit, memory="the roses come first")

    assert later["miss_reason"] == "prefix_changed"
    assert later["miss_part"].startswith("system:memory")
    assert later["miss_cause"] == "memory_file_edited"
    assert later["reported_read_tokens"] == later["expected_read_tokens"] == 0


def test_a_todo_change_is_a_prefix_change_at_the_todo_list(cache_lab: CacheLab) -> None:
    lab, _ = cache_lab
    _, session = long_session(lab)
    todos = {"todos": [{"content": "water the roses", "status": "in_progress"}]}
    lab.fake.reply(calling(tool_call("toolu_1", "write_todos", todos)), text("on it"))

    said(lab, session, "plan the watering")

    _, second = verdicts(lab, session)
    assert (second["miss_reason"], second["miss_part"]) == ("prefix_changed", "system:todo")
    assert second["miss_cause"] == "todos_changed"
    # the todo list sits after the system breakpoint: tools and the stable system blocks are still read
    assert second["reported_read_tokens"] > 1024
    assert second["reported_read_tokens"] >= second["expected_read_tokens"] * (1 - READ_TOLERANCE)


def test_a_call_after_the_lifetime_is_expired(make_cache_lab) -> None:
    lab, cache = make_cache_lab(ttl_seconds=0)
    _, session = long_session(lab)
    lab.fake.reply(text("fine"), text("still fine"))

    said(lab, session, "how are you?")
    said(lab, session, "and now?")

    assert [v["miss_reason"] for v in verdicts(lab, session)] == ["first_call", "expired"]
    assert [o.read for o in cache.outcomes] == [0, 0]


def test_a_prefix_below_the_minimum_is_below_minimum(cache_lab: CacheLab) -> None:
    lab, cache = cache_lab
    session = lab.session(lab.agent(tools=["ls"], settings={"memory": False, "skills": False}))
    lab.fake.reply(calling(tool_call("toolu_1", "ls", {"path": "/"})), text("two files"))

    said(lab, session, "what is in /?")

    _, second = verdicts(lab, session)
    assert (second["miss_reason"], second["expected_read_tokens"], second["reported_read_tokens"]) == (
        "below_minimum",
        0,
        0,
    )
    assert [o.written for o in cache.outcomes] == [0, 0], "the fake cached nothing either"


def sent_parts(body: dict[str, Any]) -> list[dict[str, Any]]:
    """Inspect's sent parts in cache order: tools, system blocks, messages."""
    return [p for p in (*body["tools"], *body["system"], *body["messages"]) if p["included"]]


def previewed(lab: Lab, session: str, route: str, part: str) -> dict[str, Any]:
    response = lab.who.post(f"/v1/sessions/{session}/context/preview", json={route: excluding(part)})
    assert response.status_code == 200, response.get_json()
    return response.get_json()


def pending_loss(lab: Lab, session: str, route: str, part: str) -> int:
    return previewed(lab, session, route, part)["pending"]["cache_loss_tokens"]


def one_turn_inspected(lab: Lab) -> tuple[str, dict[str, Any]]:
    """A session after one turn, and its inspect response."""
    _, session = long_session(lab)
    lab.fake.reply(text("fine"))
    said(lab, session, "how are you?")
    return session, lab.inspect(session)


def test_after_the_cache_lifetime_leaving_a_part_out_costs_no_cache(make_cache_lab) -> None:
    lab, _ = make_cache_lab(ttl_seconds=0)
    session, body = one_turn_inspected(lab)

    assert (body["cache"]["outlook"], body["cache"]["miss_reason"]) == ("expired", "expired")
    assert [(p["cache_loss_tokens"], p["cached_prefix"]) for p in by_id(body).values()] == [(0, False)] * len(
        by_id(body)
    )
    assert pending_loss(lab, session, "agent", "tool:ls") == 0  # the panel warns of nothing
    assert pending_loss(lab, session, "session", "message:2") == 0
    found = lab.who.get(f"/v1/sessions/{session}/context/suggestions").get_json()["suggestions"]
    assert all(s["cache_loss_tokens"] == 0 for s in found)


def test_within_the_cache_lifetime_leaving_a_part_out_costs_the_cache_from_it_on(cache_lab: CacheLab) -> None:
    lab, _ = cache_lab
    session, body = one_turn_inspected(lab)

    assert body["cache"]["outlook"] == "live"
    first = sent_parts(body)[0]
    assert first["id"] == "tool:ls" and first["cache_loss_tokens"] > 0
    # a change at tool:ls loses the cache from it on; leaving it out writes all of that again but itself
    assert 0 < pending_loss(lab, session, "agent", "tool:ls") < first["cache_loss_tokens"]


def test_a_parts_cache_loss_is_in_the_same_units_as_the_expected_read(cache_lab: CacheLab) -> None:
    lab, cache = cache_lab
    session, body = one_turn_inspected(lab)

    whole_first_prompt = sum(dataclasses.astuple(cache.outcomes[0]))
    assert (body["cache"]["unit"], body["cache"]["expected_read_tokens"]) == ("provider", whole_first_prompt)
    estimated = body["last_call"]["estimated"]
    assert estimated != whole_first_prompt, "the fake counts in units of its own"
    # the provider holds the whole previous call: a change at the first part loses all of its read
    sent = sent_parts(body)
    assert sent[0]["cache_loss_tokens"] == whole_first_prompt
    # leaving tool:ls out writes again what the provider holds of the previous call and is still sent
    # (the answer since was never held: it is written either way), in the same units
    shown = previewed(lab, session, "agent", "tool:ls")
    held_and_sent = estimated - sent[0]["tokens"]
    assert shown["pending"]["cache_loss_tokens"] == round(held_and_sent * (whole_first_prompt / estimated))


# -- the model and the placement on ledger parts alone ------------------------------------------

T0 = dt.datetime(2026, 12, 1, 8, 0, tzinfo=dt.UTC)
RULES = CacheRules(ttl_seconds=300, minimum_tokens=100)
HEAD = tuple(SentPart(p, f"{p}#1", 100) for p in ("tool:ls", "tool:grep", "system:agent", "system:memory"))
FIRST = SentCall((*HEAD, SentPart("message:1", "m1", 100)), (3, 4), (1, 1, 1, 1, 1))


def judged(
    now: SentCall,
    *,
    reported_prompt: int | None = None,
    reported: int | None = None,
    calibrated: float | None = None,
):
    return judge(
        Previous(FIRST, T0, reported_prompt),
        now,
        started_at=T0 + dt.timedelta(seconds=10),
        rules=RULES,
        model="claude-test",
        facts=lambda: NOTHING,
        reported=reported,
        calibrated=calibrated,
    )


def later(*blocks: int, breakpoints: tuple[int, ...]) -> SentCall:
    """FIRST, then messages of ``blocks`` content blocks each."""
    added = tuple(SentPart(f"message:{i + 2}", f"m{i + 2}", 100) for i in range(len(blocks)))
    return SentCall((*FIRST.parts, *added), breakpoints, (*FIRST.blocks, *blocks))


def test_a_cached_prefix_more_than_20_blocks_before_every_breakpoint_is_beyond_lookback() -> None:
    verdict = judged(later(25, breakpoints=(3, 5)))
    assert (verdict.miss_reason, verdict.miss_part) == ("beyond_lookback", "message:1")
    assert verdict.expected_read_tokens == 400, "the system breakpoint still finds its own prefix"


def test_a_bridge_within_20_blocks_keeps_the_message_cache() -> None:
    verdict = judged(later(13, 13, breakpoints=(3, 5, 6)))
    assert (verdict.miss_reason, verdict.expected_read_tokens) == (None, 500)


def test_the_expected_read_is_in_provider_units_from_the_previous_calls_report() -> None:
    now = later(1, 1, breakpoints=(3, 6))
    assert judged(now, reported_prompt=460).expected_read_tokens == 460
    assert judged(now, reported_prompt=460, reported=420).miss_reason is None  # within READ_TOLERANCE
    assert judged(now, reported_prompt=460, reported=400).miss_reason == "unexplained"
    assert judged(now, reported_prompt=10).expected_read_tokens == 500, "a made-up count: the estimate"


def test_a_turn_of_more_than_20_blocks_gets_a_bridge_within_the_lookback() -> None:
    messages = conversation(1, 1, 13, 13)
    assert message_breakpoints(messages, 3) == {3, 2}, "the bridge ends 13 blocks before the last message"


def test_breakpoints_never_exceed_four_and_each_reaches_the_one_before() -> None:
    messages = conversation(*([2] * 60))
    marked = sorted(message_breakpoints(messages, 3))
    ends = list(itertools.accumulate(2 for _ in messages))
    assert len(marked) == 3 and marked[-1] == 59
    assert all(ends[b] - ends[a] <= 20 for a, b in itertools.pairwise(marked))


def test_a_short_conversation_has_no_bridge() -> None:
    assert message_breakpoints(conversation(1, 1, 1, 1), 3) == {3}


def test_without_a_plausible_report_the_expected_read_is_in_the_calibrated_unit() -> None:
    now = later(1, 1, breakpoints=(3, 6))
    assert judged(now, calibrated=0.9).expected_read_tokens == 450
    assert judged(now, reported_prompt=10, calibrated=0.9).expected_read_tokens == 450
    assert judged(now, reported_prompt=460, calibrated=0.9).expected_read_tokens == 460, "a report first"
    assert judged(now, calibrated=5.0).expected_read_tokens == 500, "a made-up calibration: the estimate"


def ahead_of(reported_prompt: int | None, seconds: float):
    previous = Previous(FIRST, T0, reported_prompt)
    return outlook(previous, now=T0 + dt.timedelta(seconds=seconds), rules=RULES, model="claude-test")


def test_leaving_out_the_first_part_of_a_full_hit_loses_exactly_its_expected_read() -> None:
    same = SentCall(FIRST.parts, FIRST.breakpoints, FIRST.blocks)
    ahead = ahead_of(460, 10)

    assert (ahead.state, ahead.unit) == ("live", "provider")
    assert (
        part_cache_losses(Previous(FIRST, T0, 460), same, ahead)[0]
        == judged(same, reported_prompt=460).expected_read_tokens
        == 460
    )


def test_after_the_lifetime_no_part_costs_cache_in_the_model() -> None:
    ahead = ahead_of(460, RULES.ttl_seconds + 1)

    assert ahead.state == "expired"
    assert part_cache_losses(Previous(FIRST, T0, 460), FIRST, ahead) == [0] * (len(FIRST.parts) + 1)


def breakpoints_counting_every_block(messages: tuple[SourcedMessage, ...], budget: int) -> frozenset[int]:
    """The breakpoint rule written plainly: every message's blocks counted from the first (the spec)."""
    if not messages or budget <= 0:
        return frozenset()
    ends = list(itertools.accumulate(sent_blocks(m.message) for m in messages))
    last = len(messages) - 1
    anchors = [i for i in range(last) if messages[i + 1].message.role != messages[i].message.role]
    chosen = [last]
    while len(chosen) < budget and ends[chosen[-1]] > PLACEMENT.lookback_blocks:
        earlier = [i for i in anchors if i < chosen[-1]]
        within = [i for i in earlier if ends[i] >= ends[chosen[-1]] - PLACEMENT.lookback_blocks]
        bridge = min(within) if within else max(earlier, default=None)
        if bridge is None or ends[bridge] == 0:
            break
        chosen.append(bridge)
    return frozenset(chosen)


@given(
    st.lists(
        st.tuples(st.sampled_from(["user", "assistant"]), st.lists(st.sampled_from(["x", " "]), max_size=25)),
        max_size=40,
    ),
    st.integers(-1, 5),
)
def test_breakpoints_found_walking_back_from_the_end_are_those_of_the_whole_count(
    shape: list[tuple[str, list[str]]], budget: int
) -> None:
    messages = tuple(
        SourcedMessage(message_part(seq), Message(role, tuple(TextBlock(t) for t in texts)))
        for seq, (role, texts) in enumerate(shape, start=1)
    )
    assert message_breakpoints(messages, budget) == breakpoints_counting_every_block(messages, budget)
