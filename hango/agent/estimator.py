"""The harness Estimator: a fast, additive token estimate for each part of a request.

The estimate needs no tokenizer. It encodes the text as UTF-8, marks byte
classes with ``bytes.translate`` tables and counts marked patterns with
``bytes.count`` (and runs with integer bit operations, see ``_runs``): each
step is a C loop over the bytes, so the cost is O(len)
with no per-token Python work (about 50-70 MB/s on one core; 10,000 messages
of 1.3 KB take under 0.3 s). The estimate is a weighted sum of these counts:

* a run of ASCII letters is about one token (a word with its leading space),
  plus a little for every full six letters (long and rare words split) and
  for every lower-to-upper case change (``getUserName`` splits at the humps);
* a run of digits is a token and a third (long numbers, ids and hashes split);
* a run of ASCII punctuation is about a token (``{"``, ``":``, ``),``), plus a
  little per character and per four characters (``=======``);
* a newline (with the indentation after it) and a tab are a token each; other
  spaces ride on the next word and cost nothing;
* a non-ASCII character costs by its UTF-8 lead byte: two-byte letters
  (accents, Cyrillic, Greek, Arabic) under a token; CJK, kana, Hangul and
  Indic a token and a quarter; U+1000-U+1FFF, mostly Vietnamese letters such
  as ``ờ`` and ``ữ`` that the BPE splits into byte pieces, about two and a
  half; U+2000-U+2FFF (typographic punctuation, arrows, dingbats) a token
  and a third; four-byte characters (emoji) almost three.

The weights were fitted by non-negative least squares on relative error against
the Claude BPE that ``anthropic-tokenizer`` 0.1.0 embeds, rounded, and scaled
up about 4 % so that the estimate errs high rather than overflow a context
window. Measured by ``scripts/bench/estimator.py`` (mean signed / mean
absolute error per category, full table in ``docs/estimator.md``): English
prose +6.0/6.0 %, Python code +7.5/7.5 %, JSON tool schemas +4.5/4.5 %, tool
results +3.6/3.6 %, Vietnamese +4.7/4.7 %, emoji-heavy +3.4/3.9 %, mixed
+4.6/4.6 %, held-out stdlib source +4.0/5.4 % and docstrings +5.7/5.7 %.
Single parts can be off by 25 % (ASCII-art tables, a lone emoji). Current
Claude models use a newer tokenizer that is not public, so treat the figures
as relative; where the provider counts tokens, the inspector uses its count
for the request total.

Additivity: ``estimate_request`` is exactly the sum of the estimates of the
request's system blocks, tools and messages. Per-part framing (a message's
role header, a tool-use block's id and name) is folded into each part; the
provider's fixed per-request preamble (a few hundred tokens when tools are
present) belongs to no part and is not counted.

Memo: messages are immutable (frozen, and nothing changes a tool call's input
after it is made), and one request estimates the same history several times
(the summarization trigger, the inspect parts and totals, the usage record; a
run re-estimates its history every turn). ``estimate_message`` therefore
remembers each message's estimate on the message itself for as long as it
lives (``MessageMemo``), so a history is estimated once per request.

Stored estimates: a message's estimate is also stored with the message
(``messages.tokens``), stamped with ``ESTIMATOR_VERSION``. The loader hands a
current one to the memo (``remember_message``), so a history read from the
database is not estimated at all; an estimate of another version is ignored and
the message estimated again. Any change that alters an estimate (a weight, a
counted feature, the framing) must bump ``ESTIMATOR_VERSION``:
``tests/agent/test_estimator.py`` pins a fingerprint of the estimates per version.
"""

from __future__ import annotations

import itertools
import json
import math
import string
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from hango.messages import (
    Block,
    ContentBlock,
    Message,
    Request,
    ServerToolBlock,
    TextBlock,
    ToolDef,
    ToolUseBlock,
    is_sent,
)


def _byte_table(classes: Iterable[tuple[Iterable[int], bytes]], default: bytes) -> bytes:
    """A ``bytes.translate`` table: each listed byte to its class letter, the rest to ``default``."""
    table = bytearray(default * 256)
    for members, letter in classes:
        for byte in members:
            table[byte] = letter[0]
    return bytes(table)


def _marks(chars: str) -> bytes:
    """A table marking the ASCII ``chars`` as byte 1 and every other byte as byte 0."""
    return _byte_table([(chars.encode("ascii"), b"\x01")], default=b"\x00")


