"""Count the SQL statements an engine runs: the deterministic cost bound of a request."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import sqlalchemy as sa


@contextlib.contextmanager
def count_statements(engine: sa.Engine) -> Iterator[list[str]]:
    """Collect the SQL text of every statement ``engine`` executes inside the block."""
    statements: list[str] = []

    def record(_conn, _cursor, statement, _params, _context, _many) -> None:
        statements.append(statement)

    sa.event.listen(engine, "before_cursor_execute", record)
    try:
        yield statements
    finally:
        sa.event.remove(engine, "before_cursor_execute", record)
