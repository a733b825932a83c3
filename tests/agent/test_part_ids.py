"""A part id's seq is read by one parser: the grammar, ``message_seq`` and ``seq_of`` agree."""

from __future__ import annotations

import pytest

from hango.agent.parts import MalformedPart, kind_of, message_seq, scratch_part, seq_of

SPELLINGS = ["1", "10", "2147483647", "2147483648", "0", "007", "-1", "+1", "1e3", "١", " 1", ""]


def _accepted(part: str) -> bool:
    try:
        kind_of(part)
    except MalformedPart:
        return False
    return True


@pytest.mark.parametrize("spelling", SPELLINGS)
def test_the_grammar_message_seq_and_seq_of_read_a_seq_the_same_way(spelling: str) -> None:
    part = f"message:{spelling}"
    seq = message_seq(part)
    assert (seq is not None) == _accepted(part)
    if seq is None:
        with pytest.raises(MalformedPart):
            seq_of(part)
    else:
        assert seq_of(part) == seq == int(spelling)
        assert seq_of(scratch_part("0badf00d", seq)) == seq
