"""Human output of the client commands: short aligned tables and field lists."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

MAX_CELL = 48


def cell(value: Any, limit: int | None = MAX_CELL) -> str:
    """One value as a single line, cut to ``limit`` characters (None: never cut)."""
    if value is None:
        return "-"
    if isinstance(value, list | tuple):
        value = ",".join(map(str, value))
    text = " ".join(str(value).split())
    return text if limit is None or len(text) <= limit else text[: limit - 1] + "…"


def print_table(rows: Sequence[dict[str, Any]], columns: Sequence[tuple[str, str]]) -> None:
    """Rows under upper-case headings, columns padded to their widest cell."""
    cells = [[heading.upper() for heading, _ in columns]]
    cells += [[cell(row.get(key)) for _, key in columns] for row in rows]
    widths = [max(len(line[i]) for line in cells) for i in range(len(columns))]
    for line in cells:
        print("  ".join(text.ljust(width) for text, width in zip(line, widths, strict=True)).rstrip())


def print_page(page: dict[str, Any], columns: Sequence[tuple[str, str]], more_flag: str = "--cursor") -> None:
    """A page of a list as a table, and how to ask for the next page when there is one."""
    print_table(page["items"], columns)
    if page.get("next_cursor") is not None:
        print(f"(more: {more_flag} {page['next_cursor']})")


def print_fields(obj: dict[str, Any], names: Sequence[str]) -> None:
    """Selected fields of one object, one ``name  value`` line each."""
    width = max(map(len, names))
    for name in names:
        print(f"{name.ljust(width)}  {cell(obj.get(name), limit=None)}")
