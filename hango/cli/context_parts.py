"""Part ids on the client side: ranges and override-set edits, from what the server returned.

The server owns every rule: which route a part is overridden on (each part's
``target``), which parts go together (``paired_with``, the whole pair group),
validation (of unknown parts too) and the pair closure. These helpers only read
those fields and build the explicit set a command sends. Companions (``paired_from`` set) are never
sent back: the server recomputes them from the explicit overrides.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from hango.cli.client import UsageError
from hango.seqs import message_seq

GROUPS = ("system", "tools", "messages")
ROUTES = ("session", "agent")
_RANGE = re.compile(r"^message:(\d+)\.\.(\d+)$")


def by_id(snapshot: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Every part of an inspect response (stale ones included), by id, in order, then the part of each
    MCP server (``tool:<server>/*``, from ``tool_groups``) on the route of its tools."""
    parts = {p["id"]: p for group in GROUPS for p in snapshot[group]}
    for source in snapshot.get("tool_groups") or []:
        tools = [p for p in snapshot["tools"] if p.get("server") == source["server"]]
        if source["part"] is not None and source["part"] not in parts and tools:
            parts[source["part"]] = {"id": source["part"], "target": tools[0]["target"], "paired_with": []}
    return parts


def known_parts(snapshot: dict[str, Any]) -> list[str]:
    """Every part id of an inspect response, stale ones included, in order."""
    return list(by_id(snapshot))


def by_route(snapshot: dict[str, Any], parts: list[str]) -> list[tuple[str, list[str]]]:
    """``parts`` split by the route the server names for each (``target``), leaving out an empty one.

    A part the inspect response does not hold has no ``target``: it goes on the
    session's route, which sees the whole next request, for the server to judge
    (``unknown_part``). The session's route comes first: it is the one that
    refuses parts and history, so a refusal there leaves the agent's set untouched.
    """
    known = by_id(snapshot)
    split = {route: [p for p in parts if p in known and known[p]["target"] == route] for route in ROUTES}
    split["session"] += unknown_parts(snapshot, parts)
    return [(route, split[route]) for route in ROUTES if split[route]]


def unknown_parts(snapshot: dict[str, Any], parts: Iterable[str]) -> list[str]:
    """The ``parts`` that the inspect response does not hold (the server says why)."""
    known = by_id(snapshot)
    return [p for p in parts if p not in known]


def with_pairs(parts: Iterable[str], snapshot: dict[str, Any]) -> list[str]:
    """``parts`` and every part the server says goes with them (``paired_with``), in part order."""
    known = by_id(snapshot)
    wanted = set(parts)
    together = wanted | {other for p in wanted for other in known.get(p, {}).get("paired_with", ())}
    return [p for p in known if p in together] + [p for p in parts if p not in known]


def expand(specs: Iterable[str], known: list[str]) -> list[str]:
    """Part ids with ``message:A..B`` (inclusive) replaced by the session's messages in that range,
    in the order the server lists the parts (``message:2`` before ``message:10``), unknown ones last."""
    parts: list[str] = []
    for spec in specs:
        parts += _range(spec, known) if spec.startswith("message:") and ".." in spec else [spec]
    wanted = set(parts)
    return [p for p in known if p in wanted] + [p for p in dict.fromkeys(parts) if p not in set(known)]


def _range(spec: str, known: list[str]) -> list[str]:
    match = _RANGE.match(spec)
    if match is None:
        raise UsageError(f"{spec!r} is not a range: write message:FIRST..LAST, e.g. message:3..9")
    first, last = int(match[1]), int(match[2])
    if first > last:
        raise UsageError(f"{spec} is empty: the first seq must not be above the last")
    inside = [p for p in known if first <= (message_seq(p) or -1) <= last]
    if not inside:
        raise UsageError(f"{spec} names no message of this session's next request")
    return inside


class StoredSet:
    """One route's stored override set, as ``GET`` returns it."""

    def __init__(self, items: list[dict[str, Any]]) -> None:
        self.items = items

    def parts(self) -> set[str]:
        """Every overridden part, companions included."""
        return {o["part"] for o in self.items}

    def excludes(self, parts: Iterable[str]) -> bool:
        """Whether every one of ``parts`` is already excluded."""
        excluded = {o["part"] for o in self.items if o["action"] == "exclude"}
        return set(parts) <= excluded

    def explicit(self, dropping: Iterable[str] = ()) -> list[dict[str, Any]]:
        """The overrides the user chose (no companions), minus those on ``dropping``."""
        dropped = set(dropping)
        return [
            {"part": o["part"], "action": o["action"], "replacement": o.get("replacement")}
            for o in self.items
            if o.get("paired_from") is None and o["part"] not in dropped
        ]

    def with_excluded(self, parts: list[str]) -> StoredSet:
        """This set with ``parts`` excluded (an exclude takes the place of a replace)."""
        added = [{"part": p, "action": "exclude", "replacement": None} for p in parts]
        return StoredSet(self.explicit(parts) + added)

    def with_replaced(self, part: str, text: str) -> StoredSet:
        """This set with ``part`` replaced by ``text``."""
        return StoredSet([*self.explicit([part]), {"part": part, "action": "replace", "replacement": text}])

    def without(self, parts: Iterable[str]) -> StoredSet:
        """This set with no override on ``parts``."""
        return StoredSet(self.explicit(parts))

    def body(self) -> dict[str, Any]:
        """The ``PUT`` body."""
        return {"overrides": self.explicit()}
