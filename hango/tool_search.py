"""Ranking deferred tools for ``tool_search``: which of the tools not sent fit a query best.

A tool's words are its name (split on ``_ - . /`` and camelCase), its MCP server's
name, its description and its parameter names (top-level and one level down); the
name's words count ``NAME_WEIGHT`` times, since a name says what a tool does in the
fewest words. A query's words go through the same ``words``: lower case, camelCase
split, stop words dropped, and a small suffix stripper so "listing", "lists" and
"list" meet. A query word also finds, counting ``ALIKE_WEIGHT`` of itself, the other
words of its group in ``SYNONYMS`` ("meeting" finds "event") and the catalog's longer
words it begins ("check" finds "checksum"). Tools are ranked by BM25 (``bm25s``) over
those words, ties broken by name, so the same catalog and query give the same answer.

The regex rule, in ``regex_of`` alone: a query containing one of ``REGEX_CHARS``
(a ``?`` ending it does not count: it ends a question) that RE2 compiles within
hango's program-size bound is a regular expression. It matches case-insensitively
against each tool's name, description and parameter names; matches are ordered by
where they matched (name, then description, then a parameter), then by name. A
query that does not compile, or whose regex matches no tool, is searched as words.

An index is built once per distinct catalog and kept per process (``ToolIndex.of``,
the last ``CACHED_INDEXES`` catalogs), so a run's repeated searches reuse it.
"""

from __future__ import annotations

import bisect
import hashlib
import json
import re
import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import bm25s

from hango.agent.tools.base import ToolFailure
from hango.agent.tools.search import SEARCH_BUDGET, compile_pattern

MAX_QUERY_CHARS = 500
MAX_LIMIT = 20
CACHED_INDEXES = 64
NAME_WEIGHT = 3
ALIKE_WEIGHT = 0.7  # a synonym or longer form of a query word counts less than the word itself
MIN_PREFIX = 4  # a query word this long also finds the catalog's words it begins
REGEX_CHARS = frozenset("^$*+?[](){}|\\")

_TOKEN = re.compile(r"[A-Za-z0-9]+")
_CAMEL = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
_UNDOUBLE = frozenset("bdgmnprt")
# words that say nothing about what a tool does; the catalog's words go through the same list
_STOP = """a about all an and any are as at be been but by can could did do does for from had has have
    how i if in into is it its me my of on or our please should so some than that the their them
    then there these this those to up us was we were what when where which who whom why will with
    would you your"""
STOP_WORDS = frozenset(_STOP.split())
# how people ask for a tool's action or object in other words than catalogs use: a query word
# also searches for its group's other words (after stemming; the catalog's words are not expanded)
SYNONYMS = (
    "meeting event appointment agenda",
    "ticket issue",
    "find search look lookup",
    "remove delete cancel stop",
    "change edit modify update",
    "send post ping tell notify",
    "big biggest large largest size space",
    "money pay payment charge",
    "show list get view",
    "copies copy replica replicas instance",
    "history changelog changes",
    "reply respond answer",
    "access permission privilege grant share",
    "today now upcoming next",
)


class BadSearch(ValueError):
    """A query or limit ``tool_search`` refuses; the message says what it accepts."""


@dataclass(frozen=True)
class SearchableTool:
    """A tool as search sees it: the name the model calls, its part id, its server, what it says it does."""

    name: str
    part: str
    server: str | None
    description: str
    parameters: tuple[str, ...] = ()

    @classmethod
    def of(
        cls,
        name: str,
        description: str,
        input_schema: Mapping[str, Any],
        *,
        part: str,
        server: str | None = None,
    ) -> SearchableTool:
        """The searchable tool of a definition, its parameter names read from ``input_schema``."""
        return cls(name, part, server, description or "", parameter_names(input_schema))


@dataclass(frozen=True)
class Found:
    """One tool a search found, and its score (higher is better; comparable within one search only)."""

    tool: SearchableTool
    score: float


def parameter_names(schema: Mapping[str, Any]) -> tuple[str, ...]:
    """The property names of a JSON schema and of its object (or array-of-object) properties, in order."""
    names: list[str] = []
    for name, prop in _properties(schema).items():
        names.append(name)
        if isinstance(prop, Mapping):
            items = prop.get("items")
            names.extend(_properties(prop))
            names.extend(_properties(items) if isinstance(items, Mapping) else ())
    return tuple(dict.fromkeys(names))


def _properties(schema: Mapping[str, Any]) -> Mapping[str, Any]:
    props = schema.get("properties")
    return props if isinstance(props, Mapping) else {}


def words(text: str) -> list[str]:
    """The search words of ``text``: lower case, camelCase and ``_ - . /`` split, stemmed, no stop words."""
    out = []
    for token in _TOKEN.findall(text):
        if len(token) < 2:  # the s of "what's", a stray letter
            continue
        parts = _CAMEL.findall(token)
        for piece in [token, *parts] if len(parts) > 1 else [token]:
            word = piece.lower()
            if word not in STOP_WORDS:
                out.append(stem(word))
    return out


def stem(word: str) -> str:
    """``word`` less a plural or verb ending, so "lists", "listing" and "listed" all give "list"."""
    if len(word) <= 3 or word.isdigit():
        return word
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    for ending in ("ing", "ed"):
        if word.endswith(ending) and len(word) - len(ending) >= 3:
            word = word[: -len(ending)]
            if len(word) > 3 and word[-1] == word[-2] and word[-1] in _UNDOUBLE:
                word = word[:-1]
            return word.rstrip("e") if len(word) > 3 else word
    if word.endswith("er") and len(word) >= 7:
        return word[:-2]
    if word.endswith(("sses", "shes", "ches", "xes", "zes")):
        return word[:-2]
    if word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    return word[:-1] if word.endswith("e") and len(word) > 3 else word


