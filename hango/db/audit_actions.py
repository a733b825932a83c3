"""How a migration changes the closed set of audit actions: by its delta, read against the database.

The ``audit_log_action_check`` constraint lists the actions; a migration names
only the actions it adds (or, going down, removes), and the constraint is
rebuilt from what the database holds now, so no migration repeats the list.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import sqlalchemy as sa

CONSTRAINT = "audit_log_action_check"


def current_actions(conn: sa.Connection) -> list[str]:
    """The actions the audit log's check constraint allows now, in their order."""
    definition = conn.execute(
        sa.text("select pg_get_constraintdef(oid) from pg_constraint where conname = :name"),
        {"name": CONSTRAINT},
    ).scalar_one()
    return re.findall(r"'([^']+)'", definition)


def change_actions(conn: sa.Connection, add: Iterable[str] = (), remove: Iterable[str] = ()) -> None:
    """Allow ``add`` and forbid ``remove`` (its audit rows are deleted first)."""
    gone = list(remove)
    actions = [a for a in current_actions(conn) if a not in gone]
    actions += [a for a in add if a not in actions]
    if gone:
        conn.execute(sa.text("delete from audit_log where action = any(:gone)"), {"gone": gone})
    listed = ", ".join(f"'{a}'" for a in actions)
    conn.execute(sa.text(f"alter table audit_log drop constraint {CONSTRAINT}"))
    conn.execute(sa.text(f"alter table audit_log add constraint {CONSTRAINT} check (action in ({listed}))"))
