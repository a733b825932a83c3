"""Count the SQL statements an engine runs: the deterministic cost bound of a request."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import sqlalchemy as sa

# An inspect's statements, whatever the session's length: the key, the session (reaping its dead runs),
# agent, summary, history, tenant, skills, memory, the agent's MCP servers, the overrides, the last call
# with its calibration and the run's lineage (every provider with a cache, the offline one simulating its
# reference model's), and the transaction's own statements.
MAX_INSPECT_STATEMENTS = 13


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


@contextlib.contextmanager
def count_rows(engine: sa.Engine) -> Iterator[list[tuple[str, int]]]:
    """Collect each statement ``engine`` executes inside the block with its row count.

    For a ``SELECT`` that is the rows it read (psycopg2 fetches a result whole); for an
    ``INSERT``, ``UPDATE`` or ``DELETE`` the rows it wrote.
    """
    counted: list[tuple[str, int]] = []

    def record(_conn, cursor, statement, _params, _context, _many) -> None:
        counted.append((statement, cursor.rowcount))

    sa.event.listen(engine, "after_cursor_execute", record)
    try:
        yield counted
    finally:
        sa.event.remove(engine, "after_cursor_execute", record)