def regex_of(query: str) -> Any | None:
    """The query as a case-insensitive RE2 regex when it is one (the module's regex rule), else None."""
    if not REGEX_CHARS.intersection(query.rstrip("?")):
        return None
    try:
        return compile_pattern("(?i)" + query)
    except ToolFailure:  # not RE2 syntax, or past hango's program-size bound: the query is words
        return None


def checked(query: str, limit: int) -> str:
    """``query`` stripped, or ``BadSearch`` when it or ``limit`` is out of bounds."""
    if not isinstance(query, str) or not query.strip():
        raise BadSearch("the query is empty: give a few words saying what the tool should do, or a regex")
    if len(query) > MAX_QUERY_CHARS:
        raise BadSearch(f"the query has {len(query)} characters; at most {MAX_QUERY_CHARS}")
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise BadSearch(f"limit must be a whole number from 1 to {MAX_LIMIT}, not {limit!r}")
    return query.strip()


class ToolIndex:
    """The search index of one catalog of tools; build it with ``ToolIndex.of`` so it is reused."""

    def __init__(self, tools: Iterable[SearchableTool]) -> None:
        self.tools = tuple(sorted(tools, key=lambda t: (t.name, t.part)))
        self._bm25 = bm25s.BM25()
        corpus = [_document(tool) or [""] for tool in self.tools]
        if corpus:
            self._bm25.index(corpus, show_progress=False)
        self._words = sorted({w for document in corpus for w in document if w})

    @classmethod
    def of(cls, tools: Iterable[SearchableTool]) -> ToolIndex:
        """The index of ``tools``: the one this process built for the same catalog, or a new one."""
        tools = tuple(tools)
        key = catalog_key(tools)
        with _LOCK:
            index = _INDEXES.get(key)
            if index is not None:
                _INDEXES.move_to_end(key)
                return index
        index = cls(tools)  # built outside the lock: two first searches may both build, one is kept
        with _LOCK:
            index = _INDEXES.setdefault(key, index)
            _INDEXES.move_to_end(key)
            while len(_INDEXES) > CACHED_INDEXES:
                _INDEXES.popitem(last=False)
        return index

    def search(self, query: str, limit: int = 5) -> tuple[Found, ...]:
        """The ``limit`` tools that fit ``query`` best, best first (a regex query per the regex rule)."""
        query = checked(query, limit)
        regex = regex_of(query)
        found = self._matches(regex) if regex is not None else ()
        return (found or self._ranked(query))[:limit]

    def _ranked(self, query: str) -> tuple[Found, ...]:
        vocabulary = getattr(self._bm25, "vocab_dict", {})
        asked = words(query)
        alike = {w for word in asked for w in (*_ALIKE.get(word, ()), *self._longer(word))} - set(asked)
        ids = sorted({vocabulary[w] for w in asked if w in vocabulary})
        alike_ids = sorted({vocabulary[w] for w in alike if w in vocabulary})
        if not ids and not alike_ids:
            return ()
        scores = self._scores(ids) + ALIKE_WEIGHT * self._scores(alike_ids)
        scores = scores.tolist()
        hits = [i for i, score in enumerate(scores) if score > 0]
        # self.tools is in name order, so the index breaks a tie by name
        hits.sort(key=lambda i: (-scores[i], i))
        return tuple(Found(self.tools[i], scores[i]) for i in hits)

    def _longer(self, word: str) -> list[str]:
        """The catalog's words that start with ``word`` (a query's "check" finds "checksum")."""
        if len(word) < MIN_PREFIX:
            return []
        start = bisect.bisect_left(self._words, word)
        end = bisect.bisect_left(self._words, word + "\uffff", start)
        return self._words[start:end]

    def _scores(self, ids: list[int]) -> Any:
        return self._bm25.get_scores_from_ids(ids) if ids else 0.0

    def _matches(self, regex: Any) -> tuple[Found, ...]:
        cut = SEARCH_BUDGET // max(1, regex.programsize)  # RE2's worst case stays bounded per text
        found = []
        for tool in self.tools:
            fields = (tool.name, tool.description, *tool.parameters)
            where = next((n for n, text in enumerate(fields) if regex.search(text[:cut])), None)
            if where is not None:
                found.append(Found(tool, float(3 - min(where, 2))))
        return tuple(sorted(found, key=lambda f: -f.score))  # stable: name order within a field


def _document(tool: SearchableTool) -> list[str]:
    own = tool.name.removeprefix(f"{tool.server}__") if tool.server else tool.name
    name = words(own)
    parameters = [w for p in tool.parameters for w in words(p)]
    return name * NAME_WEIGHT + words(tool.server or "") + words(tool.description) + parameters


def catalog_key(tools: Iterable[SearchableTool]) -> str:
    """A digest of a catalog, the same whatever the tools' order."""
    rows = sorted((t.name, t.part, t.server, t.description, t.parameters) for t in tools)
    return hashlib.sha256(json.dumps(rows).encode()).hexdigest()


_ALIKE = {
    word: group
    for group in (tuple(dict.fromkeys(stem(w) for w in line.split())) for line in SYNONYMS)
    for word in group
}
_LOCK = threading.Lock()
_INDEXES: OrderedDict[str, ToolIndex] = OrderedDict()
