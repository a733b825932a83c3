"""Cache verdicts and diff causes on ledger parts alone: every miss reason and every cause, by example."""

from __future__ import annotations

import datetime as dt
from typing import NamedTuple

import pytest

from hango.agent.cache_breakpoints import with_breakpoints
from hango.agent.draft import Draft
from hango.agent.ledger.causes import NOTHING, Facts, facts_of, first_difference
from hango.agent.ledger.record import Previous, SentCall, SentPart, delta, rebuild, sent_call
from hango.agent.ledger.verdict import CacheRules, judge, rules_for
from hango.agent.parts import SourcedBlock, SourcedMessage, message_part, system_part
from hango.config import ConfigError, load_config
from hango.inspector.call_diff import diff
from hango.messages import Block, Message, TextBlock, ToolDef

T0 = dt.datetime(2026, 12, 1, 8, 0, tzinfo=dt.UTC)
RULES = CacheRules(ttl_seconds=300, minimum_tokens=100)


class Row(NamedTuple):
    """A row of ``hango.store.recorded_changes``: one recorded change."""

    what: str
    detail: dict
    seq: int | None = None


def recorded(*rows: Row) -> Facts:
    return facts_of(rows)


def part(name: str, tokens: int = 100, version: str = "1") -> SentPart:
    return SentPart(name, f"{name}#{version}", tokens)


def call(*parts: SentPart, breakpoints: tuple[int, ...] = ()) -> SentCall:
    return SentCall(parts, breakpoints)


TOOLS = (part("tool:ls"), part("tool:grep"))
SYSTEM = (part("system:agent"), part("system:memory:/memories/AGENTS.md"))
FIRST = call(*TOOLS, *SYSTEM, part("message:1"), breakpoints=(3, 4))
# The next turn: the same prefix, two new messages, the breakpoint moved to the last one.
SECOND = call(*TOOLS, *SYSTEM, part("message:1"), part("message:2"), part("message:3"), breakpoints=(3, 6))


def verdict(previous: SentCall | None, now: SentCall, *, gap: float = 10, reported: int | None = None, **kw):
    before = Previous(previous, T0) if previous is not None else None
    return judge(
        before,
        now,
        started_at=T0 + dt.timedelta(seconds=gap),
        rules=kw.get("rules", RULES),
        model="claude-test",
        facts=lambda: kw.get("facts", NOTHING),
        reported=reported,
    )


def test_a_call_reads_the_prefix_up_to_the_previous_calls_last_breakpoint() -> None:
    judged = verdict(FIRST, SECOND, reported=500)
    assert (judged.expected_read_tokens, judged.miss_reason) == (500, None)


def test_the_first_call_of_a_lineage_misses_as_first_call() -> None:
    assert verdict(None, FIRST).as_dict() == {
        "expected_read_tokens": 0,
        "miss_reason": "first_call",
        "miss_part": None,
        "miss_cause": None,
    }


def test_a_call_after_the_cache_lifetime_misses_as_expired() -> None:
    assert verdict(FIRST, SECOND, gap=301).miss_reason == "expired"
    assert verdict(FIRST, SECOND, gap=299).miss_reason is None


def test_a_shared_prefix_under_the_minimum_misses_as_below_minimum() -> None:
    judged = verdict(FIRST, SECOND, rules=CacheRules(minimum_tokens=501))
    assert (judged.expected_read_tokens, judged.miss_reason) == (0, "below_minimum")


def test_a_prefix_broken_before_the_last_breakpoint_names_the_part_and_its_cause() -> None:
    edited = call(
        *TOOLS, SYSTEM[0], part("system:memory:/memories/AGENTS.md", version="2"), part("message:1")
    )
    judged = verdict(FIRST, edited, facts=recorded(Row("memory.write", {"path": "/memories/AGENTS.md"})))
    assert judged.as_dict() == {
        "expected_read_tokens": 0,  # the first breakpoint sat on the edited memory block
        "miss_reason": "prefix_changed",
        "miss_part": "system:memory:/memories/AGENTS.md",
        "miss_cause": "memory_file_edited",
    }


