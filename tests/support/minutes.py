"""Per-minute windows (rate limits, failure counts) seen from the database's clock."""

from __future__ import annotations

import time

import sqlalchemy as sa


def wait_for_fresh_minute(engine: sa.Engine, needed: float) -> None:
    """Sleep past the minute boundary when fewer than ``needed`` seconds are left in this one."""
    with engine.connect() as conn:
        left = conn.execute(sa.text("select 60 - extract(second from now())")).scalar_one()
    if left < needed:
        time.sleep(float(left) + 0.2)
