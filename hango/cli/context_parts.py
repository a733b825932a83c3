"""Part ids on the client side: ranges, which route a part belongs to, pairing, and override-set edits.

The server owns validation and the tool pair closure; these helpers only build
the explicit set a command sends. Companions (``paired_from`` set) are never
sent back: the server recomputes them from the explicit overrides.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from hango.cli.client import UsageError

AGENT_KINDS = ("system", "tool")
GROUPS = ("system", "tools", "messages")
_RANGE = re.compile(r"^message:(\d+)\.\.(\d+)$")


def route_of(part: str) -> str:
    """``agent`` for system and tool parts, ``session`` for the rest (the server rejects malformed ids)."""
    return "agent" if part.partition(":")[0] in AGENT_KINDS else "session"


def by_route(parts: list[str]) -> list[tuple[str, list[str]]]:
    """``parts`` split by override route (agent first), leaving out a route with none."""
    split = [(route, [p for p in parts if route_of(p) == route]) for route in ("agent", "session")]
    return [(route, chosen) for route, chosen in split if chosen]


def known_parts(snapshot: dict[str, Any]) -> list[str]:
    """Every part id of an inspect response, stale ones included, in order."""
    return [p["id"] for group in GROUPS for p in snapshot[group]]


def expand(specs: Iterable[str], known: list[str]) -> list[str]:
    """Part ids with ``message:A..B`` (inclusive) replaced by the session's messages in that range."""
    parts: list[str] = []
    for spec in specs:
        parts += _range(spec, known) if spec.startswith("message:") and ".." in spec else [spec]
    return list(dict.fromkeys(parts))


def _range(spec: str, known: list[str]) -> list[str]:
    match = _RANGE.match(spec)
    if match is None:
        raise UsageError(f"{spec!r} is not a range: write message:FIRST..LAST, e.g. message:3..9")
    first, last = int(match[1]), int(match[2])
    if first > last:
        raise UsageError(f"{spec} is empty: the first seq must not be above the last")
    inside = [p for p in known if first <= _seq(p) <= last]
    if not inside:
        raise UsageError(f"{spec} names no message of this session's next request")
    return inside


def _seq(part: str) -> int:
    """The seq of a ``message:<seq>`` part; -1 (in no range) for any other part."""
    rest = part.removeprefix("message:")
    return int(rest) if part != rest and rest.isascii() and rest.isdigit() else -1


class Overrides:
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

    def with_excluded(self, parts: list[str]) -> Overrides:
        """This set with ``parts`` excluded (an exclude takes the place of a replace)."""
        added = [{"part": p, "action": "exclude", "replacement": None} for p in parts]
        return Overrides(self.explicit(parts) + added)

    def with_replaced(self, part: str, text: str) -> Overrides:
        """This set with ``part`` replaced by ``text``."""
        return Overrides([*self.explicit([part]), {"part": part, "action": "replace", "replacement": text}])

    def without(self, parts: Iterable[str]) -> Overrides:
        """This set with no override on ``parts``."""
        return Overrides(self.explicit(parts))

    def body(self) -> dict[str, Any]:
        """The ``PUT`` body."""
        return {"overrides": self.explicit()}


def pairing(snapshot: dict[str, Any]) -> dict[str, list[str]]:
    """Which parts are sent or left out together: each part's tool pair companions."""
    return {p["id"]: p["paired_with"] for group in GROUPS for p in snapshot[group]}


def closure(parts: Iterable[str], links: dict[str, list[str]]) -> set[str]:
    """``parts`` and every part linked to them, transitively."""
    queue = list(parts)
    seen = set(queue)
    while queue:
        for other in links.get(queue.pop(), ()):
            if other not in seen:
                seen.add(other)
                queue.append(other)
    return seen
