"""The one rule for the text of every file path hango stores: memory files, skills and session files.

A path is kept in Unicode NFC, so the composed and the decomposed ``café.md`` name
one file. Control characters (Cc), invisible format characters (Cf: zero-width
spaces and joiners, bidi embeddings, overrides and isolates, the BOM, tags) and lone
surrogates (Cs) are refused: they make two paths that read the same, or a path that
reads differently from what it is.
"""

from __future__ import annotations

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
