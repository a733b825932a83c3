"""Verdicts and first differences in plain words: the one sentence the panel and the CLI both show."""

from __future__ import annotations

import pytest

from hango.agent.ledger.causes import CAUSES
from hango.inspector.verdict_words import cause_words, verdict_words


def cache(reason=None, expected=0, reported=0, part=None, cause=None) -> dict:
    return {
        "expected_read_tokens": expected,
        "reported_read_tokens": reported,
        "miss_reason": reason,
        "miss_part": part,
        "miss_cause": cause,
    }


@pytest.mark.parametrize(
    ("figures", "badge", "words"),
    [
        (cache(), "none", "no cache read expected"),
        (cache(expected=2048, reported=2048), "hit", "read 2,048 cached tokens as expected"),
        (cache("first_call"), "first", "nothing was cached yet: the first call of its lineage"),
        (cache("expired"), "miss", "missed: the cache had expired since the previous call"),
        (
            cache("prefix_changed", 2048, 0, "system:memory:/memories/AGENTS.md", "memory_file_edited"),
            "miss",
            "missed: a memory file was edited at system:memory:/memories/AGENTS.md",
        ),
        (
            cache("unexplained", 4096, 1024),
            "miss",
            "missed: the provider read less from the cache than the prefix allowed",
        ),
    ],
    ids=["no cache", "hit", "first call", "expired", "prefix changed", "unexplained"],
)
def test_a_verdict_reads_as_a_badge_and_its_cause_in_plain_words(figures, badge, words):
    assert verdict_words(figures) == {"badge": badge, "words": words}


def test_every_diff_cause_has_its_words():
    assert [cause_words("tool:grep", cause).endswith(" at tool:grep") for cause in CAUSES] == [True] * len(
        CAUSES
    )
    assert all(not cause_words("tool:grep", cause).startswith(cause) for cause in CAUSES)
