"""The one rule for the text of every file path hango stores: memory files, skills and session files.

A path is kept in Unicode NFC, so the composed and the decomposed ``café.md`` name
one file. Control characters (Cc), invisible format characters (Cf: zero-width
spaces and joiners, bidi embeddings, overrides and isolates, the BOM, tags) and lone
surrogates (Cs) are refused: they make two paths that read the same, or a path that
reads differently from what it is.
"""

from __future__ import annotations

import functools
import unicodedata

MAX_PATH_CHARS = 500
REFUSED_CATEGORIES = {"Cc": "control", "Cf": "invisible format", "Cs": "surrogate"}


class PathRefused(ValueError):
    """A path that cannot name a file; the message says why."""


def path_text(raw: str) -> str:
    """``raw`` in NFC; raises ``PathRefused`` when it holds a refused character or is too long."""
    path = unicodedata.normalize("NFC", raw)
    if len(path) > MAX_PATH_CHARS:
        raise PathRefused(f"a path has at most {MAX_PATH_CHARS} characters")
    for char in path:
        kind = REFUSED_CATEGORIES.get(unicodedata.category(char))
        if kind:
            raise PathRefused(f"a path has no {kind} characters (found U+{ord(char):04X})")
    return path


def _escape(code: int) -> str:
    # An astral character stands as itself: ECMA-262 (``u`` flag), Python and Rust read it alike,
    # while each spells an astral escape differently.
    return f"\\u{code:04X}" if code <= 0xFFFF else chr(code)


@functools.cache
def refused_class() -> str:
    """The refused characters as the body of a regular expression's character class: ``\\u0000-\\u001F...``.

    Built from this Python's Unicode database, the one ``path_text`` reads, so the document and the
    rule agree character for character.
    """
    ranges: list[list[int]] = []
    for code in range(0x110000):
        # Surrogates are left out: no regular expression engine but Python's can name them, and a
        # string holding one is no Unicode text (``hango.api`` refuses it in any request).
        if unicodedata.category(chr(code)) in ("Cc", "Cf"):
            if ranges and ranges[-1][1] == code - 1:
                ranges[-1][1] = code
            else:
                ranges.append([code, code])
    return "".join(_escape(a) if a == b else f"{_escape(a)}-{_escape(b)}" for a, b in ranges)


def segments_pattern(max_chars: int) -> dict[str, object]:
    """The OpenAPI schema of a relative path of segments (none empty, ``.`` or ``..``, leading ``/`` allowed)
    made of allowed characters, at most ``max_chars`` long: the text of a memory path parameter.

    The segments are the pattern, the refused characters a ``not``: one pattern holding both reads the
    same, but generators take ten times as long to build strings from it.
    """
    # A segment holds a character that is not a dot, or is three dots or more: never `.` or `..`.
    segment = "(?:\\.*[^./][^/]*|\\.{3,})"
    return {
        "type": "string",
        "minLength": 1,
        "maxLength": max_chars,
        "pattern": f"^/*{segment}(?:/{segment})*$",
        "not": {"pattern": f"[{refused_class()}]"},
    }
