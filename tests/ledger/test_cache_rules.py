"""Every prompt-cache rule lives in ``CacheRules``: the cache model and breakpoint placement read it there.

Each test changes one field and shows the reader follows: a second copy of the rule anywhere would
keep the old figure and fail.
"""

from __future__ import annotations

import dataclasses
import datetime as dt

import pytest

from hango.agent.cache_breakpoints import PLACEMENT, message_breakpoints, system_breakpoint, with_breakpoints
from hango.agent.draft import Draft
from hango.agent.ledger.causes import NOTHING
from hango.agent.ledger.record import Previous, SentCall, SentPart, sent_blocks
from hango.agent.ledger.verdict import judge
from hango.agent.parts import SourcedBlock, system_part
from hango.cache_rules import CacheRules
from hango.config import ConfigError, load_config
from hango.messages import Block, Message, Request, TextBlock, ToolResultBlock, is_sent
from hango.providers import SPECS
from hango.providers.anthropic import wire_body
from tests.ledger.helpers import conversation

T0 = dt.datetime(2026, 12, 1, 8, 0, tzinfo=dt.UTC)
RULES = CacheRules(ttl_seconds=300, minimum_tokens=100)
HEAD = tuple(SentPart(p, f"{p}#1", 100) for p in ("tool:ls", "system:agent", "system:memory"))
FIRST = SentCall((*HEAD, SentPart("message:1", "m1", 100)), (2, 3), (1, 1, 1, 1))


def test_cache_rules_carry_the_lookback_the_breakpoint_limit_and_the_volatile_blocks() -> None:
    rules = SPECS["anthropic"].cache
    assert PLACEMENT is rules, "placement reads the one registry row's rules"
    assert (rules.lookback_blocks, rules.max_breakpoints, rules.volatile_system) == (20, 4, {"todo"})


def test_breakpoint_placement_reads_the_lookback_from_the_cache_rules() -> None:
    messages = conversation(1, 1, 13, 13)
    assert message_breakpoints(messages, 3) == {3, 2}, "28 blocks: a bridge within 20"
    assert message_breakpoints(messages, 3, dataclasses.replace(PLACEMENT, lookback_blocks=30)) == {3}


def test_breakpoint_placement_reads_the_limit_and_the_volatile_blocks_from_the_cache_rules() -> None:
    system = tuple(SourcedBlock(system_part(n), Block(n)) for n in ("agent", "skills", "todo"))
    assert system_breakpoint(system) == 1, "system:todo is volatile"
    assert system_breakpoint(system, dataclasses.replace(PLACEMENT, volatile_system=frozenset())) == 2
    draft = Draft("anthropic/claude-test", system, (), conversation(*([2] * 40)))
    for limit in (1, 2, 4):
        marked = with_breakpoints(draft, dataclasses.replace(PLACEMENT, max_breakpoints=limit))
        total = sum(s.block.cache_control for s in marked.system) + sum(
            m.message.cache_control for m in marked.messages
        )
        assert total == limit


def test_the_cache_model_reads_the_lookback_from_the_cache_rules() -> None:
    now = SentCall((*FIRST.parts, SentPart("message:2", "m2", 100)), (2, 4), (*FIRST.blocks, 25))

    def verdict(rules: CacheRules):
        previous = Previous(FIRST, T0, None)
        started = T0 + dt.timedelta(seconds=10)
        return judge(previous, now, started_at=started, rules=rules, model="m", facts=lambda: NOTHING)

    assert verdict(RULES).miss_reason == "beyond_lookback"
    assert verdict(dataclasses.replace(RULES, lookback_blocks=25)).miss_reason is None


def test_the_cache_rule_overrides_are_the_configurable_keys_of_cache_rules() -> None:
    names = {f.name for f in dataclasses.fields(CacheRules)}
    assert set(CacheRules.CONFIGURABLE) == {"enabled", "ttl_seconds", "minimum_tokens", "minimums"} <= names
    for key in CacheRules.CONFIGURABLE:
        assert load_config({"HANGO_CACHE_RULES": f'{{"anthropic": {{"{key}": null}}}}'}).cache_rules
    for key in names - set(CacheRules.CONFIGURABLE):
        with pytest.raises(ConfigError, match="enabled, minimum_tokens, minimums, ttl_seconds"):
            load_config({"HANGO_CACHE_RULES": f'{{"anthropic": {{"{key}": 1}}}}'})


def test_a_blank_text_is_neither_sent_nor_a_lookback_block() -> None:
    blank, text, result = TextBlock(" \n\t"), TextBlock("hi"), ToolResultBlock("t1", "")
    assert [is_sent(b) for b in (blank, TextBlock(""), text, result)] == [False, False, True, True]
    message = Message("user", (blank, text, result))
    assert CacheRules.blocks_of(message) == sent_blocks(message) == 2
    wired = wire_body(Request("claude-test", messages=(message,)))["messages"][0]["content"]
    assert [b["type"] for b in wired] == ["text", "tool_result"]
