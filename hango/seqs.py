"""Message seqs in part ids (``message:<seq>``): the one seq parser.

The server's part-id grammar (``hango/agent/parts.py``) and the CLI, which loads no server
module, both read a seq here: a canonical decimal above 0 and below 2**31 (PostgreSQL's integer).
"""

from __future__ import annotations

MESSAGE = "message"  # the kind of a stored message's part id


def parse_seq(text: str) -> int | None:
    """The seq ``text`` spells (a canonical decimal below 2**31, above 0), or None."""
    if not (text.isascii() and text.isdigit()) or text != str(int(text)) or not 0 < int(text) < 2**31:
        return None
    return int(text)


def message_seq(part: str) -> int | None:
    """The seq of a well-formed ``message:<seq>`` part; None for any other part."""
    kind, _, rest = part.partition(":")
    return parse_seq(rest) if kind == MESSAGE else None
