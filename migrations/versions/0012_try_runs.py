"""A run may be of kind ``try``: a whole turn on a scratch copy of the session (issue 27).

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-01

The check on ``runs.kind`` gains the value. The downgrade deletes the try runs (their
events go with them; their usage rows stay, as every usage row does) before the old
check comes back.
"""

from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None

OLD_KINDS = ("message", "compact")
NEW_KINDS = (*OLD_KINDS, "try")


def _check(kinds: tuple[str, ...]) -> None:
    listed = ", ".join(f"'{k}'" for k in kinds)
    op.execute("alter table runs drop constraint if exists runs_kind_check")
    op.execute(f"alter table runs add constraint runs_kind_check check (kind in ({listed}))")


def upgrade() -> None:
    _check(NEW_KINDS)


def downgrade() -> None:
    op.execute("delete from runs where kind = 'try'")
    _check(OLD_KINDS)