_LETTERS = _marks(string.ascii_letters)
_DIGITS = _marks(string.digits)
_PUNCTUATION = _marks(string.punctuation)
_CASE = _byte_table(
    [(string.ascii_lowercase.encode("ascii"), b"a"), (string.ascii_uppercase.encode("ascii"), b"A")], b" "
)
# Non-ASCII characters are classed by their UTF-8 lead byte; continuation bytes are not counted.
_LEAD_BYTES = _byte_table(
    [
        (range(0xC0, 0xE0), b"2"),
        (range(0xE0, 0xF0), b"3"),
        (b"\xe1", b"v"),
        (b"\xe2", b"s"),
        (range(0xF0, 0xF8), b"4"),
    ],
    default=b" ",
)


_MARK, _FOUR_MARKS, _SIX_MARKS = b"\x01", b"\x01" * 4, b"\x01" * 6


def _runs(raw: bytes, table: bytes) -> tuple[int, bytes]:
    """How many maximal runs of the bytes ``table`` marks ``raw`` holds, and the marked bytes.

    Read as one little-endian integer ``m`` (one byte per input byte, 1 when
    marked), a run starts at each marked byte whose previous byte is not, so the
    runs are the set bits of ``m & ~(m << 8)``. These integer operations are C
    loops over machine words; ``bytes.count(b"\\x00\\x01")`` took 1.1 to 2 times
    as long on the benchmark's histories, most where marks are rare (digits).
    """
    marked = raw.translate(table)
    m = int.from_bytes(marked, "little")
    return (m & ~(m << 8)).bit_count(), marked


@dataclass(frozen=True)
class Weights:
    """Tokens per counted feature and per-part framing; the defaults are the fitted values."""

    # Per counted feature of a text (see the module docstring).
    letter_run: float = 1.05
    letter_six: float = 0.10
    camel_hump: float = 0.55
    digit_run: float = 1.35
    punct_run: float = 0.95
    punct_char: float = 0.06
    punct_four: float = 0.05
    newline: float = 1.05
    tab: float = 0.90
    two_byte: float = 0.75
    three_byte: float = 1.25
    u1000_block: float = 2.45
    u2000_block: float = 1.30
    four_byte: float = 2.85
    # Per-part framing, folded into each part so that a request's estimate stays additive.
    system_block: int = 2
    tool: int = 8
    message: int = 4
    text_block: int = 1
    tool_use_block: int = 8
    tool_result_block: int = 8
    error_flag: int = 3


class MessageMemo:
    """Values computed from immutable request values (messages, tool definitions), kept on each.

    A value sits in an attribute of the object named for this memo
    (one name per memo, so estimators of other weights never share values), not
    in a field: equality, ``repr`` and ``dataclasses.replace`` ignore it, so a
    changed message (always a new object) is computed anew, and the value goes
    with its message. An identity map with weak references did the same at ten
    times the cost per message (``docs/performance.md``).
    """

    _names = itertools.count()

    def __init__(self) -> None:
        self._name = f"_memo_{next(self._names)}"

    def put(self, obj: object, value: Any) -> None:
        """Remember ``value`` for ``obj`` (known already, e.g. stored with it)."""
        object.__setattr__(obj, self._name, value)  # past a frozen dataclass's __setattr__

    def get(self, obj: object, compute: Callable[[Any], Any]) -> Any:
        """``compute(obj)``, computed once per object."""
        value = getattr(obj, self._name, None)
        if value is None:
            value = compute(obj)
            object.__setattr__(obj, self._name, value)
        return value

    def each(self, objs: Iterable[object], compute: Callable[[Any], Any]) -> list[Any]:
        """``get(obj, compute)`` of each of ``objs``, in one loop (a request's tools are many)."""
        name = self._name
        return [
            value if (value := getattr(obj, name, None)) is not None else self.get(obj, compute)
            for obj in objs
        ]

    def total(self, objs: Iterable[object], compute: Callable[[Any], Any]) -> Any:
        """The sum of ``get(obj, compute)`` over ``objs``, in one loop (a request's history is long)."""
        name, total = self._name, 0
        for obj in objs:
            value = getattr(obj, name, None)
            total += value if value is not None else self.get(obj, compute)
        return total


