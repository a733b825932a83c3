"""A cache verdict may be ``beyond_lookback``: the previous call's cached prefix is out of every breakpoint's reach.

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-01

Anthropic looks for a cached prefix at most 20 blocks before each breakpoint
(``hango/agent/ledger/verdict.py``); a call whose breakpoints all sit further
from the previous call's cached prefix reads less, for a reason of its own.
The check on ``model_calls.miss_reason`` gains the value; the downgrade clears
it from the rows that carry it (they read as no verdict reason) before the old
check comes back. (Numbered 0010: another branch may add 0009; merged after it,
this revision revises 0009.)
"""

from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None

OLD_REASONS = ("prefix_changed", "expired", "below_minimum", "first_call", "unexplained")
NEW_REASONS = (*OLD_REASONS, "beyond_lookback")


def _check(reasons: tuple[str, ...]) -> None:
    listed = ", ".join(f"'{r}'" for r in reasons)
    op.execute("alter table model_calls drop constraint if exists model_calls_miss_reason_check")
    op.execute(
        f"alter table model_calls add constraint model_calls_miss_reason_check check (miss_reason in ({listed}))"
    )


def upgrade() -> None:
    _check(NEW_REASONS)


def downgrade() -> None:
    op.execute("update model_calls set miss_reason = null where miss_reason = 'beyond_lookback'")
    _check(OLD_REASONS)