def test_a_prefix_broken_after_the_system_breakpoint_still_reads_up_to_it() -> None:
    replaced = call(*TOOLS, *SYSTEM, part("message:1", version="replaced"), breakpoints=(3, 4))
    saved = Row("context.override", {"parts": [{"part": "message:1", "action": "replace"}]})
    judged = verdict(FIRST, replaced, facts=recorded(saved))
    assert (judged.expected_read_tokens, judged.miss_reason, judged.miss_cause) == (
        400,
        "prefix_changed",
        "replaced_part",
    )


def test_a_provider_reading_more_than_the_lineage_explains_is_no_miss() -> None:
    # Another session of the agent cached the same tools and system blocks.
    assert verdict(None, FIRST, reported=300).as_dict()["miss_reason"] is None


def test_fewer_cached_tokens_than_expected_is_unexplained() -> None:
    assert verdict(FIRST, SECOND, reported=0).miss_reason == "unexplained"


def test_a_provider_without_a_cache_gets_no_verdict() -> None:
    assert verdict(None, FIRST, rules=CacheRules(enabled=False)).as_dict()["miss_reason"] is None


def test_the_offline_provider_caches_by_its_reference_models_rules() -> None:
    offline = rules_for("offline")
    assert offline.enabled and offline.ttl_seconds == rules_for("anthropic").ttl_seconds
    assert offline.minimum_for("echo") == rules_for("anthropic").minimum_for("claude-sonnet-4-6") == 1024


def test_anthropic_minimums_follow_the_model_family() -> None:
    assert rules_for("anthropic").minimum_for("claude-sonnet-4-5-20250929") == 1024
    assert rules_for("anthropic").minimum_for("claude-opus-4-5") == 4096
    assert rules_for("anthropic").minimum_for("claude-haiku-4-5") == 4096
    assert rules_for("anthropic").minimum_for("claude-sonnet-4-6") == 1024
    assert rules_for("anthropic").minimum_for("claude-3-5-haiku-20241022") == 2048
    assert rules_for("anthropic").ttl_seconds == 300


def test_rules_are_configurable_per_provider() -> None:
    rules = rules_for("anthropic", '{"anthropic": {"ttl_seconds": 3600, "minimums": [["test", 7]]}}')
    assert (rules.ttl_seconds, rules.minimum_for("claude-test")) == (3600, 7)
    assert rules_for("openai", '{"anthropic": {"ttl_seconds": 1}}').ttl_seconds == 300


def test_cache_rules_that_are_not_rules_are_refused_at_start() -> None:
    for raw in ("{not json", '["anthropic"]', '{"anthropic": {"ttl": 5}}'):
        with pytest.raises(ConfigError, match="HANGO_CACHE_RULES"):
            load_config({"HANGO_CACHE_RULES": raw})
    assert load_config({"HANGO_CACHE_RULES": '{"anthropic": {"ttl_seconds": 5}}'}).cache_rules


def cause(earlier: SentCall, later: SentCall, facts: Facts = NOTHING) -> tuple[str, str]:
    found = first_difference(earlier, later, facts)
    assert found is not None
    return found.part, found.cause


def test_causes_come_from_the_changes_recorded_between_the_calls() -> None:
    base = call(*TOOLS, *SYSTEM, part("message:1"), part("message:2"), part("message:3"))
    memory_off = call(*TOOLS, SYSTEM[0], *base.parts[4:])
    excluded = Row(
        "context.override", {"parts": [{"part": "system:memory:/memories/AGENTS.md", "action": "exclude"}]}
    )
    assert cause(base, memory_off, recorded(excluded)) == (
        "system:memory:/memories/AGENTS.md",
        "override_saved",
    )
    grep_off = call(TOOLS[0], *base.parts[2:])
    assert cause(base, grep_off, recorded(Row("agent.update", {"fields": ["tools"]}))) == (
        "tool:grep",
        "tool_list_changed",
    )
    summarized = call(*TOOLS, *SYSTEM, part("summary"), part("message:3"))
    assert cause(base, summarized, recorded(Row("compaction", {}, 2))) == ("message:1", "new_summary")
    rolled_back = call(*base.parts[:-1])
    assert cause(base, rolled_back, recorded(Row("rollback", {}, 2))) == ("message:3", "rollback")
    assert cause(base, call(*base.parts, part("message:4"))) == ("message:4", "new_messages")
    edited = call(*TOOLS, part("system:agent", version="2"), *base.parts[3:])
    assert cause(base, edited, recorded(Row("agent.update", {"fields": ["system_prompt"]}))) == (
        "system:agent",
        "prompt_edited",
    )
    assert first_difference(base, base, NOTHING) is None