@dataclass(frozen=True)
class Estimator:
    """Token estimates for texts and request parts, additive over a request's parts."""

    weights: Weights = field(default_factory=Weights)
    memo: MessageMemo = field(default_factory=MessageMemo, compare=False, repr=False)

    def estimate_text(self, text: str) -> int:
        """Estimated tokens of ``text``: 0 when empty, else at least 1."""
        if not text:
            return 0
        raw = text.encode("utf-8", "surrogatepass")
        tokens = self._ascii_tokens(raw)
        if not text.isascii():
            tokens += self._non_ascii_tokens(raw.translate(_LEAD_BYTES))
        return max(1, math.ceil(tokens))

    def _ascii_tokens(self, raw: bytes) -> float:
        w = self.weights
        letter_runs, letters = _runs(raw, _LETTERS)
        digit_runs, _ = _runs(raw, _DIGITS)
        punct_runs, punct = _runs(raw, _PUNCTUATION)
        return (
            w.letter_run * letter_runs
            + w.letter_six * letters.count(_SIX_MARKS)
            + w.camel_hump * raw.translate(_CASE).count(b"aA")
            + w.digit_run * digit_runs
            + w.punct_run * punct_runs
            + w.punct_char * punct.count(_MARK)
            + w.punct_four * punct.count(_FOUR_MARKS)
            + w.newline * raw.count(b"\n")
            + w.tab * raw.count(b"\t")
        )

    def _non_ascii_tokens(self, leads: bytes) -> float:
        w = self.weights
        return (
            w.two_byte * leads.count(b"2")
            + w.three_byte * leads.count(b"3")
            + w.u1000_block * leads.count(b"v")
            + w.u2000_block * leads.count(b"s")
            + w.four_byte * leads.count(b"4")
        )

    def _estimate_json(self, value: object) -> int:
        return self.estimate_text(json.dumps(value, ensure_ascii=False))

    def estimate_block(self, block: Block) -> int:
        """Estimated tokens of one system block (remembered per block)."""
        return self.memo.get(block, self._estimate_block)

    def _estimate_block(self, block: Block) -> int:
        return self.weights.system_block + self.estimate_text(block.text)

    def estimate_tool(self, tool: ToolDef) -> int:
        """Estimated tokens of one tool definition, as the JSON the provider receives (remembered per tool)."""
        return self.memo.get(tool, self._estimate_tool)

    def _estimate_tool(self, tool: ToolDef) -> int:
        definition = {"name": tool.name, "description": tool.description, "input_schema": tool.input_schema}
        return self.weights.tool + self._estimate_json(definition)

    def estimate_content(self, block: ContentBlock) -> int:
        """Estimated tokens of one message content block, with its framing."""
        w = self.weights
        if isinstance(block, TextBlock):
            return w.text_block + self.estimate_text(block.text)
        if isinstance(block, ToolUseBlock):
            named = self.estimate_text(block.id) + self.estimate_text(block.name)
            return w.tool_use_block + named + self._estimate_json(block.input)
        if isinstance(block, ServerToolBlock):
            return w.tool_use_block + self._estimate_json(block.data)
        framing = w.tool_result_block + (w.error_flag if block.is_error else 0)
        return framing + self.estimate_text(block.tool_use_id) + self.estimate_text(block.content)

    def estimate_message(self, message: Message) -> int:
        """Estimated tokens of one message: its role header and its content blocks (remembered per message)."""
        return self.memo.get(message, self._estimate_message)

    def _estimate_message(self, message: Message) -> int:
        # a blank text is not sent (``is_sent``, the adapters' rule): it costs nothing
        return self.weights.message + sum(self.estimate_content(b) for b in message.content if is_sent(b))

    def estimate_messages(self, messages: Iterable[Message]) -> int:
        """The sum of ``estimate_message`` over ``messages``, in one loop."""
        return self.memo.total(messages, self._estimate_message)

    def estimate_request(self, request: Request) -> int:
        """Estimated input tokens of a request: exactly the sum of its parts' estimates."""
        return (
            sum(self.estimate_block(b) for b in request.system)
            + self.memo.total(request.tools, self._estimate_tool)
            + self.estimate_messages(request.messages)
        )


# The version of ``DEFAULT_ESTIMATOR``'s estimates, stored with each message's estimate. Bump it with
# any change that alters an estimate: stored estimates of an older version are then estimated again.
ESTIMATOR_VERSION = 2
DEFAULT_ESTIMATOR = Estimator()
remember_message = DEFAULT_ESTIMATOR.memo.put
estimate_text = DEFAULT_ESTIMATOR.estimate_text
estimate_block = DEFAULT_ESTIMATOR.estimate_block
estimate_tool = DEFAULT_ESTIMATOR.estimate_tool
estimate_content = DEFAULT_ESTIMATOR.estimate_content
estimate_message = DEFAULT_ESTIMATOR.estimate_message
estimate_messages = DEFAULT_ESTIMATOR.estimate_messages
estimate_request = DEFAULT_ESTIMATOR.estimate_request
