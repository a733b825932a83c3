"""The tool catalog of the search-quality test and benchmark: 300 tools on 10 MCP servers, and queries.

``tests/data/tool_catalog/catalog.json`` holds the tools as their servers list them;
``queries.json`` the 50 queries of the quality figure, each written as a user would
ask, with the tool names (``<server>__<tool>``) that answer it; ``held_out_queries.json``
20 more, written after the ranker's words were chosen (and looked at once when its synonyms grew).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from hango.tool_search import SearchableTool, ToolIndex

CATALOG = Path(__file__).resolve().parent.parent / "data" / "tool_catalog"


@dataclass(frozen=True)
class Query:
    """A query and the tools that answer it."""

    text: str
    expected: frozenset[str]


@dataclass(frozen=True)
class Quality:
    """How often the expected tool came first, and in the top 5, over a set of queries."""

    queries: int
    top1: int
    top5: int
    misses: tuple[str, ...]

    def rates(self) -> str:
        return f"top-5 {self.top5}/{self.queries}, top-1 {self.top1}/{self.queries}"


def catalog_tools() -> tuple[SearchableTool, ...]:
    """The catalog's 300 tools, named as the model knows them (``<server>__<tool>``)."""
    tools = json.loads((CATALOG / "catalog.json").read_text())["tools"]
    return tuple(
        SearchableTool.of(
            f"{t['server']}__{t['name']}",
            t["description"],
            t["input_schema"],
            part=f"tool:{t['server']}/{t['name']}",
            server=t["server"],
        )
        for t in tools
    )


def queries(name: str = "queries") -> tuple[Query, ...]:
    """The queries of ``<name>.json``."""
    rows = json.loads((CATALOG / f"{name}.json").read_text())["queries"]
    return tuple(Query(row["query"], frozenset(row["expected"])) for row in rows)


def quality(index: ToolIndex, asked: tuple[Query, ...]) -> Quality:
    """Search each query (top 5) and count where its expected tools came."""
    top1 = top5 = 0
    misses = []
    for query in asked:
        names = [found.tool.name for found in index.search(query.text, 5)]
        top1 += bool(names) and names[0] in query.expected
        hit = bool(query.expected.intersection(names))
        top5 += hit
        if not hit:
            misses.append(f"{query.text!r}: {names}")
    return Quality(len(asked), top1, top5, tuple(misses))