def test_a_change_nothing_recorded_explains_is_unknown_or_a_trys() -> None:
    base = call(*TOOLS, *SYSTEM, part("message:1"), part("message:2"))
    memory_off = call(*TOOLS, SYSTEM[0], *base.parts[4:])
    assert cause(base, memory_off) == ("system:memory:/memories/AGENTS.md", "unknown")
    assert cause(base, memory_off, recorded(Row("call", {"purpose": "context_try"}))) == (
        "system:memory:/memories/AGENTS.md",
        "try_call",
    )
    # a summary stored meanwhile explains no message it does not cover
    assert cause(base, call(*base.parts[:-1]), recorded(Row("compaction", {}, 1))) == ("message:2", "unknown")
    # an exclusion saved meanwhile does not explain a part that came back
    back = call(*TOOLS, SYSTEM[0], *base.parts[4:])
    saved = Row(
        "context.override", {"parts": [{"part": "system:memory:/memories/AGENTS.md", "action": "exclude"}]}
    )
    assert cause(back, base, recorded(saved)) == ("system:memory:/memories/AGENTS.md", "unknown")
    cleared = Row("context.override", {"parts": [], "cleared": [saved.detail["parts"][0]]})
    assert cause(back, base, recorded(cleared)) == ("system:memory:/memories/AGENTS.md", "override_saved")


def test_a_diff_lists_added_removed_and_changed_parts_and_the_common_prefix() -> None:
    later = call(*TOOLS, SYSTEM[0], part("message:1", version="2"), part("message:4"))
    body = diff(FIRST, later, NOTHING)
    assert body["added"] == ["message:4"]
    assert body["removed"] == ["system:memory:/memories/AGENTS.md"]
    assert body["changed"] == ["message:1"]
    assert body["common_prefix"] == {"parts": 3, "tokens": 300}


def test_a_call_is_stored_as_the_parts_after_its_shared_prefix_and_rebuilt_whole() -> None:
    stored = delta(FIRST, SECOND)
    assert stored.prefix_parts == 5
    assert [p[0] for p in stored.tail] == ["message:2", "message:3"]

    class Row:
        def __init__(self, ident, base, d, marks):
            self.id, self.base_id, self.prefix_parts, self.tail, self.breakpoints = ident, base, *d, marks

    first = delta(None, FIRST)
    rows = [
        Row(1, None, (first.prefix_parts, first.tail), FIRST.breakpoints),
        Row(2, 1, (stored.prefix_parts, stored.tail), SECOND.breakpoints),
    ]
    assert rebuild(rows) == {1: FIRST, 2: SECOND}


def test_sent_parts_follow_the_cache_order_tools_system_messages() -> None:
    draft = with_breakpoints(
        Draft(
            "anthropic/claude-test",
            (
                SourcedBlock(system_part("agent"), Block("be brief")),
                SourcedBlock(system_part("todo"), Block("t")),
            ),
            (ToolDef("ls", "list", {"type": "object"}),),
            (SourcedMessage(message_part(1), Message("user", (TextBlock("hi"),))),),
        )
    )
    sent = sent_call(draft)
    assert [p.part for p in sent.parts] == ["tool:ls", "system:agent", "system:todo", "message:1"]
    assert sent.breakpoints == (1, 3)
    unmarked = sent_call(
        draft.with_(messages=(SourcedMessage(message_part(1), Message("user", (TextBlock("hi"),))),))
    )
    assert unmarked.parts[-1].hash == sent.parts[-1].hash  # a breakpoint is not content
